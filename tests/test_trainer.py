"""The StepByStep core: training, seeds, resuming, safe checkpoints, errors, and the callbacks
that extend the loop (schedulers, clipping, TensorBoard, custom ones)."""
import copy
import os
import pickle
from collections import namedtuple

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from regression_data import sum_dataset
from stepbystep import StepByStep, set_seed
from stepbystep.devices import model_device, move_to
from stepbystep.training import Callback, GradientClipping, LRScheduler, TensorBoard


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
    train_loader = DataLoader(sum_dataset(), batch_size=16, shuffle=True, generator=generator)
    val_loader = DataLoader(sum_dataset(32, seed=1), batch_size=16)
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


# ----------------------------------------------------------------------------- schedulers
def _interval(sbs):
    """When the trainer's scheduler steps: the interval of its LRScheduler callback."""
    (scheduler,) = [callback for callback in sbs.callbacks if isinstance(callback, LRScheduler)]
    return scheduler.interval


def test_epoch_scheduler_steps_once_per_epoch_and_rates_are_recorded_per_step():
    sbs = _trainer()
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(sbs.optimizer, step_size=1, gamma=0.5))
    assert _interval(sbs) == "epoch"
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
    assert _interval(sbs) == "batch"
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
    """Run one SGD(lr=1) step and return how much each parameter moved (= the applied gradient), on the CPU."""
    before = [p.detach().clone() for p in sbs.model.parameters()]
    sbs.set_loaders([(x, y)])
    sbs.train(1, progress=False)
    return [(b - p.detach()).cpu() for b, p in zip(before, sbs.model.parameters())]


def _raw_gradients(model, x, y):
    """The unclipped gradients for the batch, computed where the model lives (the trainer may have
    moved it), on the CPU."""
    x, y = move_to((x, y), model_device(model))
    model.zero_grad()
    nn.MSELoss()(model(x), y).backward()
    return [p.grad.clone().cpu() for p in model.parameters()]


def test_a_clipping_callback_clips_by_value_then_by_norm(device):
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = 10 * torch.randn(8, 3), torch.randn(8, 2)
    clipping = GradientClipping(value=0.5, max_norm=1.0)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=1.0), device=device,
                     callbacks=[clipping])
    expected = [g.clamp(-0.5, 0.5) for g in _raw_gradients(model, x, y)]
    total = torch.sqrt(sum((g**2).sum() for g in expected))
    for moved, grad in zip(_one_step_update(sbs, x, y), expected):
        torch.testing.assert_close(moved, grad * min(1.0, 1.0 / (total.item() + 1e-6)))
    sbs.set_clip_grad_norm(2.0)  # the setter changes the same callback rather than adding one
    assert [c for c in sbs.callbacks if isinstance(c, GradientClipping)] == [clipping] and clipping.max_norm == 2.0
    with pytest.raises(ValueError, match="max_norm must be a positive number"):
        sbs.set_clip_grad_norm(-1.0)


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
    sbs.set_loaders(DataLoader(sum_dataset(), batch_size=16))
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


# ----------------------------------------------------------------------------- warm restarts
def test_warm_restarts_step_every_batch_with_the_fractional_epoch():
    sbs = _trainer()
    base, eta_min, t_0 = 0.05, 0.001, 2
    restarts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(sbs.optimizer, T_0=t_0, eta_min=eta_min)
    sbs.set_lr_scheduler(restarts)
    assert _interval(sbs) == "batch"
    sbs.train(3, progress=False)
    # 4 batches an epoch; after batch i (from 0) of epoch e (from 0) the scheduler steps to e + i / 4,
    # so batch k of the run uses the rate at (k - 1) / 4, and the first two use the initial rate
    epochs = np.maximum(np.arange(12) - 1, 0) / 4
    expected = eta_min + (base - eta_min) * (1 + np.cos(np.pi * (epochs % t_0) / t_0)) / 2
    np.testing.assert_allclose(sbs.learning_rates, expected, rtol=1e-6)


def test_warm_restarts_match_pytorchs_documented_loop_and_the_book():
    """PyTorch's CosineAnnealingWarmRestarts example: ``scheduler.step(epoch + i / iters)`` after batch i."""
    def rates_by_hand(n_epochs):
        model = _model(0)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4)
        loader = DataLoader(sum_dataset(), batch_size=16)
        iters, rates = len(loader), []
        for epoch in range(n_epochs):
            for i, (x, y) in enumerate(loader):
                rates.append(opt.param_groups[0]["lr"])
                opt.zero_grad()
                nn.MSELoss()(model(x), y).backward()
                opt.step()
                scheduler.step(epoch + i / iters)
        return rates

    model = _model(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sbs = StepByStep(model, nn.MSELoss(), opt)
    sbs.set_loaders(DataLoader(sum_dataset(), batch_size=16))
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4))
    sbs.train(5, progress=False)
    by_hand = rates_by_hand(5)
    assert len(sbs.learning_rates) == len(by_hand) == 20
    np.testing.assert_allclose(sbs.learning_rates, by_hand, rtol=1e-12)
    np.testing.assert_allclose(sbs.learning_rates[:3], [0.01, 0.01, 0.009904], atol=5e-7)
    assert sbs.learning_rates[3] == pytest.approx(0.009619, abs=5e-7)


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


