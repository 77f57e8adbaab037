"""evaluating(model): eval mode and no gradients inside, every submodule's mode restored after."""
import pytest
import torch
from torch import nn

from stepbystep import evaluating


def _model():
    return nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.BatchNorm1d(2))


def test_inside_the_model_evaluates_without_gradients():
    model = _model()
    with evaluating(model) as same:
        assert same is model
        assert not any(module.training for module in model.modules())
        assert not torch.is_grad_enabled()
        output = model(torch.randn(4, 2))
    assert not output.requires_grad
    assert torch.is_grad_enabled()
    output.add_(1)  # an ordinary tensor, unlike an inference-mode one


def test_each_submodule_gets_back_its_own_mode():
    model = _model()
    model[2].eval()  # a frozen batch norm inside a training model
    with evaluating(model):
        pass
    assert model.training and model[0].training and model[1].training and not model[2].training
    model.eval()
    with evaluating(model):
        pass
    assert not any(module.training for module in model.modules())


def test_the_mode_is_restored_after_an_error():
    model = _model()
    with pytest.raises(RuntimeError, match="boom"):
        with evaluating(model):
            raise RuntimeError("boom")
    assert all(module.training for module in model.modules())


def test_only_modules_are_accepted():
    with pytest.raises(TypeError, match="model must be an nn.Module, got function"):
        with evaluating(lambda x: x):
            pass


def test_torch_threads_sets_the_count_and_restores_it_even_after_an_error():
    from stepbystep.devices import torch_threads
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(1):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="n_threads"):
        with torch_threads(0):
            pass


def test_as_device_gives_the_index_a_tensor_there_reports(monkeypatch):
    from stepbystep.devices import as_device
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert as_device("cuda") == torch.device("cuda", 1) == as_device(torch.device("cuda"))
    assert as_device("cuda:0") == torch.device("cuda", 0)
    assert as_device("mps") == torch.device("mps", 0)
    assert as_device("cpu") == torch.device("cpu") == torch.zeros(1).device


def test_model_dtype_is_the_float_parameters_dtype():
    from stepbystep.devices import model_dtype
    assert model_dtype(nn.Linear(2, 2).double()) == torch.float64
    assert model_dtype(nn.Embedding(3, 2).half()) == torch.float16
    assert model_dtype(nn.ReLU()) is None
    with pytest.raises(TypeError, match="model must be an nn.Module, got str"):
        model_dtype("model")


def test_usable_cores_counts_the_cores_this_process_may_use(monkeypatch):
    import os

    from stepbystep.devices import usable_cores
    assert 1 <= usable_cores() <= (os.cpu_count() or 1)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the environment limits threads, not cores
    assert usable_cores() == (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert usable_cores() == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert usable_cores() == 6
