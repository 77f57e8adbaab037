"""The trainer's one loop, flattened (``_run``: a goal counted up front, an epoch's steps, a pause
inside it): ``ran_out`` says where a pass stands as a ``Pass``, a stop request under ``train_steps``
waits for the epoch to close, the bar counts each unit once, and an interrupted call says it goes on
into the open epoch."""
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from regression_data import sum_dataset
from stepbystep.training import Callback, StepByStep
from stepbystep.training.batches import Pass, ran_out


def _trainer(n=64, batch_size=16, callbacks=()):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    sbs = StepByStep(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.01), device="cpu",
                     callbacks=callbacks)
    sbs.set_loaders(DataLoader(sum_dataset(n), batch_size=batch_size, shuffle=True, generator=torch.Generator()))
    return sbs


def test_ran_out_says_where_the_pass_stands():
    loader = DataLoader(sum_dataset(48), batch_size=16)
    batches = iter(loader)
    next(batches)
    assert ran_out(loader, batches, 1) is Pass.READ_ON  # two batches left
    next(batches), next(batches)
    assert ran_out(loader, batches, 3) is Pass.ENDED
    assert ran_out(iter(loader), iter(loader), 0) is Pass.READ_ON  # no length: it cannot tell

    class Lies:  # says 1 batch, gives 2
        def __len__(self):
            return 1

        def __iter__(self):
            return iter(loader)

    lies = Lies()
    batches = iter(lies)
    next(batches)
    assert ran_out(lies, batches, 1) is Pass.DRAW_AGAIN


@pytest.mark.parametrize("steps", [[4], [3, 1], [1, 2, 1], [2, 2]])
def test_a_call_that_ends_on_an_epochs_last_step_closes_it(steps):
    sbs = _trainer()  # 4 batches an epoch
    for n in steps:
        sbs.train_steps(n, progress=False)
    assert sbs.total_steps == 4 and sbs.total_epochs == 1 and len(sbs.losses) == 1 and sbs._epoch is None


def test_a_stop_request_under_train_steps_waits_for_the_epoch_to_close():
    class StopAtTwo(Callback):
        def on_batch_end(self, trainer, epoch, batch, loss):
            if trainer.total_steps == 2:
                trainer.should_stop = True

    sbs = _trainer(callbacks=[StopAtTwo()])
    sbs.train_steps(10, progress=False)
    assert sbs.total_steps == 4 and sbs.total_epochs == 1  # the open epoch closed, then the call stopped
    sbs.train(2, progress=False)  # a new call starts without the request
    assert sbs.total_epochs == 3


def test_the_bar_counts_each_unit_once(monkeypatch):
    import stepbystep.training.trainer as trainer

    bars = []

    class Bar:
        def __init__(self, total, **kwargs):
            self.total, self.n, self.postfix = total, 0, None
            bars.append(self)

        def update(self):
            self.n += 1

        def set_postfix(self, **postfix):
            self.postfix = postfix

        def close(self):
            pass

    monkeypatch.setattr(trainer, "trange", Bar)
    sbs = _trainer()
    sbs.train_steps(6)
    sbs.train(2)
    assert [(bar.total, bar.n) for bar in bars] == [(6, 6), (2, 2)]
    assert set(bars[0].postfix) == {"loss"} and set(bars[1].postfix) == {"loss"}  # no validation loader


def test_an_interrupted_call_says_it_goes_on_into_the_open_epoch(capsys):
    class Interrupt(Callback):
        def on_batch_end(self, trainer, epoch, batch, loss):
            if trainer.total_steps == 6:
                raise KeyboardInterrupt

    sbs = _trainer(callbacks=[Interrupt()])
    sbs.train(3, progress=False)
    assert "keeps the 1 completed epoch(s); the next call goes on 2 step(s) into the open one." in capsys.readouterr().out
