"""StepByStep: the book's training loop, safe to resume, extended through callbacks.

``train`` runs epochs; an epoch is ``_train_epoch`` (forward, loss, backward, step per batch)
then ``_validate``. Clipping, schedulers and logging join the loop as callbacks (see
``callbacks.py``); checkpoints live in ``checkpoint.py``.
"""
import math
from collections.abc import Callable, Iterable

import torch
from torch import nn
from tqdm.auto import trange

from ..checks import check_instance, check_positive_int
from ..containers import map_structure
from ..devices import as_device, default_device, evaluating, model_dtype, move_to
from ..seeding import get_rng_state, set_rng_state, set_seed
from .batches import check_float_inputs, forward, numpy_to_tensor, split_batch, to_numpy
from .callbacks import Callback
from .checkpoint import read_checkpoint, restore_checkpoint, save_checkpoint
from .clipping import GradientClipping
from .schedulers import LRScheduler

__all__ = ["StepByStep"]


def _check_optimizer(model, optimizer):
    check_instance("optimizer", optimizer, torch.optim.Optimizer, "a torch.optim.Optimizer")
    owned = {id(p) for p in model.parameters()}
    foreign = sum(id(p) not in owned for group in optimizer.param_groups for p in group["params"])
    if foreign:
        raise ValueError(
            f"the optimizer updates {foreign} tensor(s) that are not parameters of this model: "
            "build it from model.parameters() (after rebuilding a model, rebuild its optimizer too)"
        )


