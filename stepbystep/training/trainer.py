"""StepByStep: the book's training loop, by epochs or by steps, safe to resume, extended through callbacks.

``train`` runs epochs and ``train_steps`` optimizer steps, through one loop: take a batch and step
(forward, loss, backward, update); when the loader runs out, close the epoch (validate, record).
A call may stop inside an epoch: the next call, or a loaded checkpoint, continues it exactly.
Clipping, schedulers and logging join the loop as callbacks (``callbacks.py``); ``state_dict`` holds
everything a resume needs, and ``checkpoint.py`` writes it to a file and reads it back.
"""
import contextlib
import copy
import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable

import torch
from torch import nn
from tqdm.auto import trange

from ..checks import check_choice, check_instance, check_positive_int
from ..containers import map_structure
from ..devices import as_device, default_device, evaluating, model_dtype, move_to
from ..seeding import get_rng_state, set_rng_state, set_seed
from .batches import (OpenEpoch, Pass, check_float_inputs, forward, numpy_to_tensor, ran_out, resume, split_batch,
                      to_numpy)
from .callbacks import Callback, check_state, stateful
from .checkpoint import check_compatible, load_all_or_nothing, read_checkpoint, save_checkpoint
from .clipping import GradientClipping
from .schedulers import LRScheduler

__all__ = ["StepByStep"]

PRECISIONS = ("32", "bf16-mixed")  # Lightning's names: float32, or bfloat16 autocast on float32 weights


def check_optimizer(model, optimizer):
    check_instance("optimizer", optimizer, torch.optim.Optimizer, "a torch.optim.Optimizer")
    owned = {id(p) for p in model.parameters()}
    foreign = sum(id(p) not in owned for group in optimizer.param_groups for p in group["params"])
    if foreign:
        raise ValueError(
            f"the optimizer updates {foreign} tensor(s) that are not parameters of this model: "
            "build it from model.parameters() (after rebuilding a model, rebuild its optimizer too)"
        )


def _show(bar, **losses):
    """One more unit on the progress bar, with the latest losses (those that are not None)."""
    bar.update()
    bar.set_postfix(**{name: f"{value:.4f}" for name, value in losses.items() if value is not None})


