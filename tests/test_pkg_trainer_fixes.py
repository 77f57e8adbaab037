"""Trainer fixes: a loaded state is the trainer's own, hooks pair up, bad losses and callback states
are refused where they arise."""
import copy

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from regression_data import sum_dataset
from stepbystep import StepByStep


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