# ----------------------------------------------------------------------------- the callback protocol
class _Recorder(Callback):
    """Writes down every hook call with its arguments, and what the model looked like then."""

    def __init__(self):
        self.calls = []

    def on_train_start(self, trainer):
        self.calls.append(("train_start", trainer.total_epochs))

    def on_after_backward(self, trainer):
        grads_ready = all(p.grad is not None for p in trainer.model.parameters())
        self.calls.append(("after_backward", grads_ready, len(trainer.learning_rates)))

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        self.calls.append(("batch_end", epoch, batch_index, loss))

    def on_epoch_end(self, trainer, epoch, loss, val_loss):
        self.calls.append(("epoch_end", epoch, loss, val_loss, trainer.total_epochs))

    def on_train_end(self, trainer):
        self.calls.append(("train_end", trainer.total_epochs, trainer.model.training))


def test_a_callback_sees_every_hook_in_order_with_its_arguments():
    recorder = _Recorder()
    sbs = _trainer()
    sbs.add_callback(recorder)
    batch_losses = []
    mse = nn.MSELoss()

    def recording_loss(prediction, y):
        loss = mse(prediction, y)
        if torch.is_grad_enabled():  # a training batch
            batch_losses.append(loss.item())
        return loss

    sbs.loss_fn = recording_loss
    sbs.train(2, progress=False)
    expected = [("train_start", 0)]
    for epoch in (1, 2):
        for batch in range(1, 5):
            step = 4 * (epoch - 1) + batch
            expected += [("after_backward", True, step), ("batch_end", epoch, batch, batch_losses[step - 1])]
        expected.append(("epoch_end", epoch, sbs.losses[epoch - 1], sbs.val_losses[epoch - 1], epoch))
    expected.append(("train_end", 2, False))
    assert recorder.calls == expected
    assert sbs.losses[0] == pytest.approx(np.mean(batch_losses[:4]))


def test_callbacks_run_in_the_order_they_were_added_and_without_a_validation_loader():
    order = []

    class Named(Callback):
        def __init__(self, name):
            self.name = name

        def on_epoch_end(self, trainer, epoch, loss, val_loss):
            order.append((self.name, val_loss))

    model = _model()
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.05), callbacks=[Named("first")])
    sbs.set_loaders(DataLoader(sum_dataset(), batch_size=16))
    sbs.add_callback(Named("second"))
    sbs.train(1, progress=False)
    assert order == [("first", None), ("second", None)]


def test_a_callback_can_stop_training_after_the_current_epoch():
    class StopAtEpoch3(Callback):
        def on_epoch_end(self, trainer, epoch, loss, val_loss):
            if epoch == 3:
                trainer.should_stop = True

    recorder = _Recorder()
    sbs = _trainer()
    sbs.add_callback(StopAtEpoch3())
    sbs.add_callback(recorder)
    sbs.train(10, progress=False)
    assert sbs.total_epochs == 3 and len(sbs.losses) == 3
    assert recorder.calls[-1] == ("train_end", 3, False)
    sbs.train(2, progress=False)  # the flag does not outlive the call that set it
    assert sbs.total_epochs == 5


def test_a_callback_can_clip_the_gradients_before_the_step(device):
    class ZeroTheBias(Callback):
        def on_after_backward(self, trainer):
            trainer.model.bias.grad.zero_()

    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    x, y = torch.randn(8, 3), torch.randn(8, 2)
    raw = _raw_gradients(model, x, y)
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=1.0), device=device,
                     callbacks=[ZeroTheBias()])
    moved_weight, moved_bias = _one_step_update(sbs, x, y)
    torch.testing.assert_close(moved_weight, raw[0])
    assert torch.equal(moved_bias, torch.zeros(2))


def test_train_end_runs_even_when_training_fails():
    recorder = _Recorder()
    sbs = _trainer()
    sbs.add_callback(recorder)
    sbs.loss_fn = lambda prediction, y: nn.functional.mse_loss(prediction, y) * float("nan")
    with pytest.raises(FloatingPointError, match="epoch 1, batch 1"):
        sbs.train(2, progress=False)
    assert [call[0] for call in recorder.calls] == ["train_start", "train_end"]


def test_the_tensorboard_callback_logs_and_flushes_every_epoch():
    class Writer:
        def __init__(self):
            self.logged, self.flushes = [], 0

        def add_scalars(self, tag, scalars, step):
            self.logged.append((tag, scalars, step))

        def flush(self):
            self.flushes += 1

    writer = Writer()
    sbs = _trainer()
    sbs.add_callback(TensorBoard(writer))
    sbs.train(2, progress=False)
    assert writer.logged == [("loss", {"training": sbs.losses[e], "validation": sbs.val_losses[e]}, e + 1)
                             for e in range(2)]
    assert writer.flushes == 2
    sbs.set_loaders(sbs.train_loader)
    sbs.train(1, progress=False)
    assert writer.logged[-1] == ("loss", {"training": sbs.losses[-1]}, 3)


def test_only_callbacks_join_the_loop():
    with pytest.raises(TypeError, match="callback must be a stepbystep.training.Callback, got function"):
        _trainer().add_callback(lambda trainer: None)
