"""An open epoch resumes only on a loader of its length and batch size (skipping its first steps on
another would skip other samples); a new training loader drops an open epoch with a warning."""
import warnings

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from regression_data import sum_dataset
from stepbystep.training import StepByStep


def _trainer(batch_size=16, n=64):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.01), device="cpu")
    sbs.set_loaders(DataLoader(sum_dataset(n), batch_size=batch_size, shuffle=True, generator=torch.Generator()))
    return sbs


@pytest.mark.parametrize("batch_size, n, says", [
    (8, 64, "of 4 batches of 16, and this one has 8 batches of 8"),
    (16, 128, "of 4 batches of 16, and this one has 8 batches of 16"),
    (32, 128, "of 4 batches of 16, and this one has 4 batches of 32"),  # same length, other samples
])
def test_resuming_an_open_epoch_on_another_loader_shape_is_refused(tmp_path, batch_size, n, says):
    saved = _trainer()
    saved.train_steps(3, progress=False)
    saved.save_checkpoint(tmp_path / "run.pt")
    other = _trainer(batch_size, n)
    other.load_checkpoint(tmp_path / "run.pt")
    with pytest.raises(ValueError, match="the open epoch, 3 step\\(s\\) in, began on a training loader " + says):
        other.train_steps(1, progress=False)
    assert other.total_steps == 3


def test_the_same_shape_resumes_and_a_file_without_the_shape_still_loads(tmp_path):
    saved = _trainer()
    saved.train_steps(3, progress=False)
    state = saved.state_dict()
    assert {key: state["open_epoch"][key] for key in ("n_batches", "batch_size")} == {"n_batches": 4, "batch_size": 16}
    same = _trainer()
    same.load_state_dict(state)
    same.train_steps(2, progress=False)
    older = _trainer(batch_size=8)  # a file of an earlier release does not say: nothing to compare
    state["open_epoch"] = {key: state["open_epoch"][key] for key in ("batches", "loss_sum", "rng_state")}
    older.load_state_dict(state)
    older.train_steps(1, progress=False)
    assert same.total_epochs == 1 and older.total_steps == 4


def test_a_loader_whose_length_lies_still_says_it_ran_out():
    class Short:  # says 4 batches, gives 1
        def __len__(self):
            return 4

        def __iter__(self):
            x, y = sum_dataset().tensors
            yield x[:16], y[:16]

    saved = _trainer()
    saved.train_steps(3, progress=False)
    short = _trainer()
    short.set_loaders(Short())
    short.load_state_dict(saved.state_dict())
    with pytest.raises(ValueError, match="ran out before the 3 batches the open epoch trained on"):
        short.train_steps(1, progress=False)


def test_set_loaders_warns_when_it_drops_an_open_epoch():
    sbs = _trainer()
    loader = sbs.train_loader
    sbs.train_steps(3, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sbs.set_loaders(loader)  # the same loader: the epoch goes on, no warning
    with pytest.warns(UserWarning, match="the open one, 3 step\\(s\\) in, is dropped"):
        sbs.set_loaders(DataLoader(sum_dataset(), batch_size=16))
    sbs.train_steps(4, progress=False)
    assert (sbs.total_steps, sbs.total_epochs) == (7, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sbs.set_loaders(loader)  # no open epoch: nothing dropped, no warning


def test_an_epoch_opened_without_a_step_is_dropped_silently():
    sbs = _trainer()
    sbs.loss_fn = lambda prediction, y: None  # refused at the first batch, after the epoch opened
    with pytest.raises(TypeError):
        sbs.train_steps(1, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sbs.set_loaders(DataLoader(sum_dataset(), batch_size=16))


@pytest.mark.parametrize("change, says", [
    (lambda epoch: {"batches": epoch["batches"], "loss_sum": epoch["loss_sum"]}, r"got \['batches', 'loss_sum'\]"),
    (lambda epoch: {**epoch, "unknown": 0}, r"'unknown'\]"),
    (lambda epoch: "3 steps", "got str"),
], ids=["without its streams", "an unknown key", "not a dict"])
def test_a_malformed_open_epoch_is_refused_before_anything_loads(change, says):
    saved = _trainer()
    saved.train_steps(3, progress=False)
    state = saved.state_dict()
    state["open_epoch"] = change(state["open_epoch"])
    fresh = _trainer()
    before = [p.detach().clone() for p in fresh.model.parameters()]
    with pytest.raises(ValueError, match="open_epoch must be None or a dict of .*" + says):
        fresh.load_state_dict(state)
    assert fresh.total_steps == 0 and all(torch.equal(a, b) for a, b in zip(before, fresh.model.parameters()))