class StepByStep:
    """Trains a model with a loss function and an optimizer, and keeps the whole history.

    Args:
        model: the ``nn.Module`` to train.
        loss_fn: called as ``loss_fn(prediction, y)``; returns a scalar tensor.
        optimizer: a ``torch.optim.Optimizer`` built on ``model``'s parameters.
        device: where to train; by default CUDA, then MPS, then the CPU.
        callbacks: ``Callback`` objects whose hooks run during training (see ``add_callback``).
        precision: ``"32"`` (float32 throughout) or ``"bf16-mixed"``: the forward pass and the loss under
            ``torch.autocast`` in bfloat16, the parameters, gradients and optimizer still float32 (no loss
            scaling: bfloat16 has float32's range). Lightning's names for the same two settings.

    Batches are ``(x, y)`` pairs, moved whole to the device (tensors inside tuples, lists and
    dicts too). A tensor ``x`` is passed as ``model(x)``, a tuple or list as ``model(*x)``, a
    dict as ``model(**x)``.

    Attributes:
        losses, val_losses: the mean training and validation loss of every completed epoch.
        learning_rates: the learning rate (of the first parameter group) of every step.
        total_epochs, total_steps: how many epochs and optimizer steps have run, across calls.
        device: the ``torch.device`` the model lives on.
        precision: ``"32"`` or ``"bf16-mixed"``, as given.
        callbacks: the callbacks, in the order their hooks run.
        should_stop: set by a callback to end training after the current epoch.
        rng_state: the random streams the next call continues (``seeding.get_rng_state``); None
            until the first call seeds them. Set it to ``get_rng_state(loader)`` to train on from
            the streams as they are now.

    Seeds: the first call seeds every random generator with 42 (or ``seed=``); later calls
    continue the same streams, so ``train(2); train(2)`` repeats ``train(4)`` exactly, and
    ``train_steps(3); train_steps(5)`` repeats ``train_steps(8)``. Checkpoints carry the streams.
    """

    def __init__(self, model, loss_fn, optimizer, device=None, callbacks=(), precision="32"):
        check_instance("model", model, nn.Module, "an nn.Module")
        check_instance("loss_fn", loss_fn, Callable, "callable, as loss_fn(prediction, y)")
        check_optimizer(model, optimizer)
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.precision = check_choice("precision", precision, PRECISIONS)
        self.to(default_device() if device is None else device)
        self.train_loader = None
        self.val_loader = None
        self.callbacks = []
        for callback in callbacks:
            self.add_callback(callback)

        self.losses = []
        self.val_losses = []
        self.learning_rates = []
        self.total_epochs = self.total_steps = 0
        self.should_stop = False  # a callback sets it to end training after the current epoch
        self.rng_state = None
        self._epoch = None  # the open epoch (an OpenEpoch): steps taken, their loss sum, the streams at its start
        self._live = None  # (loader, iterator): where the last call stopped in the open epoch, to read on from

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
        """Use ``train_loader`` for training and ``val_loader`` (optional) for validation. Another
        training loader starts a new epoch (with a warning): the steps of one left open stay in the step
        count and the rates, not in ``losses``."""
        check_instance("train_loader", train_loader, Iterable, "an iterable of (x, y) batches, such as a DataLoader")
        if val_loader is not None:
            check_instance("val_loader", val_loader, Iterable, "an iterable of (x, y) batches, such as a DataLoader")
        if self.train_loader is not None and train_loader is not self.train_loader:
            if self._epoch is not None and self._epoch.batches:
                warnings.warn(f"another training loader starts a new epoch: the open one, {self._epoch.batches} "
                              "step(s) in, is dropped (its steps stay in total_steps and the rates, not in losses); "
                              "to continue it, keep the loader it started with", stacklevel=2)
            self._epoch = self._live = None
        self.train_loader = train_loader
        self.val_loader = val_loader

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

    def batch_loss(self, batch):
        """``loss_fn(model(x), y)`` for ``batch``, an ``(x, y)`` pair moved to the device: a scalar tensor.
        Float inputs must have the model's dtype (a TypeError otherwise). Under bfloat16 autocast with
        ``precision="bf16-mixed"``."""
        x, y = move_to(split_batch(batch), self.device)
        mixed = self.precision == "bf16-mixed"
        with torch.autocast(self.device.type, dtype=torch.bfloat16) if mixed else contextlib.nullcontext():
            loss = self.loss_fn(forward(self.model, check_float_inputs(x, model_dtype(self.model))), y)
        if not (isinstance(loss, torch.Tensor) and loss.numel() == 1):
            got = type(loss).__name__
            if isinstance(loss, torch.Tensor):
                got = f"a tensor of shape {tuple(loss.shape)} (reduce it, e.g. with .mean())"
            elif isinstance(loss, (int, float)):
                got = f"{got} {loss!r} (no gradient flows through a number: return the tensor)"
            raise TypeError(f"loss_fn must return a scalar tensor, as nn.MSELoss() does, got {got}")
        return loss

    def step(self, loss):
        """Backpropagate ``loss``, let the callbacks see the gradients, update the weights."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self._call("on_after_backward")
        self.optimizer.step()

    def _train_step(self, batch):
        """One optimizer step on ``batch``, counted in the open epoch; returns its loss (a float)."""
        loss = self.batch_loss(batch)  # scalar
        value = loss.item()
        epoch, batch_index = self.total_epochs + 1, self._epoch.batches + 1  # the open epoch, counted from 1
        if not math.isfinite(value):
            raise FloatingPointError(
                f"the training loss became {value} at epoch {epoch}, batch {batch_index}; training "
                f"stopped before this step, and the history keeps the {self.total_epochs} completed "
                "epoch(s). Try a lower learning rate, gradient clipping, or check the data."
            )
        self.learning_rates.append(self.optimizer.param_groups[0]["lr"])
        self.step(loss)
        self._epoch.batches = batch_index
        self._epoch.loss_sum += value
        self.total_steps += 1
        self._call("on_batch_end", epoch, batch_index, value)
        return value

    def _open_epoch(self):
        """The training batches from where the epoch stands: a new epoch's (noting the streams at its
        start), or the rest of one a previous call stopped in: read on from its iterator, or after a
        load, drawn again from the epoch's start and skipped."""
        self.model.train()
        if self._epoch is not None:
            live, self._live = self._live, None  # kept again only by a call that stops cleanly
            if live is not None and live[0] is self.train_loader:
                return live[1]
            self._check_epoch_loader()
            return resume(self.train_loader, self._epoch.rng_state, self._epoch.batches)
        self._epoch = OpenEpoch.start(self.train_loader)
        return iter(self.train_loader)

    def _check_epoch_loader(self):
        """Raise a ValueError when the open epoch began on a loader of another length or batch size
        (files of earlier releases do not say: they pass)."""
        now = self._epoch.other_loader(self.train_loader)
        if now is not None:
            raise ValueError(f"the open epoch, {self._epoch.batches} step(s) in, began on a training loader of "
                             f"{self._epoch.n_batches} batches of {self._epoch.batch_size}, and this one has "
                             f"{now['n_batches']} batches of {now['batch_size']}: skipping its first steps would skip "
                             "other samples. Set the loader the epoch began with before load_checkpoint (or set "
                             "another one after it, to start a new epoch)")

    def _validate(self, epoch):
        """Mean batch loss over the validation loader, in eval mode and without gradients; a NaN or
        infinite loss raises ``FloatingPointError``, as in training."""
        total, n_batches = 0.0, 0
        with evaluating(self.model):
            for batch in self.val_loader:
                value = self.batch_loss(batch).item()
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

    def _close_epoch(self):
        """Validate, record both losses, let the callbacks see them; returns them."""
        epoch = self.total_epochs + 1
        n_batches, loss_sum = self._epoch.batches, self._epoch.loss_sum
        self._epoch = None
        if n_batches == 0:
            raise ValueError("the training loader yielded no batches")
        loss = loss_sum / n_batches
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

    def _start_streams(self, seed):
        if seed is not None or self.rng_state is None:
            set_seed(42 if seed is None else seed, self.train_loader)
        else:
            set_rng_state(self.rng_state, self.train_loader)

    def train(self, n_epochs, seed=None, progress=True):
        """Train until ``n_epochs`` more epochs have ended, validating after each one.

        Args:
            n_epochs: how many epochs to end now (an epoch ``train_steps`` left open is finished first).
            seed: reseed every generator with it first. By default the first call seeds with 42
                and later calls continue the streams where the previous call (or the loaded
                checkpoint) left them.
            progress: show a progress bar over epochs with the latest losses.

        A NaN or infinite loss, training or validation, raises ``FloatingPointError`` naming the epoch and batch;
        a validation one after recording the epoch (validation loss nan), as its training steps changed the weights.
        Ctrl-C stops after cleaning up: every completed epoch stays in the history, and the next call
        continues the open one. The model is left in eval mode.
        """
        check_positive_int("n_epochs", n_epochs)
        self._run(n_epochs, "epoch", seed, progress)

    def train_steps(self, n_steps, seed=None, progress=True):
        """Take ``n_steps`` more optimizer steps, starting the loader over as often as needed.

        Epochs end as in ``train`` (validated and recorded) whenever the loader runs out, and one
        whose last batch is the last step here ends now. A call may stop inside an epoch: the next
        call (or a checkpoint saved now) continues it exactly, so ``train_steps(a); train_steps(b)``
        repeats ``train_steps(a + b)``. ``seed``, ``progress`` and errors as in ``train``.
        """
        check_positive_int("n_steps", n_steps)
        self._run(n_steps, "step", seed, progress)

    def _run(self, count, unit, seed, progress):
        """Train until ``count`` more epochs have ended (``unit='epoch'``) or steps have run (``'step'``)."""
        if self.train_loader is None:
            raise RuntimeError("no data to train on: call set_loaders(train_loader, val_loader=None) first")
        self.should_stop = False
        bar = trange(count, desc=f"{unit}s", unit=unit, disable=not progress)
        done = (lambda: self.total_steps) if unit == "step" else (lambda: self.total_epochs)
        goal, started = done() + count, False
        stop_at = goal if unit == "step" else None  # a step goal may stop inside an epoch
        try:
            self._call("on_train_start")  # inside: a callback that raises here still gets on_train_end
            self._start_streams(seed)
            started = True
            while done() < goal and not self.should_stop:
                if self._take_steps(self._open_epoch(), stop_at, bar):
                    loss, val_loss = self._close_epoch()
                    if unit == "epoch":
                        _show(bar, loss=loss, val_loss=val_loss)
        except KeyboardInterrupt:
            rest = f"; the next call goes on {self._epoch.batches} step(s) into the open one" if self._epoch is not None else ""
            print(f"Training interrupted: the history keeps the {self.total_epochs} completed epoch(s){rest}.")
        finally:
            bar.close()
            if started:  # the streams go on from here; a call that failed before seeding leaves them unset
                self.rng_state = get_rng_state(self.train_loader)
            self.model.eval()
            self._call("on_train_end")

    def _take_steps(self, batches, stop_at, bar):
        """Train on ``batches`` until the loader runs out, or (``stop_at``: a step count, the bar
        counting steps) until ``total_steps`` reaches ``stop_at``; whether the epoch ended."""
        for batch in batches:
            loss = self._train_step(batch)
            if stop_at is not None:
                _show(bar, loss=loss)
                if self.total_steps == stop_at:
                    return self._pause_epoch(batches)
        return True

    def _pause_epoch(self, batches):
        """The call stops after a step: whether that step ended the epoch (``ran_out``); if not, the
        next call reads on from ``batches`` or, when one batch was taken to tell, draws the epoch again.
        Either way the loader and the streams end as an unbroken run would have them at this step."""
        where = ran_out(self.train_loader, batches, self._epoch.batches)
        self._live = (self.train_loader, batches) if where is Pass.READ_ON else None
        return where is Pass.ENDED

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

    # ----------------------------------------------------------------------------- state and checkpoints
    def state_dict(self):
        """Everything an exact resume needs: weights, optimizer, the callbacks' states (see
        ``Callback.state_dict``), histories, random streams and the open epoch; only tensors,
        numbers, strings and containers, so a ``weights_only`` load reads it (a callback whose state
        holds anything else is a TypeError naming it, here rather than when the file is loaded)."""
        return {
            "epoch": self.total_epochs,
            "steps": self.total_steps,
            "model_state_dict": self.model.state_dict(),
            "optimizer_state_dict": self.optimizer.state_dict(),
            "optimizer_class": type(self.optimizer).__name__,  # optional on loading: older files lack it
            "callbacks": self._callback_states(),
            "loss": list(self.losses),
            "val_loss": list(self.val_losses),
            "learning_rates": list(self.learning_rates),
            "rng_state": self.rng_state,
            "open_epoch": None if self._epoch is None else dataclasses.asdict(self._epoch),
        }

    def _callback_states(self):
        """Each stateful callback's state, checked to load back from a file (a TypeError naming it otherwise)."""
        states = {key: callback.state_dict() for key, callback in stateful(self.callbacks).items()}
        for key, state in states.items():
            check_state(key, state)
        return states

    def load_state_dict(self, state):
        """Put back a ``state_dict``, all or nothing: one from another model, optimizer class or set of
        stateful callbacks is refused with a ValueError naming the difference, before anything changes."""
        check_compatible(self, state)
        callbacks = stateful(self.callbacks)
        # copies: an optimizer keeps the tensors it is given, so two trainers would share Adam's moments
        load_all_or_nothing([self.model, self.optimizer, *callbacks.values()],
                            [state["model_state_dict"], copy.deepcopy(state["optimizer_state_dict"]),
                             *(copy.deepcopy(state["callbacks"][key]) for key in callbacks)])
        self.total_epochs, self.total_steps = int(state["epoch"]), int(state["steps"])
        self.losses = [float(loss) for loss in state["loss"]]
        self.val_losses = [float(loss) for loss in state["val_loss"]]
        self.learning_rates = [float(lr) for lr in state["learning_rates"]]
        self.rng_state = state["rng_state"]
        self._epoch = None if state["open_epoch"] is None else OpenEpoch(**state["open_epoch"])
        self._live = None  # the open epoch is resumed from its start's streams

    def save_checkpoint(self, path):
        """Save ``state_dict()`` to ``path``, atomically: everything needed to resume exactly."""
        save_checkpoint(self, path)

    def load_checkpoint(self, path):
        """Restore a ``save_checkpoint`` file onto this device, all or nothing (``load_state_dict``).

        Set the loaders and the callbacks that hold state (a scheduler, your own) first: the next
        call continues the saved random streams, and the epoch it stopped in. The file is read with
        ``weights_only=True``, so one that would run code is refused; files of earlier releases load.
        """
        self.load_state_dict(read_checkpoint(path, self.device))
