"""The trainer by steps: train_steps, exact resumes inside an epoch (in one session and from a
checkpoint), the trainer's state_dict, callbacks that carry their own state, and older files."""
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from regression_data import sum_dataset
from stepbystep.serialization import atomic_save
from stepbystep.training import Callback, StepByStep
from stepbystep.training.schedules import warmup_linear

N_BATCHES = 4  # 64 samples, 16 a batch


def _trainer(seed=0, own_generator=True, scheduler=False, callbacks=()):
    """Every stream in use: a shuffling loader (its own generator or the global one), dropout, Adam."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.2), nn.ReLU(), nn.Linear(8, 1))
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.01), device="cpu",
                     callbacks=callbacks)
    generator = torch.Generator() if own_generator else None
    sbs.set_loaders(DataLoader(sum_dataset(), batch_size=16, shuffle=True, generator=generator),
                    DataLoader(sum_dataset(32, seed=1), batch_size=16))
    if scheduler:
        sbs.set_lr_scheduler(warmup_linear(sbs.optimizer, 3, 20), interval="batch")
    return sbs


def _same(one, other):
    """Bitwise the same run: histories, step counts and weights."""
    assert (one.losses, one.val_losses, one.learning_rates) == (other.losses, other.val_losses, other.learning_rates)
    assert (one.total_epochs, one.total_steps) == (other.total_epochs, other.total_steps)
    for a, b in zip(one.model.parameters(), other.model.parameters()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("own_generator", [True, False])
def test_steps_in_several_calls_repeat_one_call_exactly(own_generator):
    whole = _trainer(own_generator=own_generator, scheduler=True)
    whole.train_steps(11, progress=False)
    parts = _trainer(own_generator=own_generator, scheduler=True)
    for n in (3, 1, 5, 2):  # stops inside epochs 1, 2 and 3
        parts.train_steps(n, progress=False)
        torch.randn(5)  # other random work in between must not matter
    _same(whole, parts)
    assert whole.total_steps == 11 and whole.total_epochs == 2 and len(whole.learning_rates) == 11


@pytest.mark.parametrize("own_generator", [True, False])
def test_a_step_run_resumed_from_a_checkpoint_inside_an_epoch_equals_an_unbroken_one(tmp_path, own_generator):
    unbroken = _trainer(own_generator=own_generator, scheduler=True)
    unbroken.train_steps(13, progress=False)

    first = _trainer(own_generator=own_generator, scheduler=True)
    first.train_steps(6, progress=False)  # two steps into epoch 2
    first.save_checkpoint(tmp_path / "run.pt")

    torch.manual_seed(1234)  # a new session: other global state, other initial weights
    resumed = _trainer(seed=99, own_generator=own_generator, scheduler=True)
    resumed.load_checkpoint(tmp_path / "run.pt")
    assert (resumed.total_epochs, resumed.total_steps) == (1, 6)
    resumed.train_steps(7, progress=False)
    _same(unbroken, resumed)
    assert resumed.scheduler.last_epoch == unbroken.scheduler.last_epoch == 13


def test_an_epoch_of_steps_is_an_epoch():
    by_epoch, by_steps = _trainer(), _trainer()
    by_epoch.train(2, progress=False)
    by_steps.train_steps(2 * N_BATCHES, progress=False)
    _same(by_epoch, by_steps)
    assert len(by_steps.val_losses) == 2  # both epochs validated, the second at the call's last step


def test_train_finishes_an_epoch_that_train_steps_left_open():
    whole, mixed = _trainer(), _trainer()
    whole.train(2, progress=False)
    mixed.train_steps(3, progress=False)
    assert mixed.total_epochs == 0 and mixed.losses == []
    mixed.train(2, progress=False)  # the rest of epoch 1, then epoch 2
    _same(whole, mixed)


def test_a_loader_without_a_length_ends_its_epoch_when_it_runs_out():
    class Batches:  # an iterable of (x, y) pairs with no len()
        def __init__(self, data):
            self.data = data

        def __iter__(self):
            return iter(self.data)

    x, y = sum_dataset().tensors
    pairs = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 64, 16)]
    listed, unsized = _trainer(), _trainer()
    listed.set_loaders(pairs)
    unsized.set_loaders(Batches(pairs))
    listed.train_steps(4, progress=False)
    unsized.train_steps(4, progress=False)
    assert listed.total_epochs == 1 and unsized.total_epochs == 0  # it does not know yet that the epoch is over
    unsized.train_steps(1, progress=False)
    listed.train_steps(1, progress=False)
    _same(listed, unsized)


def test_a_loader_longer_than_its_length_says_loses_no_batch_and_no_random_draw():
    class Noisy:  # says 2 batches, gives 4, each drawing noise from the global stream
        def __len__(self):
            return 2

        def __iter__(self):
            x, y = sum_dataset().tensors
            for i in range(0, 64, 16):
                yield x[i:i + 16] + 0.01 * torch.randn(16, 3), y[i:i + 16]

    whole, parts = _trainer(), _trainer()
    for sbs in (whole, parts):
        sbs.set_loaders(Noisy())
    whole.train_steps(4, progress=False)
    parts.train_steps(2, progress=False)  # asks for a third batch, gets one, gives its draws back
    assert parts.total_epochs == 0
    parts.train_steps(2, progress=False)
    _same(whole, parts)


def test_callbacks_see_the_step_count_and_the_batch_within_its_epoch():
    seen = []

    class Steps(Callback):
        def on_batch_end(self, trainer, epoch, batch_index, loss):
            seen.append((trainer.total_steps, epoch, batch_index))

    sbs = _trainer(callbacks=[Steps()])
    sbs.train_steps(3, progress=False)
    sbs.train_steps(3, progress=False)
    assert seen == [(1, 1, 1), (2, 1, 2), (3, 1, 3), (4, 1, 4), (5, 2, 1), (6, 2, 2)]


def test_the_progress_bar_counts_steps(capsys):
    sbs = _trainer()
    sbs.train_steps(5)
    shown = capsys.readouterr().err
    assert "5/5" in shown and "steps" in shown


@pytest.mark.parametrize("n_steps, error", [(0, ValueError), (2.0, TypeError), (-1, ValueError)])
def test_bad_step_counts_are_rejected(n_steps, error):
    with pytest.raises(error, match="n_steps must be a positive int"):
        _trainer().train_steps(n_steps)


def test_train_steps_before_set_loaders_names_set_loaders():
    model = nn.Linear(3, 1)
    with pytest.raises(RuntimeError, match="set_loaders"):
        StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1)).train_steps(1)


def test_another_training_loader_starts_a_new_epoch():
    class Losses(Callback):
        def __init__(self):
            self.seen = []

        def on_batch_end(self, trainer, epoch, batch_index, loss):
            self.seen.append((epoch, batch_index, loss))

    losses = Losses()
    sbs = _trainer(callbacks=[losses])
    sbs.train_steps(3, progress=False)
    x, y = sum_dataset().tensors
    with pytest.warns(UserWarning, match="is dropped"):
        sbs.set_loaders([(x[:16], y[:16]), (x[16:32], y[16:32])])
    sbs.train_steps(2, progress=False)
    assert (sbs.total_steps, sbs.total_epochs, len(sbs.learning_rates)) == (5, 1, 5)
    assert [seen[:2] for seen in losses.seen] == [(1, 1), (1, 2), (1, 3), (1, 1), (1, 2)]
    assert sbs.losses == [(losses.seen[3][2] + losses.seen[4][2]) / 2]  # the new loader's two batches only


def test_resuming_on_a_loader_shorter_than_the_open_epoch_says_so():
    saved = _trainer()
    saved.train_steps(3, progress=False)
    x, y = sum_dataset().tensors
    short = _trainer()
    short.set_loaders([(x[:16], y[:16])])
    short.load_state_dict(saved.state_dict())
    with pytest.raises(ValueError, match="began on a training loader of 4 batches of 16, and this one has 1 batches"):
        short.train_steps(1, progress=False)


# ----------------------------------------------------------------------------- state
class RunningMean(Callback):
    """A user's stateful callback: the running mean of the batch losses."""

    def __init__(self):
        self.total, self.count = 0.0, 0

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        self.total, self.count = self.total + loss, self.count + 1

    def state_dict(self):
        return {"total": self.total, "count": self.count}

    def load_state_dict(self, state):
        self.total, self.count = state["total"], state["count"]


