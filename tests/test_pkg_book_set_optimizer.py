"""``set_optimizer`` is the book's (chapter 6), on the book's class only: no chapter swaps the core
trainer's optimizer. It drops a scheduler built on the old one and keeps the other callbacks."""
import torch
from torch import nn

from stepbystep.book.training import StepByStep
from stepbystep.training import Callback, GradientClipping
from stepbystep.training import StepByStep as CoreStepByStep


class _Recorder(Callback):
    pass


def test_set_optimizer_drops_the_scheduler_callback_and_keeps_the_others():
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.05), device="cpu")
    sbs.add_callback(_Recorder())
    sbs.set_lr_scheduler(torch.optim.lr_scheduler.StepLR(sbs.optimizer, step_size=1))
    sbs.set_clip_grad_norm(1.0)
    sbs.set_optimizer(torch.optim.Adam(sbs.model.parameters(), lr=0.003))
    assert sbs.scheduler is None
    assert [type(c) for c in sbs.callbacks] == [_Recorder, GradientClipping]
    assert not hasattr(CoreStepByStep, "set_optimizer")
