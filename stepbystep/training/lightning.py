"""StepByStep's training step as a ``lightning.LightningModule``, and Lightning checkpoints back into StepByStep.

``StepByStepModule(model, loss_fn, optimizer)`` takes what ``StepByStep`` takes and trains the same
way: ``loss_fn(model(x), y)`` per batch, the optimizer (and scheduler) stepped as the trainer steps
them. Its history is StepByStep's: ``losses`` the plain mean of each epoch's batch losses,
``val_losses`` the mean over the validation batches (Lightning's own epoch logs weight batches by
their size; these do not). It logs ``loss`` and ``val_loss`` once per epoch, so Lightning's loggers
and callbacks (``ModelCheckpoint(monitor="val_loss")``) see them. ``load_lightning_checkpoint``
puts a file Lightning saved at an epoch's end into a one-process ``StepByStep``.
"""
import math
from collections.abc import Callable

import lightning
import torch
from torch.optim import lr_scheduler

from ..serialization import safe_load
from ..checks import check_instance
from ..devices import move_to
from ..seeding import get_rng_state
from .batches import forward, split_batch
from .schedulers import LRScheduler
from .trainer import StepByStep, check_optimizer

__all__ = ["StepByStepModule", "load_lightning_checkpoint"]

HISTORY_KEY = "stepbystep"  # where the module's history goes in a Lightning checkpoint


class StepByStepModule(lightning.LightningModule):
    """``model`` trained by ``lightning.Trainer`` with ``loss_fn`` and ``optimizer`` (built on ``model``).

    ``scheduler`` (optional) is stepped per ``interval``, ``'batch'`` or ``'epoch'``, with
    ``LRScheduler``'s default (``None``: per batch for ``OneCycleLR`` and ``CyclicLR``, per epoch
    otherwise); ``ReduceLROnPlateau`` follows ``val_loss``. Validation must run once per epoch, at its
    end, as StepByStep validates. Batches are ``(x, y)`` pairs, passed to the model as StepByStep passes them.
    """

    def __init__(self, model, loss_fn, optimizer, scheduler=None, interval=None):
        super().__init__()
        check_instance("model", model, torch.nn.Module, "an nn.Module")
        check_instance("loss_fn", loss_fn, Callable, "callable, as loss_fn(prediction, y)")
        check_optimizer(model, optimizer)
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.schedule = None if scheduler is None else LRScheduler(scheduler, interval, optimizer=optimizer)
        if self.schedule is not None and self.schedule.fractional:
            raise ValueError("CosineAnnealingWarmRestarts per batch steps with the fractional epoch, which Lightning "
                             "does not pass: use interval='epoch', or train it with StepByStep")
        self.losses, self.val_losses, self.learning_rates = [], [], []
        self._sums = {"train": [0.0, 0], "val": [0.0, 0]}  # [loss sum, batches] of the open epoch

    def forward(self, x):
        return forward(self.model, x)

    def _batch_loss(self, batch):
        x, y = move_to(split_batch(batch), self.device)
        return self.loss_fn(forward(self.model, x), y)  # scalar

    def _add(self, kind, loss):
        value = loss.item()
        if not math.isfinite(value):
            raise FloatingPointError(f"the {'training' if kind == 'train' else 'validation'} loss became {value} "
                                     f"at epoch {self.current_epoch + 1}, batch {self._sums[kind][1] + 1}")
        self._sums[kind][0] += value
        self._sums[kind][1] += 1

    def training_step(self, batch, batch_idx):
        loss = self._batch_loss(batch)
        self._add("train", loss)
        self.learning_rates.append(self.optimizer.param_groups[0]["lr"])
        return loss

    def validation_step(self, batch, batch_idx):
        if not self.trainer.sanity_checking:
            self._add("val", self._batch_loss(batch))

    def on_fit_start(self):
        if self.trainer.val_check_interval != 1.0 or self.trainer.check_val_every_n_epoch not in (1, None):
            raise ValueError("StepByStepModule validates at the end of every epoch, as StepByStep does: leave the "
                             "Trainer's val_check_interval and check_val_every_n_epoch at their defaults")

    def _close(self, kind):
        """Record the open epoch's mean ``kind`` loss (a plain mean over its batches) and log it."""
        total, n_batches = self._sums[kind]
        if n_batches == 0:
            return
        history, name = (self.losses, "loss") if kind == "train" else (self.val_losses, "val_loss")
        history.append(total / n_batches)
        self.log(name, history[-1], on_step=False, on_epoch=True, prog_bar=True)
        self._sums[kind] = [0.0, 0]

    def on_train_batch_end(self, outputs, batch, batch_idx):
        if batch_idx + 1 == self.trainer.num_training_batches:  # the epoch's last step: before any checkpoint
            self._close("train")

    def on_train_epoch_end(self):  # a loader without a length ends its epoch here
        self._close("train")

    def on_validation_epoch_end(self):
        if not self.trainer.sanity_checking:
            self._close("val")

    def configure_optimizers(self):
        if self.schedule is None:
            return self.optimizer
        config = {"scheduler": self.schedule.scheduler, "interval": "step" if self.schedule.interval == "batch" else "epoch"}
        if isinstance(self.schedule.scheduler, lr_scheduler.ReduceLROnPlateau):
            config["monitor"] = "val_loss"
        return {"optimizer": self.optimizer, "lr_scheduler": config}

    def on_save_checkpoint(self, checkpoint):
        loader = self.trainer.train_dataloader if self.trainer is not None else None
        checkpoint[HISTORY_KEY] = {"loss": list(self.losses), "val_loss": list(self.val_losses),
                                   "learning_rates": list(self.learning_rates), "rng_state": get_rng_state(loader),
                                   "open_batches": self._sums["train"][1]}

    def on_load_checkpoint(self, checkpoint):
        history = checkpoint.get(HISTORY_KEY, {})
        self.losses = list(history.get("loss", []))
        self.val_losses = list(history.get("val_loss", []))
        self.learning_rates = list(history.get("learning_rates", []))


