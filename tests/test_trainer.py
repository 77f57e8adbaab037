"""StepByStep: the book's API, plus seeds, resuming, safe checkpoints, errors, schedulers, clipping, hooks."""
import copy
import io
import os
import pickle
import sys
import zipfile
from collections import namedtuple
from fractions import Fraction

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from stepbystep import StepByStep, set_seed


def _data(n=64, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=generator)  # (n, 3)
    y = x.sum(dim=1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=generator)  # (n, 1)
    return TensorDataset(x, y)


def _model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.2), nn.ReLU(), nn.Linear(8, 1))


def _trainer(seed=0, own_generator=True, optimizer="sgd"):
    """A trainer whose loader shuffles (with its own generator or the global one) and whose
    model has dropout, so every random stream the trainer must control is in use."""
    model = _model(seed)
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
    generator = torch.Generator() if own_generator else None
    train_loader = DataLoader(_data(), batch_size=16, shuffle=True, generator=generator)
    val_loader = DataLoader(_data(32, seed=1), batch_size=16)
    sbs = StepByStep(model, nn.MSELoss(), opt)
    sbs.set_loaders(train_loader, val_loader)
    return sbs


# ----------------------------------------------------------------------------- basics
def test_train_records_one_loss_per_epoch_and_learns():
    sbs = _trainer()
    sbs.train(5, progress=False)
    assert len(sbs.losses) == len(sbs.val_losses) == sbs.total_epochs == 5
    assert sbs.losses[-1] < sbs.losses[0] / 2
    assert len(sbs.learning_rates) == 5 * 4  # 64 samples / 16 per batch, every step recorded
    assert not sbs.model.training  # left in eval mode


def test_device_defaults_to_the_best_available_and_to_moves_the_model():
    sbs = _trainer()
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert sbs.device.type == expected
    sbs.to("meta")
    assert sbs.device == torch.device("meta")
    assert all(p.device.type == "meta" for p in sbs.model.parameters())
    with pytest.raises(ValueError, match="device must be like"):
        sbs.to("gpu-please")


def test_every_tensor_of_a_batch_reaches_the_model_tuples_and_dicts_included():
    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 1)

        def forward(self, features, offset):
            assert features.device == offset.device == self.linear.weight.device
            return self.linear(features) + offset

    x, y = torch.randn(8, 3), torch.randn(8, 1)
    model = TwoInputs()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    tuple_batches = [((x, torch.zeros(8, 1)), y)]
    dict_batches = [({"features": x, "offset": torch.zeros(8, 1)}, y)]
    for batches in (tuple_batches, dict_batches):
        sbs.set_loaders(batches)
        sbs.train(1, progress=False)
    assert sbs.total_epochs == 2
    assert sbs.predict({"features": x, "offset": torch.ones(8, 1)}).shape == (8, 1)


def test_count_parameters_counts_trainable_ones_only():
    sbs = _trainer()
    assert sbs.count_parameters() == (3 * 8 + 8) + (8 * 1 + 1)
    sbs.model[0].weight.requires_grad_(False)
    assert sbs.count_parameters() == 8 + 9


def test_plot_losses_returns_a_figure_with_both_curves():
    sbs = _trainer()
    with pytest.raises(ValueError, match="train the model first"):
        sbs.plot_losses()
    sbs.train(3, progress=False)
    fig = sbs.plot_losses()
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["training loss", "validation loss"]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), sbs.losses)
    assert ax.get_xlabel() == "epoch" and ax.get_ylabel() == "loss"


# ----------------------------------------------------------------------------- progress
def test_progress_bar_shows_the_latest_losses_and_can_be_turned_off(capsys):
    sbs = _trainer()
    sbs.train(2)
    shown = capsys.readouterr().err
    assert "2/2" in shown and f"loss={sbs.losses[-1]:.4f}" in shown and f"val_loss={sbs.val_losses[-1]:.4f}" in shown
    sbs.train(2, progress=False)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