def test_a_users_stateful_callback_survives_save_and_load(tmp_path):
    unbroken = _trainer(callbacks=[RunningMean()])
    unbroken.train_steps(9, progress=False)

    first = _trainer(callbacks=[RunningMean()])
    first.train_steps(5, progress=False)
    first.save_checkpoint(tmp_path / "run.pt")
    assert torch.load(tmp_path / "run.pt", weights_only=True)["callbacks"] == {
        "RunningMean": {"total": first.callbacks[0].total, "count": 5}}

    resumed = _trainer(seed=7, callbacks=[RunningMean()])
    resumed.load_checkpoint(tmp_path / "run.pt")
    assert resumed.callbacks[0].count == 5
    resumed.train_steps(4, progress=False)
    assert (resumed.callbacks[0].total, resumed.callbacks[0].count) == (unbroken.callbacks[0].total, 9)
    _same(unbroken, resumed)


def test_two_callbacks_of_one_class_keep_their_own_states():
    sbs = _trainer(callbacks=[RunningMean(), RunningMean()])
    sbs.callbacks[1].count = 100
    state = sbs.state_dict()
    assert state["callbacks"] == {"RunningMean": {"total": 0.0, "count": 0},
                                  "RunningMean#2": {"total": 0.0, "count": 100}}
    other = _trainer(callbacks=[RunningMean(), RunningMean()])
    other.load_state_dict(state)
    assert [c.count for c in other.callbacks] == [0, 100]


