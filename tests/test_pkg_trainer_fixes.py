"""Trainer fixes: a loaded state is the trainer's own, hooks pair up, bad losses and callback states
are refused where they arise."""
import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from regression_data import sum_dataset
from stepbystep import StepByStep, set_seed
from stepbystep.training import Callback
from stepbystep.training.lr_finder import lr_range_test


def _trainer(seed=0, optimizer="adam"):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.2), nn.ReLU(), nn.Linear(8, 1))
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sbs = StepByStep(model, nn.MSELoss(), opt, device="cpu")
    sbs.set_loaders(DataLoader(sum_dataset(), batch_size=16, shuffle=True, generator=torch.Generator()),
                    DataLoader(sum_dataset(32, seed=1), batch_size=16))
    return sbs


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_a_loaded_state_is_not_shared_with_the_trainer_it_came_from(optimizer):
    a, b = _trainer(optimizer=optimizer), _trainer(seed=1, optimizer=optimizer)
    a.train_steps(3, progress=False)
    state = a.state_dict()
    saved = copy.deepcopy(state["optimizer_state_dict"]["state"])
    b.load_state_dict(state)
    a.train_steps(5, progress=False)  # must leave b's optimizer state alone
    for index, moments in saved.items():
        for name, value in moments.items():
            torch.testing.assert_close(b.optimizer.state_dict()["state"][index][name], value, rtol=0, atol=0)
    b.train_steps(5, progress=False)  # both trained the same 5 steps from the same state
    for pa, pb in zip(a.model.parameters(), b.model.parameters()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)


class _Recorder(Callback):
    def __init__(self, fail_at_start=False):
        self.calls, self.fail_at_start = [], fail_at_start

    def on_train_start(self, trainer):
        self.calls.append("start")
        if self.fail_at_start:
            raise RuntimeError("refused at the start")

    def on_train_end(self, trainer):
        self.calls.append("end")


def test_on_train_end_runs_after_an_on_train_start_that_raises_and_the_streams_stay_unseeded():
    sbs = _trainer()
    failing, watching = _Recorder(fail_at_start=True), _Recorder()
    sbs.add_callback(watching)
    sbs.add_callback(failing)
    with pytest.raises(RuntimeError, match="refused at the start"):
        sbs.train(1, progress=False)
    assert watching.calls == failing.calls == ["start", "end"]
    assert sbs.rng_state is None and sbs.total_steps == 0  # the next call still seeds with 42
    sbs.callbacks.remove(failing)
    sbs.train(1, progress=False)
    fresh = _trainer()
    fresh.train(1, progress=False)
    assert sbs.losses == fresh.losses


def test_a_scheduler_that_needs_validation_still_gets_on_train_end():
    sbs = _trainer()
    sbs.set_loaders(sbs.train_loader)  # no validation loader
    watching = _Recorder()
    sbs.add_callback(watching)
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.ReduceLROnPlateau(sbs.optimizer))
    with pytest.raises(ValueError, match="pass a val_loader"):
        sbs.train(1, progress=False)
    assert watching.calls == ["start", "end"]


@pytest.mark.parametrize("loss_fn, got", [
    (lambda p, y: nn.functional.mse_loss(p, y).item(), r"got float .*return the tensor"),
    (lambda p, y: (p - y) ** 2, r"got a tensor of shape \(16, 1\)"),
    (lambda p, y: None, "got NoneType"),
])
def test_a_loss_fn_that_returns_no_scalar_tensor_is_named_before_any_step(loss_fn, got):
    sbs = _trainer()
    sbs.loss_fn = loss_fn
    before = [p.detach().clone() for p in sbs.model.parameters()]
    with pytest.raises(TypeError, match="loss_fn must return a scalar tensor.*" + got):
        sbs.train_steps(1, progress=False)
    assert sbs.total_steps == 0 and all(torch.equal(a, b) for a, b in zip(before, sbs.model.parameters()))


def test_batch_loss_and_step_are_one_training_step():
    a, b = _trainer(), _trainer()
    a.train_steps(1, seed=3, progress=False)
    set_seed(3, b.train_loader)
    b.model.train()
    b.step(b.batch_loss(next(iter(b.train_loader))))
    for pa, pb in zip(a.model.parameters(), b.model.parameters()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)


def test_the_lr_range_test_checks_the_batch_dtype_as_training_does():
    sbs = _trainer()
    batches = [(x.double(), y.double()) for x, y in sbs.train_loader]
    with pytest.raises(TypeError, match="float64"):
        lr_range_test(sbs, batches, end_lr=1.0, num_iter=3)
    sbs.loss_fn = lambda p, y: nn.functional.mse_loss(p, y).item()
    with pytest.raises(TypeError, match="loss_fn must return a scalar tensor"):
        lr_range_test(sbs, sbs.train_loader, end_lr=1.0, num_iter=3)


class _Stateful(Callback):
    def __init__(self, state):
        self.state = state

    def state_dict(self):
        return self.state

    def load_state_dict(self, state):
        self.state = state


@pytest.mark.parametrize("state, named", [
    ({"best": np.array([1.0, 2.0])}, r"_Stateful.state_dict\(\)\['best'\] is a numpy.ndarray"),
    ({"history": [1.0, {"seen": {3}}]}, r"\['history'\]\[1\]\['seen'\] is a builtins.set"),
    ({"f": float}, r"\['f'\] is a builtins.type"),
    (None, "_Stateful's state_dict must return a dict, got NoneType"),
])
def test_a_callback_state_that_could_not_be_loaded_is_refused_when_saved(state, named, tmp_path):
    sbs = _trainer()
    sbs.add_callback(_Stateful(state))
    with pytest.raises(TypeError, match=named):
        sbs.save_checkpoint(tmp_path / "run.pth")
    assert not (tmp_path / "run.pth").exists()


def test_a_callback_state_of_tensors_numbers_strings_and_containers_round_trips(tmp_path):
    state = {"best": torch.tensor([1.0]), "count": 3, "name": "x", "rates": [0.1, None, (True, "a")],
             "device": torch.device("cpu"), "dtype": torch.float32}
    sbs = _trainer()
    sbs.add_callback(_Stateful(state))
    sbs.train_steps(2, progress=False)
    sbs.save_checkpoint(tmp_path / "run.pth")
    other = _trainer()
    other.add_callback(_Stateful({}))
    other.load_checkpoint(tmp_path / "run.pth")
    assert other.callbacks[-1].state["rates"] == [0.1, None, (True, "a")]
    assert torch.equal(other.callbacks[-1].state["best"], state["best"])