# ----------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("own_generator", [True, False])
def test_train_in_two_calls_repeats_one_call_exactly(own_generator):
    one = _trainer(own_generator=own_generator)
    one.train(4, progress=False)
    two = _trainer(own_generator=own_generator)
    two.train(2, progress=False)
    torch.randn(10), np.random.rand(3)  # other random work in between must not matter
    two.train(2, progress=False)
    assert two.losses == one.losses
    assert two.val_losses == one.val_losses


def test_first_call_seeds_with_42_and_an_explicit_seed_reseeds():
    default = _trainer()
    default.train(2, progress=False)
    explicit = _trainer()
    explicit.train(2, seed=42, progress=False)
    assert explicit.losses == default.losses
    other = _trainer()
    other.train(2, seed=7, progress=False)
    assert other.losses != default.losses
    again = _trainer()
    again.set_seed(7)
    again.train(2, progress=False)
    assert again.losses == other.losses


def test_set_seed_seeds_every_generator():
    set_seed(3)
    first = (torch.rand(2), np.random.rand(2), __import__("random").random())
    set_seed(3)
    second = (torch.rand(2), np.random.rand(2), __import__("random").random())
    assert torch.equal(first[0], second[0]) and np.array_equal(first[1], second[1]) and first[2] == second[2]
    with pytest.raises(ValueError, match="non-negative int"):
        set_seed(-1)


# ----------------------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("own_generator", [True, False])
def test_resume_from_a_checkpoint_reproduces_an_uninterrupted_run(tmp_path, own_generator):
    uninterrupted = _trainer(own_generator=own_generator, optimizer="adam")
    uninterrupted.train(4, progress=False)

    first = _trainer(own_generator=own_generator, optimizer="adam")
    first.train(2, progress=False)
    first.save_checkpoint(tmp_path / "run.pt")

    torch.manual_seed(1234)  # a new session: different global state, different initial weights
    resumed = _trainer(seed=99, own_generator=own_generator, optimizer="adam")
    resumed.load_checkpoint(tmp_path / "run.pt")
    assert resumed.total_epochs == 2
    resumed.train(2, progress=False)
    assert resumed.losses + resumed.val_losses == uninterrupted.losses + uninterrupted.val_losses
    assert resumed.learning_rates == uninterrupted.learning_rates


def test_checkpoint_keeps_the_scheduler_state(tmp_path):
    def with_scheduler():
        sbs = _trainer()
        sbs.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(sbs.optimizer, step_size=1, gamma=0.5))
        return sbs

    uninterrupted = with_scheduler()
    uninterrupted.train(3, progress=False)
    first = with_scheduler()
    first.train(1, progress=False)
    first.save_checkpoint(tmp_path / "run.pt")
    resumed = with_scheduler()
    resumed.load_checkpoint(tmp_path / "run.pt")
    resumed.train(2, progress=False)
    assert resumed.learning_rates == uninterrupted.learning_rates
    assert resumed.losses == uninterrupted.losses
    with pytest.raises(ValueError, match="set_lr_scheduler"):
        _trainer().load_checkpoint(tmp_path / "run.pt")


def test_checkpoint_loads_onto_the_trainers_device(tmp_path, monkeypatch):
    sbs = _trainer()
    sbs.train(1, progress=False)
    sbs.save_checkpoint(tmp_path / "run.pt")
    seen = {}
    original_load = torch.load

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return original_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    _trainer().load_checkpoint(tmp_path / "run.pt")
    assert seen["weights_only"] is True
    assert seen["map_location"] == sbs.device


def test_a_checkpoint_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "evil.pt"
    with open(path, "wb") as file:
        pickle.dump({"model_state_dict": Payload()}, file, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        _trainer().load_checkpoint(path)
    assert not marker.exists()


def test_missing_checkpoint_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        _trainer().load_checkpoint(tmp_path / "nothing.pt")


def test_a_crash_while_saving_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    sbs = _trainer()
    sbs.train(1, progress=False)
    path = tmp_path / "run.pt"
    sbs.save_checkpoint(path)
    good = path.read_bytes()
    sbs.train(1, progress=False)

    def crash_midway(obj, file, *args, **kwargs):
        file.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crash_midway)
    with pytest.raises(OSError, match="disk full"):
        sbs.save_checkpoint(path)
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["run.pt"]  # no temporary file left behind


