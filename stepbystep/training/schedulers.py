"""Learning-rate schedulers as a callback, stepped per batch or per epoch."""
from torch.optim import lr_scheduler

from ..checks import check_choice
from .callbacks import Callback
from .schedules import counts_steps

__all__ = ["LRScheduler"]

# Schedules written in optimizer steps (or, for warm restarts, in fractions of an epoch).
PER_BATCH = (lr_scheduler.OneCycleLR, lr_scheduler.CyclicLR, lr_scheduler.CosineAnnealingWarmRestarts)


class LRScheduler(Callback):
    """Step a ``torch.optim.lr_scheduler`` scheduler during training.

    ``interval='batch'`` steps after every optimizer step, ``'epoch'`` after every epoch.
    ``None`` picks ``'batch'`` for the course's schedules (``stepbystep.training.schedules``),
    ``OneCycleLR`` and ``CyclicLR`` (their schedules count steps) and for
    ``CosineAnnealingWarmRestarts``, ``'epoch'`` otherwise. Warm restarts
    follow PyTorch's documented loop (and the book): after batch ``i`` of epoch ``e``, both
    counted from 0, ``scheduler.step(e + i / n_batches)``; so the first two batches both run at
    the initial rate.
    ``ReduceLROnPlateau`` steps once per epoch with the validation loss. ``optimizer``, when
    given, must be the one the scheduler was built on.
    """

    def __init__(self, scheduler, interval=None, optimizer=None):
        if not (hasattr(scheduler, "step") and hasattr(scheduler, "optimizer")):
            raise TypeError(f"scheduler must be a learning-rate scheduler from torch.optim.lr_scheduler, "
                            f"got {type(scheduler).__name__}")
        if optimizer is not None and scheduler.optimizer is not optimizer:
            raise ValueError("scheduler must be built on this trainer's optimizer (sbs.optimizer), "
                             "got one built on another optimizer")
        if interval is None:
            interval = "batch" if isinstance(scheduler, PER_BATCH) or counts_steps(scheduler) else "epoch"
        check_choice("interval", interval, ("batch", "epoch"))
        self.plateau = isinstance(scheduler, lr_scheduler.ReduceLROnPlateau)
        if self.plateau and interval != "epoch":
            raise ValueError("ReduceLROnPlateau follows the validation loss, which exists once per epoch: "
                             "use interval='epoch'")
        self.fractional = isinstance(scheduler, lr_scheduler.CosineAnnealingWarmRestarts) and interval == "batch"
        self.scheduler = scheduler
        self.interval = interval
        self.n_batches = None

    def on_train_start(self, trainer):
        if self.plateau and trainer.val_loader is None:
            raise ValueError("ReduceLROnPlateau steps with the validation loss: pass a val_loader to set_loaders")
        if self.fractional:
            if not hasattr(trainer.train_loader, "__len__"):
                raise TypeError("CosineAnnealingWarmRestarts steps with the fractional epoch, which needs "
                                f"len(train_loader); got a {type(trainer.train_loader).__name__} without a "
                                "length (or use set_lr_scheduler(scheduler, interval='epoch'))")
            self.n_batches = len(trainer.train_loader)

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        if self.fractional:  # PyTorch's loop: step(e + i / n) after batch i, with e and i from 0
            self.scheduler.step(epoch - 1 + (batch_index - 1) / self.n_batches)
        elif self.interval == "batch":
            self.scheduler.step()

    def on_epoch_end(self, trainer, epoch, loss, val_loss):
        if self.interval != "epoch":
            return
        if self.plateau:
            self.scheduler.step(val_loss)
        else:
            self.scheduler.step()

    def state_dict(self):
        return {"scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state):
        self.scheduler.load_state_dict(state["scheduler"])