def load_lightning_checkpoint(trainer, path):
    """Load a checkpoint that ``lightning.Trainer`` saved from a ``StepByStepModule`` into ``trainer``, a
    one-process ``StepByStep`` built with the same model class, optimizer class and (``set_lr_scheduler``)
    scheduler: weights, optimizer and scheduler state, epochs, steps, losses, rates and random streams.
    The next ``train`` goes on from the saved epoch's end. Returns ``trainer``."""
    check_instance("trainer", trainer, StepByStep, "a StepByStep")
    saved = safe_load(path, map_location=trainer.device)
    if not isinstance(saved, dict) or "state_dict" not in saved or HISTORY_KEY not in saved:
        raise ValueError(f"{str(path)!r} is not a Lightning checkpoint of a StepByStepModule: it lacks "
                         f"{[key for key in ('state_dict', HISTORY_KEY) if not isinstance(saved, dict) or key not in saved]}")
    history = saved[HISTORY_KEY]
    if history.get("open_batches", 0):
        raise ValueError(f"{str(path)!r} was saved {history['open_batches']} step(s) into an epoch, and StepByStep's "
                         "history counts whole epochs: load a file saved at an epoch's end (ModelCheckpoint's default)")
    prefix = "model."
    weights = {name[len(prefix):]: value for name, value in saved["state_dict"].items() if name.startswith(prefix)}
    schedulers = saved.get("lr_schedulers", [])
    state = {
        "epoch": len(history["loss"]),  # saved at an epoch's end (others are refused above)
        "steps": int(saved["global_step"]),
        "model_state_dict": weights,
        "optimizer_state_dict": saved["optimizer_states"][0],
        "optimizer_class": None,
        "callbacks": {"LRScheduler": {"scheduler": schedulers[0]}} if schedulers else {},
        "loss": history["loss"],
        "val_loss": history["val_loss"],
        "learning_rates": history["learning_rates"],
        "rng_state": history["rng_state"],
        "open_epoch": None,
    }
    trainer.load_state_dict(state)
    return trainer