# ----------------------------------------------------------------------------- predict
def test_predict_keeps_the_mode_and_the_dtype_and_needs_no_grad():
    class Lookup(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(10, 2)
            self.modes = []

        def forward(self, ids):
            self.modes.append((self.training, torch.is_grad_enabled(), ids.dtype))
            return self.embedding(ids)

    model = Lookup()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    ids = torch.tensor([[1, 2, 3]])
    out = sbs.predict(ids)
    assert isinstance(out, np.ndarray) and out.shape == (1, 3, 2)
    assert model.modes[-1] == (False, False, torch.int64)
    assert model.training  # a training model goes back to training
    model.eval()
    sbs.predict(ids.numpy())
    assert model.modes[-1] == (False, False, torch.int64) and not model.training


def test_predict_turns_numpy_floats_into_the_default_dtype():
    sbs = _trainer()
    out = sbs.predict(np.ones((2, 3)))  # float64 NumPy, float32 model
    assert out.shape == (2, 1) and out.dtype == np.float32


# ----------------------------------------------------------------------------- errors
def test_train_before_set_loaders_names_set_loaders():
    model = _model()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(RuntimeError, match="set_loaders"):
        sbs.train(1)


@pytest.mark.parametrize("n_epochs, error", [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_bad_epoch_counts_are_rejected(n_epochs, error):
    with pytest.raises(error, match="n_epochs must be a positive int"):
        _trainer().train(n_epochs)


def test_constructor_checks_its_arguments():
    model = _model()
    with pytest.raises(TypeError, match="nn.Module"):
        StepByStep(lambda x: x, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        StepByStep(model, nn.MSELoss(), "adam")
    with pytest.raises(ValueError, match="not parameters of this model"):
        StepByStep(model, nn.MSELoss(), torch.optim.SGD(_model(1).parameters(), lr=0.1))


def test_batches_must_be_pairs():
    sbs = _trainer()
    sbs.set_loaders([torch.randn(4, 3)])
    with pytest.raises(TypeError, match=r"\(x, y\) batches"):
        sbs.train(1, progress=False)


def test_a_scheduler_on_another_optimizer_is_rejected():
    sbs = _trainer()
    other = torch.optim.SGD(sbs.model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="another optimizer"):
        sbs.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(other, step_size=1))


def test_nan_loss_stops_with_epoch_and_batch_and_keeps_the_history():
    sbs = _trainer()
    sbs.train(2, progress=False)
    weights_before = [p.detach().clone() for p in sbs.model.parameters()]
    calls = {"n": 0}
    mse = nn.MSELoss()

    def poisoned(prediction, y):
        calls["n"] += 1
        loss = mse(prediction, y)
        return loss * float("nan") if calls["n"] == 8 else loss  # epoch 3: 4 + 2 calls, then epoch 4

    sbs.loss_fn = poisoned
    with pytest.raises(FloatingPointError, match=r"nan at epoch 4, batch 2"):
        sbs.train(3, progress=False)
    assert sbs.total_epochs == 3 and len(sbs.losses) == len(sbs.val_losses) == 3
    assert any(not torch.equal(a, b) for a, b in zip(weights_before, sbs.model.parameters()))
    assert all(torch.isfinite(p).all() for p in sbs.model.parameters())  # the bad step never ran


def test_ctrl_c_stops_cleanly_and_keeps_completed_epochs(capsys):
    sbs = _trainer()
    calls = {"n": 0}
    mse = nn.MSELoss()

    def interrupted(prediction, y):
        calls["n"] += 1
        if calls["n"] == 14:  # batch 2 of epoch 3 (4 training + 2 validation calls an epoch)
            raise KeyboardInterrupt
        return mse(prediction, y)

    sbs.loss_fn = interrupted
    sbs.train(5, progress=False)
    assert sbs.total_epochs == 2 and len(sbs.losses) == len(sbs.val_losses) == 2
    assert "interrupted" in capsys.readouterr().out
    sbs.loss_fn = mse
    sbs.train(1, progress=False)  # and training can go on
    assert sbs.total_epochs == 3


def test_tensorboard_missing_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(ImportError, match="pip install tensorboard"):
        _trainer().set_tensorboard("run")


# ----------------------------------------------------------------------------- schedulers
def test_epoch_scheduler_steps_once_per_epoch_and_rates_are_recorded_per_step():
    sbs = _trainer()
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(sbs.optimizer, step_size=1, gamma=0.5))
    assert sbs.scheduler_interval == "epoch"
    sbs.train(3, progress=False)
    assert sbs.learning_rates == [0.05] * 4 + [0.025] * 4 + [0.0125] * 4


def test_batch_scheduler_steps_after_every_step():
    sbs = _trainer()
    warmup = torch.optim.lr_scheduler.LinearLR(sbs.optimizer, start_factor=0.25, total_iters=3)
    sbs.set_lr_scheduler(warmup, interval="batch")
    sbs.train(2, progress=False)
    np.testing.assert_allclose(sbs.learning_rates[:5], [0.0125, 0.025, 0.0375, 0.05, 0.05])


def test_one_cycle_steps_per_batch_by_default():
    sbs = _trainer()
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.OneCycleLR(sbs.optimizer, max_lr=0.1, total_steps=8))
    assert sbs.scheduler_interval == "batch"
    sbs.train(2, progress=False)
    assert len(set(sbs.learning_rates)) == 8


def test_reduce_on_plateau_follows_the_validation_loss():
    sbs = _trainer()
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(sbs.optimizer, patience=0, factor=0.5)
    sbs.set_lr_scheduler(plateau)
    seen = []
    original_step = plateau.step
    plateau.step = lambda metric: (seen.append(metric), original_step(metric))
    sbs.train(3, progress=False)
    assert seen == sbs.val_losses
    with pytest.raises(ValueError, match="interval='epoch'"):
        sbs.set_lr_scheduler(plateau, interval="batch")
    sbs.set_loaders(sbs.train_loader)  # no validation loader any more
    with pytest.raises(ValueError, match="val_loader"):
        sbs.train(1)


# ----------------------------------------------------------------------------- clipping
def _one_step_update(sbs, x, y):
    """Run one SGD(lr=1) step and return how much each parameter moved (= the applied gradient)."""
    before = [p.detach().clone() for p in sbs.model.parameters()]
    sbs.set_loaders([(x, y)])
    sbs.train(1, progress=False)
    return [b - p.detach() for b, p in zip(before, sbs.model.parameters())]


def _raw_gradients(model, x, y):
    model.zero_grad()
    nn.MSELoss()(model(x), y).backward()
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("clips", [["value"], ["norm"], ["value", "norm"], ["norm", "value"]])
def test_clipping_setters_combine_in_any_order_and_can_be_removed(clips):
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = 10 * torch.randn(8, 3), torch.randn(8, 2)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=1.0))
    for clip in clips:
        if clip == "value":
            sbs.set_clip_grad_value(0.5)
        else:
            sbs.set_clip_grad_norm(1.0)
    expected = _raw_gradients(model, x, y)
    if "value" in clips:
        expected = [g.clamp(-0.5, 0.5) for g in expected]
    if "norm" in clips:
        total = torch.sqrt(sum((g**2).sum() for g in expected))
        expected = [g * min(1.0, 1.0 / (total.item() + 1e-6)) for g in expected]
    for moved, grad in zip(_one_step_update(sbs, x, y), expected):
        torch.testing.assert_close(moved, grad)
    sbs.remove_clip()
    raw = _raw_gradients(model, x, y)
    for moved, grad in zip(_one_step_update(sbs, x, y), raw):
        torch.testing.assert_close(moved, grad)


