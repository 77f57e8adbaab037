"""Calls that stop inside an epoch read on from the epoch's iterator: ``train_steps(1)`` a hundred
times loads each sample once per epoch (it loaded the epoch's first batches again every call) and
still repeats ``train_steps(100)`` exactly; after a load, the epoch is drawn again and skipped."""
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from regression_data import sum_dataset
from stepbystep.training import StepByStep


class Counted(Dataset):
    """``sum_dataset`` with a count of the samples loaded and a random draw per sample (augmentation)."""

    def __init__(self, n=200):
        self.x, self.y = sum_dataset(n).tensors
        self.loaded = 0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        self.loaded += 1
        return self.x[index] + 0.01 * torch.randn(3), self.y[index]


def _trainer(own_generator=True, n=200, batch_size=2):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.2), nn.ReLU(), nn.Linear(8, 1))
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.01), device="cpu")
    generator = torch.Generator() if own_generator else None
    sbs.set_loaders(DataLoader(Counted(n), batch_size=batch_size, shuffle=True, generator=generator))
    return sbs


def _same(one, other):
    assert (one.losses, one.learning_rates, one.total_steps) == (other.losses, other.learning_rates, other.total_steps)
    for a, b in zip(one.model.parameters(), other.model.parameters()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("own_generator", [True, False])
def test_many_single_steps_repeat_one_call_and_load_each_batch_once(own_generator):
    whole, parts = _trainer(own_generator), _trainer(own_generator)
    whole.train_steps(150, progress=False)  # 100 batches an epoch: one and a half epochs
    for _ in range(150):
        parts.train_steps(1, progress=False)
        torch.randn(3)  # other random work between calls must not matter
    _same(whole, parts)
    assert parts.train_loader.dataset.loaded == whole.train_loader.dataset.loaded == 300


def test_a_load_reads_the_open_epoch_again_from_its_start(tmp_path):
    whole, first = _trainer(), _trainer()
    whole.train_steps(30, progress=False)
    first.train_steps(20, progress=False)
    first.save_checkpoint(tmp_path / "run.pt")
    first.train_steps(3, progress=False)  # the live iterator moves on; the loaded state must not use it
    first.load_checkpoint(tmp_path / "run.pt")
    first.train_steps(10, progress=False)
    _same(whole, first)