class StepByStep:
    """Trains a model with a loss function and an optimizer, and keeps the whole history.

    Args:
        model: the ``nn.Module`` to train.
        loss_fn: called as ``loss_fn(prediction, y)``; returns a scalar tensor.
        optimizer: a ``torch.optim.Optimizer`` built on ``model``'s parameters.
        device: where to train; by default CUDA, then MPS, then the CPU.
        callbacks: ``Callback`` objects whose hooks run during training (see ``add_callback``).

    Batches are ``(x, y)`` pairs, moved whole to the device (tensors inside tuples, lists and
    dicts too). A tensor ``x`` is passed as ``model(x)``, a tuple or list as ``model(*x)``, a
    dict as ``model(**x)``.

    Attributes:
        losses, val_losses: the mean training and validation loss of every completed epoch.
        learning_rates: the learning rate (of the first parameter group) of every step.
        total_epochs: how many epochs the model has been trained for, across calls.
        device: the ``torch.device`` the model lives on.
        callbacks: the callbacks, in the order their hooks run.
        should_stop: set by a callback to end training after the current epoch.

    Seeds: the first ``train`` call seeds every random generator with 42 (or ``seed=``);
    later calls continue the same streams, so ``train(2); train(2)`` repeats ``train(4)``
    exactly. Checkpoints carry the streams.
    """

    def __init__(self, model, loss_fn, optimizer, device=None, callbacks=()):
        check_instance("model", model, nn.Module, "an nn.Module")
        check_instance("loss_fn", loss_fn, Callable, "callable, as loss_fn(prediction, y)")
        _check_optimizer(model, optimizer)
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.to(default_device() if device is None else device)
        self.train_loader = None
        self.val_loader = None
        self.callbacks = []
        for callback in callbacks:
            self.add_callback(callback)

        self.losses = []
        self.val_losses = []
        self.learning_rates = []
        self.total_epochs = 0
        self.should_stop = False  # a callback sets it to end training after the current epoch
        self._rng_state = None  # the training streams between calls; None until first seeded

    # ----------------------------------------------------------------------------- set-up
    def to(self, device):
        """Move the model (and any optimizer state) to ``device``; returns the trainer."""
        check_instance("device", device, (str, int, torch.device), "like 'cpu', 'cuda', 'cuda:1' or 'mps'")
        try:
            device = torch.device(device)
        except RuntimeError as error:
            raise ValueError(f"device must be like 'cpu', 'cuda', 'cuda:1' or 'mps', got {device!r}") from error
        self.model.to(device)
        self.device = as_device(device)  # with its index, as model_device and tensors report it
        # reloading its own state makes the optimizer cast its buffers to the parameters' device
        self.optimizer.load_state_dict(self.optimizer.state_dict())
        return self

    def set_loaders(self, train_loader, val_loader=None):
        """Use ``train_loader`` for training and ``val_loader`` (optional) for validation."""
        check_instance("train_loader", train_loader, Iterable, "an iterable of (x, y) batches, such as a DataLoader")
        if val_loader is not None:
            check_instance("val_loader", val_loader, Iterable, "an iterable of (x, y) batches, such as a DataLoader")
        self.train_loader = train_loader
        self.val_loader = val_loader

    def set_optimizer(self, optimizer):
        """Train with ``optimizer`` from now on; a scheduler built on the old one is dropped."""
        _check_optimizer(self.model, optimizer)
        self.optimizer = optimizer
        self._set_callback(LRScheduler, None)
        self.to(self.device)

    def add_callback(self, callback):
        """Run ``callback``'s hooks during training, after those of the callbacks added before."""
        check_instance("callback", callback, Callback, "a stepbystep.training.Callback")
        self.callbacks.append(callback)

    def _set_callback(self, kind, callback):
        """Replace the callbacks of type ``kind`` with ``callback`` (None: just remove them)."""
        self.callbacks = [c for c in self.callbacks if not isinstance(c, kind)]
        if callback is not None:
            self.add_callback(callback)

    def _find(self, kind):
        return next((c for c in self.callbacks if isinstance(c, kind)), None)

    def set_lr_scheduler(self, scheduler, interval=None):
        """Step ``scheduler`` per ``'batch'`` or per ``'epoch'`` (see ``LRScheduler``)."""
        self._set_callback(LRScheduler, LRScheduler(scheduler, interval, optimizer=self.optimizer))

    @property
    def scheduler(self):
        """The scheduler set by ``set_lr_scheduler``, or None."""
        callback = self._find(LRScheduler)
        return None if callback is None else callback.scheduler

    def _clipping(self):
        """The trainer's ``GradientClipping`` callback, added on first use."""
        clipping = self._find(GradientClipping)
        if clipping is None:
            clipping = GradientClipping()
            self.add_callback(clipping)
        return clipping

    def set_clip_grad_norm(self, max_norm, norm_type=2):
        """Rescale the gradients so their total ``norm_type``-norm is at most ``max_norm``."""
        self._clipping().clip_norm(max_norm, norm_type)

    # ----------------------------------------------------------------------------- training
    def _call(self, hook, *args):
        for callback in self.callbacks:
            getattr(callback, hook)(self, *args)

    def _step(self, loss):
        """Backpropagate ``loss``, let the callbacks see the gradients, update the weights."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self._call("on_after_backward")
        self.optimizer.step()

    def _train_epoch(self, epoch):
        """One pass over the training loader; returns the mean batch loss."""
        self.model.train()
        total, n_batches, dtype = 0.0, 0, model_dtype(self.model)
        for batch_index, batch in enumerate(self.train_loader, start=1):
            x, y = move_to(split_batch(batch), self.device)
            loss = self.loss_fn(forward(self.model, check_float_inputs(x, dtype)), y)  # scalar
            value = loss.item()
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"the training loss became {value} at epoch {epoch}, batch {batch_index}; training "
                    f"stopped before this step, and the history keeps the {self.total_epochs} completed "
                    "epoch(s). Try a lower learning rate, gradient clipping, or check the data."
                )
            self.learning_rates.append(self.optimizer.param_groups[0]["lr"])
            self._step(loss)
            self._call("on_batch_end", epoch, batch_index, value)
            total, n_batches = total + value, batch_index
        if n_batches == 0:
            raise ValueError("the training loader yielded no batches")
        return total / n_batches

    def _validate(self, epoch):
        """Mean batch loss over the validation loader, in eval mode and without gradients; a NaN or
        infinite loss raises ``FloatingPointError``, as in training."""
        total, n_batches, dtype = 0.0, 0, model_dtype(self.model)
        with evaluating(self.model):
            for batch in self.val_loader:
                x, y = move_to(split_batch(batch), self.device)
                value = self.loss_fn(forward(self.model, check_float_inputs(x, dtype)), y).item()
                n_batches += 1
                if not math.isfinite(value):
                    raise FloatingPointError(
                        f"the validation loss became {value} at epoch {epoch}, batch {n_batches}; the weights "
                        "trained this epoch, so the history records it too (its training loss, nan for "
                        "validation). Check the validation data (NaN or inf?), or the model's outputs."
                    )
                total += value
        if n_batches == 0:
            raise ValueError("the validation loader yielded no batches")
        return total / n_batches

    def _start_streams(self, seed):
        if seed is not None or self._rng_state is None:
            set_seed(42 if seed is None else seed, self.train_loader)
        else:
            set_rng_state(self._rng_state, self.train_loader)

    def train(self, n_epochs, seed=None, progress=True):
        """Train for ``n_epochs`` more epochs, validating after each one.

        Args:
            n_epochs: how many epochs to run now.
            seed: reseed every generator with it first. By default the first call seeds with 42
                and later calls continue the streams where the previous call (or the loaded
                checkpoint) left them.
            progress: show a progress bar over epochs with the latest losses.

        A NaN or infinite loss, training or validation, raises ``FloatingPointError`` naming the epoch and batch;
        a validation one after recording the epoch (validation loss nan), as its training steps changed the weights.
        Ctrl-C stops after cleaning up: every completed epoch stays in the history. The model
        is left in eval mode.
        """
        check_positive_int("n_epochs", n_epochs)
        if self.train_loader is None:
            raise RuntimeError("no data to train on: call set_loaders(train_loader, val_loader=None) first")
        self.should_stop = False
        self._call("on_train_start")
        self._start_streams(seed)
        bar = trange(n_epochs, desc="epochs", unit="epoch", disable=not progress)
        try:
            for _ in bar:
                loss, val_loss = self._epoch()
                bar.set_postfix(loss=f"{loss:.4f}", **({} if val_loss is None else {"val_loss": f"{val_loss:.4f}"}))
                if self.should_stop:
                    break
        except KeyboardInterrupt:
            print(f"Training interrupted: the history keeps the {self.total_epochs} completed epoch(s).")
        finally:
            bar.close()
            self._rng_state = get_rng_state(self.train_loader)
            self.model.eval()
            self._call("on_train_end")

    def _epoch(self):
        """Train and validate once, record both losses, let the callbacks see them; returns them."""
        epoch = self.total_epochs + 1
        loss = self._train_epoch(epoch)
        try:
            val_loss = self._validate(epoch) if self.val_loader is not None else None
        except FloatingPointError:  # the weights trained this epoch: the history says so before the error
            self._record(epoch, loss, math.nan)
            raise
        self._record(epoch, loss, val_loss)
        self._call("on_epoch_end", epoch, loss, val_loss)
        return loss, val_loss

    def _record(self, epoch, loss, val_loss):
        self.losses.append(loss)
        if val_loss is not None:
            self.val_losses.append(val_loss)
        self.total_epochs = epoch

    # ----------------------------------------------------------------------------- using the model
    def predict(self, x):
        """The model's output for ``x`` as NumPy, computed in eval mode without gradients.

        Every submodule's mode is restored afterwards. Tensors keep their dtype (token ids stay
        integers); NumPy floating arrays become the model's float dtype. Float tensors must have it
        (a TypeError otherwise, as in training). ``x`` may be a tuple or dict, as for the loaders; the
        output may be any nesting of tensors, kept as it is.
        """
        dtype = model_dtype(self.model)
        x = check_float_inputs(move_to(map_structure(lambda leaf: numpy_to_tensor(leaf, dtype), x), self.device), dtype)
        with evaluating(self.model):
            output = forward(self.model, x)
        return to_numpy(output)

    def count_parameters(self):
        """The number of trainable parameters."""
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    # ----------------------------------------------------------------------------- checkpoints
    def save_checkpoint(self, path):
        """Save everything needed to resume exactly, random streams included; written atomically."""
        save_checkpoint(self, path)

    def load_checkpoint(self, path):
        """Restore a ``save_checkpoint`` file onto this device, all or nothing.

        Set the loaders (and the scheduler, if the run had one) first: the next ``train`` call
        continues the saved random streams. The file is read with ``weights_only=True``, so
        one that would run code is refused; a refused checkpoint leaves the trainer as it was.
        """
        restore_checkpoint(self, read_checkpoint(path, self.device))