def test_clip_grad_norm_accepts_the_infinity_norm():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = 10 * torch.randn(8, 3), torch.randn(8, 2)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=1.0), device="cpu")
    sbs.set_clip_grad_norm(0.5, norm_type=float("inf"))
    raw = _raw_gradients(model, x, y)
    largest = max(g.abs().max().item() for g in raw)
    for moved, grad in zip(_one_step_update(sbs, x, y), raw):
        torch.testing.assert_close(moved, grad * 0.5 / (largest + 1e-6))


def test_clip_values_must_be_positive():
    sbs = _trainer()
    with pytest.raises(ValueError, match="clip_value must be a positive number"):
        sbs.set_clip_grad_value(0)
    with pytest.raises(ValueError, match="max_norm"):
        sbs.set_clip_grad_norm(-1.0)


# ----------------------------------------------------------------------------- hooks and loader_apply
class _TupleLayer(nn.Module):
    """A layer that returns a tuple, like nn.MultiheadAttention's (output, weights)."""

    def forward(self, x):
        return x * 2, None


class _WithTuple(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.pair = _TupleLayer()

    def forward(self, x):
        doubled, _ = self.pair(self.linear(x))
        return doubled


def test_hooks_record_outputs_in_eval_mode_including_tuples():
    torch.manual_seed(0)
    model = _WithTuple()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    sbs.attach_hooks(["linear", "pair"])
    x1, x2 = torch.randn(4, 3), torch.randn(2, 3)
    sbs.predict(x1)
    sbs.predict(x2)
    expected = model.linear(torch.cat([x1, x2])).detach().numpy()
    np.testing.assert_allclose(sbs.visualization["linear"], expected, rtol=1e-6)
    doubled, nothing = sbs.visualization["pair"]
    np.testing.assert_allclose(doubled, 2 * expected, rtol=1e-6)
    assert nothing is None
    sbs.remove_hooks()
    sbs.predict(x1)
    assert sbs.visualization["linear"].shape == (6, 3)  # nothing recorded after removal


def test_hooks_skip_training_passes_and_reject_unknown_layers():
    sbs = _trainer()
    sbs.attach_hooks(["0"])
    sbs.set_loaders(sbs.train_loader)  # no validation: every forward pass is a training one
    sbs.train(1, progress=False)
    assert sbs.visualization["0"] is None
    with pytest.raises(ValueError, match=r"no layer named \['nope'\].*0, 1, 2, 3"):
        sbs.attach_hooks(["nope"])


def test_custom_hook_fn_is_registered():
    sbs = _trainer()
    seen = []
    sbs.attach_hooks(["3"], hook_fn=lambda module, inputs, outputs: seen.append(outputs.shape))
    sbs.predict(torch.randn(5, 3))
    assert seen == [torch.Size([5, 1])]


def test_loader_apply_sums_or_averages_over_batches():
    sbs = _trainer()
    loader = DataLoader(_data(32), batch_size=8)
    counts = sbs.loader_apply(loader, lambda x, y: torch.tensor([len(x), (y > 0).sum()]))
    assert counts[0] == 32 and counts[1] == (_data(32).tensors[1] > 0).sum()
    means = sbs.loader_apply(loader, lambda x, y: torch.tensor(float(len(x))), reduce="mean")
    assert means.item() == 8.0
    with pytest.raises(ValueError, match="reduce must be one of 'sum', 'mean', got 'max'"):
        sbs.loader_apply(loader, lambda x, y: x, reduce="max")


def test_hooks_keep_every_batch_of_layers_returning_containers():
    Pair = namedtuple("Pair", ["doubled", "nothing"])
    wrappers = {"tuple": lambda d: (d, None), "list": lambda d: [d, None],
                "dict": lambda d: {"doubled": d, "nothing": None}, "namedtuple": lambda d: Pair(d, None)}

    class Wrapping(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.wrap = wrappers[kind]

        def forward(self, x):
            return self.wrap(2 * x)

    class Model(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.linear = nn.Linear(3, 3)
            self.wrapping = Wrapping(kind)

        def forward(self, x):
            out = self.wrapping(self.linear(x))
            return out["doubled"] if isinstance(out, dict) else out[0]

    x1, x2 = torch.randn(4, 3), torch.randn(2, 3)
    for kind in wrappers:
        torch.manual_seed(0)
        model = Model(kind)
        sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1), device="cpu")
        sbs.attach_hooks("wrapping")
        sbs.predict(x1)
        sbs.predict(x2)
        recorded = sbs.visualization["wrapping"]
        expected = 2 * model.linear(torch.cat([x1, x2])).detach().numpy()  # (6, 3)
        assert type(recorded) is type(wrappers[kind](None)), kind
        doubled = recorded["doubled"] if kind == "dict" else recorded[0]
        nothing = recorded["nothing"] if kind == "dict" else recorded[1]
        np.testing.assert_allclose(doubled, expected, rtol=1e-6, err_msg=kind)
        assert nothing is None


def test_predict_returns_a_namedtuple_output_as_the_same_namedtuple():
    Output = namedtuple("Output", ["prediction", "weights"])

    class Named(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 2)

        def forward(self, x):
            return Output(self.linear(x), torch.softmax(self.linear(x), dim=-1))

    model = Named()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    out = sbs.predict(torch.randn(5, 3))
    assert type(out) is Output
    assert isinstance(out.prediction, np.ndarray) and out.prediction.shape == out.weights.shape == (5, 2)


# ----------------------------------------------------------------------------- refused checkpoints
def _trainer_state(sbs):
    return {
        "model": {k: v.clone() for k, v in sbs.model.state_dict().items()},
        "optimizer": copy.deepcopy(sbs.optimizer.state_dict()),
        "histories": (list(sbs.losses), list(sbs.val_losses), list(sbs.learning_rates)),
        "epochs": sbs.total_epochs,
    }


def _assert_same_state(before, after):
    assert before["model"].keys() == after["model"].keys()
    for key in before["model"]:
        assert torch.equal(before["model"][key], after["model"][key]), key
    assert before["histories"] == after["histories"] and before["epochs"] == after["epochs"]
    old, new = before["optimizer"], after["optimizer"]
    assert old["param_groups"] == new["param_groups"] and old["state"].keys() == new["state"].keys()
    for index, state in old["state"].items():
        for name, value in state.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(new["state"][index][name])), (index, name)


