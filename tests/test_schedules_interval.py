"""The course's per-step schedules are stepped after every optimizer step without being told."""
import torch
from torch.optim.lr_scheduler import LambdaLR, StepLR

from stepbystep.training import StepByStep
from stepbystep.training.schedules import counts_steps, inverse_sqrt, linear_ramps, warmup, warmup_cosine, \
    warmup_linear


def trainer():
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    sbs = StepByStep(model, torch.nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    x, y = torch.randn(8, 2), torch.randn(8, 1)
    sbs.set_loaders(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=2))
    return sbs


def test_each_course_schedule_defaults_to_per_batch():
    makers = [lambda o: warmup(o, 3), lambda o: warmup_linear(o, 2, 8), lambda o: warmup_cosine(o, 2, 8),
              lambda o: inverse_sqrt(o, 3), lambda o: linear_ramps(o, 2, 8)]
    for make in makers:
        sbs = trainer()
        schedule = make(sbs.optimizer)
        assert counts_steps(schedule)
        sbs.set_lr_scheduler(schedule)
        sbs.train(2)  # 2 epochs of 4 batches: the schedule has counted 8 steps, not 2
        assert schedule.last_epoch == 8
        assert len(sbs.learning_rates) == 8


def test_torch_schedulers_keep_their_defaults():
    sbs = trainer()
    assert not counts_steps(LambdaLR(sbs.optimizer, lambda step: 1.0))
    schedule = StepLR(sbs.optimizer, step_size=1, gamma=0.5)
    sbs.set_lr_scheduler(schedule)
    sbs.train(2)
    assert schedule.last_epoch == 2  # once per epoch


def test_an_explicit_interval_still_wins():
    sbs = trainer()
    schedule = warmup(sbs.optimizer, 3)
    sbs.set_lr_scheduler(schedule, interval="epoch")
    sbs.train(2)
    assert schedule.last_epoch == 2