def test_a_checkpoint_with_other_stateful_callbacks_is_refused_before_anything_changes(tmp_path):
    saved = _trainer(callbacks=[RunningMean()])
    saved.train_steps(2, progress=False)
    saved.save_checkpoint(tmp_path / "run.pt")
    plain = _trainer()
    weights = [p.detach().clone() for p in plain.model.parameters()]
    with pytest.raises(ValueError, match="saved with the callback RunningMean and this trainer has none"):
        plain.load_checkpoint(tmp_path / "run.pt")
    assert all(torch.equal(a, b) for a, b in zip(weights, plain.model.parameters())) and plain.total_steps == 0
    with pytest.raises(ValueError, match="saved with no callback holding state and this trainer has the callback "
                                         "RunningMean"):
        _trainer(callbacks=[RunningMean()]).load_state_dict(plain.state_dict())


def test_a_callback_whose_state_fails_to_load_rolls_everything_back():
    class Picky(RunningMean):
        def load_state_dict(self, state):
            if state["count"] > 3:
                raise ValueError("too many")
            super().load_state_dict(state)

    saved = _trainer(seed=1, callbacks=[Picky()])
    saved.train_steps(5, progress=False)
    sbs = _trainer(callbacks=[Picky()])
    sbs.train_steps(2, progress=False)
    weights, optimizer_steps = [p.detach().clone() for p in sbs.model.parameters()], sbs.optimizer.state_dict()
    with pytest.raises(ValueError, match="too many"):
        sbs.load_state_dict(saved.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(weights, sbs.model.parameters()))
    assert sbs.callbacks[0].count == 2 and sbs.total_steps == 2
    assert sbs.optimizer.state_dict()["state"][0]["step"] == optimizer_steps["state"][0]["step"]


def test_the_state_dict_round_trips_without_a_file():
    unbroken = _trainer(scheduler=True)
    unbroken.train_steps(10, progress=False)
    first = _trainer(scheduler=True)
    first.train_steps(7, progress=False)
    resumed = _trainer(seed=3, scheduler=True)
    resumed.load_state_dict(first.state_dict())
    resumed.train_steps(3, progress=False)
    _same(unbroken, resumed)


def test_a_checkpoint_from_before_callbacks_had_state_still_loads_and_resumes(tmp_path):
    """The previous format: the scheduler's state alone under scheduler_state_dict, no step count,
    saved between epochs."""
    unbroken = _trainer(scheduler=True)
    unbroken.train(3, progress=False)
    first = _trainer(scheduler=True)
    first.train(1, progress=False)
    state = first.state_dict()
    old = {key: state[key] for key in ("epoch", "model_state_dict", "optimizer_state_dict", "optimizer_class",
                                       "loss", "val_loss", "learning_rates", "rng_state")}
    old["scheduler_state_dict"] = first.scheduler.state_dict()
    atomic_save(old, tmp_path / "old.pt")
    resumed = _trainer(seed=5, scheduler=True)
    resumed.load_checkpoint(tmp_path / "old.pt")
    assert (resumed.total_epochs, resumed.total_steps) == (1, N_BATCHES)
    resumed.train(2, progress=False)
    _same(unbroken, resumed)
    with pytest.raises(ValueError, match="saved with a learning-rate scheduler and this trainer has none"):
        _trainer().load_checkpoint(tmp_path / "old.pt")