def test_a_checkpoint_refused_for_its_scheduler_leaves_the_trainer_unchanged(tmp_path):
    saved = _trainer(seed=1, optimizer="adam")
    saved.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(saved.optimizer, step_size=1))
    saved.train(2, progress=False)
    saved.save_checkpoint(tmp_path / "run.pt")

    sbs = _trainer(optimizer="adam")  # no scheduler, and a history of its own
    sbs.train(1, progress=False)
    before = _trainer_state(sbs)
    with pytest.raises(ValueError, match="set_lr_scheduler"):
        sbs.load_checkpoint(tmp_path / "run.pt")
    _assert_same_state(before, _trainer_state(sbs))


def test_a_checkpoint_whose_optimizer_does_not_fit_rolls_the_model_back(tmp_path):
    """The model's weights load, then the optimizer's groups do not match: nothing stays half-loaded."""
    saved = _trainer(seed=1, optimizer="adam")
    saved.train(1, progress=False)
    saved.save_checkpoint(tmp_path / "run.pt")

    model = _model()
    two_groups = torch.optim.Adam([{"params": model[0].parameters()}, {"params": model[3].parameters()}], lr=0.01)
    sbs = StepByStep(model, nn.MSELoss(), two_groups)
    sbs.set_loaders(DataLoader(_data(), batch_size=16))
    sbs.train(1, progress=False)
    before = _trainer_state(sbs)
    with pytest.raises(ValueError, match="parameter group"):
        sbs.load_checkpoint(tmp_path / "run.pt")
    _assert_same_state(before, _trainer_state(sbs))


def test_a_file_that_is_not_a_checkpoint_is_refused_before_anything_changes(tmp_path):
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    sbs = _trainer()
    sbs.train(1, progress=False)
    before = _trainer_state(sbs)
    with pytest.raises(ValueError, match=r"not a StepByStep checkpoint: it lacks \['epoch', 'model_state_dict'"):
        sbs.load_checkpoint(tmp_path / "other.pt")
    _assert_same_state(before, _trainer_state(sbs))


# ----------------------------------------------------------------------------- the book's checkpoints
def _book_checkpoint(sbs, val_losses):
    """The dict the book's save_checkpoint writes: NumPy float64 losses, no scheduler, rates or streams."""
    return {
        "epoch": 3,
        "model_state_dict": sbs.model.state_dict(),
        "optimizer_state_dict": sbs.optimizer.state_dict(),
        "loss": [np.float64(0.5), np.float64(0.25), np.float64(0.125)],
        "val_loss": val_losses,
    }


def _as_numpy1_file(path):
    """Rewrite a torch.save file so its pickle names NumPy's scalar reconstructor as NumPy 1 did."""
    source = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    rewritten = io.BytesIO()
    with zipfile.ZipFile(rewritten, "w", zipfile.ZIP_STORED) as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.endswith("data.pkl"):
                assert b"numpy._core.multiarray\nscalar" in data
                data = data.replace(b"numpy._core.multiarray\nscalar", b"numpy.core.multiarray\nscalar")
            target.writestr(item, data)
    path.write_bytes(rewritten.getvalue())


@pytest.mark.parametrize("numpy_names", ["numpy2", "numpy1"])
@pytest.mark.parametrize("val_losses", [[np.float64(0.6), np.float64(0.3), np.float64(0.2)], [None, None, None]],
                         ids=["validated", "without-validation"])
def test_a_checkpoint_written_by_the_books_class_loads_and_training_continues(tmp_path, val_losses, numpy_names):
    book = _trainer(seed=3)
    path = tmp_path / "book.pt"
    torch.save(_book_checkpoint(book, val_losses), path)
    if numpy_names == "numpy1":
        _as_numpy1_file(path)

    sbs = _trainer()
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(sbs.optimizer, step_size=1, gamma=0.5))
    sbs.load_checkpoint(path)
    assert sbs.total_epochs == 3
    assert sbs.losses == [0.5, 0.25, 0.125] and all(type(loss) is float for loss in sbs.losses)
    assert sbs.val_losses == ([0.6, 0.3, 0.2] if val_losses[0] is not None else [])
    assert sbs.learning_rates == []
    for loaded, written in zip(sbs.model.parameters(), book.model.parameters()):
        assert torch.equal(loaded, written)
    sbs.train(1, progress=False)
    assert sbs.total_epochs == 4 and len(sbs.losses) == 4 and len(sbs.learning_rates) == 4


def test_numpy_arrays_and_other_objects_are_still_refused(tmp_path):
    sbs = _trainer()
    checkpoint = _book_checkpoint(sbs, [None] * 3)
    checkpoint["loss"] = np.array([0.5, 0.25, 0.125])  # an array, not a scalar
    torch.save(checkpoint, tmp_path / "array.pt")
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        sbs.load_checkpoint(tmp_path / "array.pt")
    checkpoint["loss"] = [Fraction(1, 2)]  # any other class
    torch.save(checkpoint, tmp_path / "object.pt")
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        sbs.load_checkpoint(tmp_path / "object.pt")


# ----------------------------------------------------------------------------- warm restarts
def test_warm_restarts_step_every_batch_with_the_fractional_epoch():
    sbs = _trainer()
    base, eta_min, t_0 = 0.05, 0.001, 2
    restarts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(sbs.optimizer, T_0=t_0, eta_min=eta_min)
    sbs.set_lr_scheduler(restarts)
    assert sbs.scheduler_interval == "batch"
    sbs.train(3, progress=False)
    epochs = np.arange(12) / 4  # 4 batches an epoch: step k starts at epoch k / 4
    expected = eta_min + (base - eta_min) * (1 + np.cos(np.pi * (epochs % t_0) / t_0)) / 2
    np.testing.assert_allclose(sbs.learning_rates, expected, rtol=1e-6)


def test_warm_restarts_can_still_step_once_per_epoch():
    sbs = _trainer()
    restarts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(sbs.optimizer, T_0=2)
    sbs.set_lr_scheduler(restarts, interval="epoch")
    sbs.train(2, progress=False)
    assert sbs.learning_rates[:4] == [0.05] * 4 and len(set(sbs.learning_rates[4:])) == 1


def test_warm_restarts_per_batch_need_a_loader_with_a_length():
    sbs = _trainer()
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(sbs.optimizer, T_0=2))
    sbs.set_loaders(batch for batch in sbs.train_loader)  # a generator has no len()
    with pytest.raises(TypeError, match=r"needs len\(train_loader\)"):
        sbs.train(1, progress=False)
