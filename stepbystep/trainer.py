"""The StepByStep trainer: the book's small training class, made safe to resume and hard to misuse.

A learner who read "Deep Learning with PyTorch Step-by-Step" finds the same methods here
(``set_loaders``, ``train``, ``predict``, ``correct``, ``loader_apply``, ``plot_losses``,
checkpoints, schedulers, the learning-rate range test, clipping, hooks, captured gradients and
filters). What changed is what happens at the edges: a progress bar, batches moved whole to the
device, seeded runs that continue exactly where they stopped (across checkpoints too), atomic
and safe checkpoint files, and clear errors before anything goes wrong deep inside PyTorch.
Plotting libraries are imported only when a figure is drawn.
"""
import copy
import functools
import math
from collections.abc import Callable, Iterable
from datetime import datetime

import numpy as np
import torch
from torch import nn
from torch.optim import lr_scheduler
from tqdm.auto import trange

from .checkpoint import atomic_save, safe_load
from .checks import (
    check_choice,
    check_fraction,
    check_instance,
    check_positive_int,
    check_positive_number,
    check_tensor,
)
from .containers import map_structure
from .devices import default_device, evaluating, move_to
from .seeding import get_rng_state, set_rng_state
from .seeding import set_seed as seed_everything

__all__ = ["StepByStep", "ChannelNormalizer"]

# Schedulers whose schedule is written in optimizer steps (or, for warm restarts, in fractions
# of an epoch) rather than in whole epochs.
_PER_BATCH_SCHEDULERS = (lr_scheduler.OneCycleLR, lr_scheduler.CyclicLR, lr_scheduler.CosineAnnealingWarmRestarts)
_INTERVALS = ("batch", "epoch")
# What every checkpoint holds, the book's included; ours add the scheduler, rates and streams.
_CHECKPOINT_KEYS = ("epoch", "model_state_dict", "optimizer_state_dict", "loss", "val_loss")


def _split_batch(batch):
    """A loader's batch -> ``(x, y)``, refusing anything that is not a pair."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        length = f" of length {len(batch)}" if hasattr(batch, "__len__") else ""
        raise TypeError(f"loaders must yield (x, y) batches, got {type(batch).__name__}{length}")
    return batch


def _to_numpy(output):
    """Model output (tensors in any nesting of tuples, lists and dicts) -> NumPy, same nesting."""
    return map_structure(lambda leaf: leaf.detach().cpu().numpy() if isinstance(leaf, torch.Tensor) else leaf,
                         output)


def _numpy_to_tensor(leaf):
    """A NumPy array becomes a tensor (floats in the default dtype); anything else is kept."""
    if isinstance(leaf, np.ndarray):
        tensor = torch.as_tensor(leaf)
        return tensor.to(torch.get_default_dtype()) if tensor.is_floating_point() else tensor
    return leaf


def _append_leaf(recorded, new):
    if isinstance(recorded, np.ndarray) and isinstance(new, np.ndarray):
        return np.concatenate([recorded, new])  # along the batch dimension
    return new  # None stays None; anything else is not batched


def _concat(recorded, new):
    """Append a hook's new output to what it recorded before, along the batch dimension."""
    return new if recorded is None else map_structure(_append_leaf, recorded, new)


def _record_copy(record, tensor):
    """Tensor hook: append a NumPy copy of ``tensor`` (the gradient may be changed in place later)."""
    record.append(tensor.detach().cpu().clone().numpy())


def _endless(loader):
    """The loader's batches, starting over at the end of every pass."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise ValueError("the loader yielded no batches")


def _check_optimizer(model, optimizer):
    check_instance("optimizer", optimizer, torch.optim.Optimizer, "a torch.optim.Optimizer")
    owned = {id(p) for p in model.parameters()}
    foreign = sum(id(p) not in owned for group in optimizer.param_groups for p in group["params"])
    if foreign:
        raise ValueError(
            f"the optimizer updates {foreign} tensor(s) that are not parameters of this model: "
            "build it from model.parameters() (after rebuilding a model, rebuild its optimizer too)"
        )


class _class_or_instance_method:
    """A method callable on an instance (``sbs.f(...)``) or on the class (``StepByStep.f(...)``,
    where ``self`` is None): the book calls ``StepByStep.loader_apply(loader, sbs.correct)``."""

    def __init__(self, function):
        self.function = function
        functools.update_wrapper(self, function)

    def __get__(self, instance, owner=None):
        return functools.wraps(self.function)(functools.partial(self.function, instance))


class ChannelNormalizer(nn.Module):
    """Standardise images per channel: ``(image - mean[c]) / std[c]``.

    What torchvision's ``transforms.Normalize`` does (torchvision is not needed here): it takes
    one image ``(C, H, W)`` or a batch ``(N, C, H, W)``. ``mean`` and ``std`` are ``(C,)``
    tensors, kept as buffers so the module follows ``.to(device)``.
    """

    def __init__(self, mean, std):
        super().__init__()
        mean = torch.as_tensor(mean, dtype=torch.get_default_dtype()).reshape(-1)  # (C,)
        std = torch.as_tensor(std, dtype=torch.get_default_dtype()).reshape(-1)  # (C,)
        if mean.shape != std.shape:
            raise ValueError(f"mean and std must have one value per channel each, got {len(mean)} and {len(std)}")
        if not (std > 0).all():
            raise ValueError(f"std must be positive in every channel, got {std.tolist()}")
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, images):
        """``images``: ``(C, H, W)`` or ``(N, C, H, W)`` -> the same shape, standardised."""
        check_tensor("images", images, ndim=(3, 4))
        return (images - self.mean[:, None, None]) / self.std[:, None, None]  # (..., C, H, W)

    def extra_repr(self):
        return f"mean={self.mean.tolist()}, std={self.std.tolist()}"


class StepByStep:
    """Trains a model with a loss function and an optimizer, and keeps the whole history.

    Args:
        model: the ``nn.Module`` to train.
        loss_fn: called as ``loss_fn(prediction, y)``; returns a scalar tensor.
        optimizer: a ``torch.optim.Optimizer`` built on ``model``'s parameters.
        device: where to train; by default CUDA, then MPS, then the CPU.

    Batches from the loaders are ``(x, y)`` pairs, moved whole to the device (tensors inside
    tuples, lists and dicts too). A tensor ``x`` is passed as ``model(x)``, a tuple or list as
    ``model(*x)`` and a dict as ``model(**x)``.

    Attributes:
        losses, val_losses: the mean training and validation loss of every completed epoch.
        learning_rates: the learning rate (of the first parameter group) used in every step.
        total_epochs: how many epochs the model has been trained for, across calls.
        device: the ``torch.device`` the model lives on.
        visualization: what the hooks recorded, by layer name (see ``attach_hooks``).

    Seeds: the first ``train`` call seeds every random generator with 42 (or ``seed=``);
    later calls continue the same streams, so ``train(2); train(2)`` repeats ``train(4)``
    exactly, even with other random code run in between. Checkpoints carry the streams.

    Differences from the book's class, each with its reason (the README has them as a table):

    - Random streams: later ``train`` calls continue them instead of reseeding with 42, so
      ``train(2); train(2)`` equals ``train(4)`` and a resumed checkpoint an unbroken run.
    - Learning rates: one float per optimizer step, with or without a scheduler: the rate
      each step really used, warm-ups and per-batch schedules included.
    - Validation losses: ``[]`` without a validation loader, not a ``None`` per epoch, so
      the list can be plotted and compared as it is.
    - Mode after train: eval mode, which predicting, plotting and hooks usually want; the
      next ``train`` call switches back.
    - predict: restores every submodule's mode and keeps integer dtypes: token ids stay
      integers, and predicting never switches dropout on by surprise.
    - Attention weights: the models keep ``alphas`` taken before dropout, the weights the
      model computed rather than a random thinning of them.
    - Hooks: ``attach_hooks`` records in eval mode only; training passes would mix many
      dropout-noisy batches into the figures.
    - Schedulers: per batch for ``OneCycleLR``, ``CyclicLR`` and (with the fractional epoch)
      ``CosineAnnealingWarmRestarts``, per epoch otherwise, ``interval=`` to choose;
      ``ReduceLROnPlateau`` needs a validation loader; ``set_optimizer`` drops a scheduler
      built on the old optimizer, which would otherwise change nothing.
    - Clipping: by value, by norm and during backprop combine (value first, then norm), and
      ``remove_clip`` removes them all, so adding one never silently replaces another.
    - Device: ``sbs.device`` is a ``torch.device``, not a string (``sbs.device.type``).
    - Checkpoints: they also hold the scheduler, the learning rates and the random streams,
      and are read with ``weights_only=True`` so a file cannot run code; the book's own
      files load too.
    - Range test: ``lr_range_test`` honours ``step_mode`` and zeroes the gradients before
      every step (the book's ignores the one and leaks stale gradients into the first step).
    - Captures: ``capture_gradients`` and ``capture_parameters`` record one NumPy array per
      training step, not nested lists per forward pass (validation passes are not steps).
    - Normaliser: ``make_normalizer`` returns a ``ChannelNormalizer`` rather than
      torchvision's ``Normalize``, which is not a dependency here.
    """

    def __init__(self, model, loss_fn, optimizer, device=None):
        check_instance("model", model, nn.Module, "an nn.Module")
        check_instance("loss_fn", loss_fn, Callable, "callable, as loss_fn(prediction, y)")
        _check_optimizer(model, optimizer)
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.device = None
        self.to(default_device() if device is None else device)

        self.train_loader = None
        self.val_loader = None
        self.scheduler = None
        self.scheduler_interval = None
        self.clip_value = None
        self.clip_norm = None
        self.writer = None

        self.losses = []
        self.val_losses = []
        self.learning_rates = []
        self.total_epochs = 0

        self.visualization = {}
        self.handles = {}
        self._gradients = {}
        self._parameters = {}
        self._clip_handles = []
        self._capture_handles = {"gradients": [], "parameters": []}
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
        self.device = device
        # reloading its own state makes the optimizer cast its buffers to the parameters' device
        self.optimizer.load_state_dict(self.optimizer.state_dict())
        return self

    def set_seed(self, seed=42):
        """Seed every random generator now; the next ``train`` call starts from these streams."""
        seed_everything(seed, self.train_loader)
        self._rng_state = get_rng_state(self.train_loader)

    def set_loaders(self, train_loader, val_loader=None):
        """Use ``train_loader`` for training and ``val_loader`` (optional) for validation."""
        for name, loader in (("train_loader", train_loader), ("val_loader", val_loader)):
            if loader is None and name == "val_loader":
                continue
            check_instance(name, loader, Iterable, "an iterable of (x, y) batches, such as a DataLoader")
        self.train_loader = train_loader
        self.val_loader = val_loader

    def set_optimizer(self, optimizer):
        """Train with ``optimizer`` from now on (built on this model's parameters).

        A scheduler set before was built on the old optimizer, so it is dropped: call
        ``set_lr_scheduler`` again with one built on the new optimizer.
        """
        _check_optimizer(self.model, optimizer)
        self.optimizer = optimizer
        self.scheduler = None
        self.scheduler_interval = None
        self.to(self.device)

    def set_lr_scheduler(self, scheduler, interval=None):
        """Step ``scheduler`` during training, recording the learning rate of every step.

        ``interval`` says when it steps: ``'batch'`` after every optimizer step, ``'epoch'``
        after every epoch. ``None`` picks ``'batch'`` for ``OneCycleLR`` and ``CyclicLR``
        (their schedules count steps) and for ``CosineAnnealingWarmRestarts`` (stepped with the
        fractional epoch ``epoch + i / n_batches``, as PyTorch documents), ``'epoch'``
        otherwise. ``ReduceLROnPlateau`` steps once per epoch with the validation loss, so it
        needs a validation loader.
        """
        if not (hasattr(scheduler, "step") and hasattr(scheduler, "optimizer")):
            raise TypeError(f"scheduler must be a learning-rate scheduler from torch.optim.lr_scheduler, "
                            f"got {type(scheduler).__name__}")
        if scheduler.optimizer is not self.optimizer:
            raise ValueError("scheduler must be built on this trainer's optimizer (sbs.optimizer), "
                             "got one built on another optimizer")
        if interval is None:
            interval = "batch" if isinstance(scheduler, _PER_BATCH_SCHEDULERS) else "epoch"
        check_choice("interval", interval, (*_INTERVALS, None))
        if isinstance(scheduler, lr_scheduler.ReduceLROnPlateau) and interval != "epoch":
            raise ValueError("ReduceLROnPlateau follows the validation loss, which exists once per epoch: "
                             "use interval='epoch'")
        self.scheduler = scheduler
        self.scheduler_interval = interval

    def set_clip_grad_value(self, clip_value):
        """Clip every gradient element to ``[-clip_value, clip_value]`` before each step."""
        self.clip_value = check_positive_number("clip_value", clip_value)

    def set_clip_grad_norm(self, max_norm, norm_type=2):
        """Rescale the gradients so their total ``norm_type``-norm is at most ``max_norm``.

        ``norm_type=float('inf')`` bounds the largest absolute gradient. Combined with
        ``set_clip_grad_value``, values are clipped first, then the norm.
        """
        self.clip_norm = (check_positive_number("max_norm", max_norm),
                          check_positive_number("norm_type", norm_type, allow_infinity=True))

    def set_clip_backprop(self, clip_value):
        """Clamp every parameter's gradient to ``[-clip_value, clip_value]`` during backprop.

        Tensor hooks on the parameters clamp each gradient as backpropagation computes it,
        before it reaches ``.grad`` (the book's way). Calling it again replaces the hooks.
        """
        check_positive_number("clip_value", clip_value)
        self._remove_clip_hooks()
        clamp = functools.partial(torch.clamp, min=-clip_value, max=clip_value)
        self._clip_handles = [p.register_hook(clamp) for p in self.model.parameters() if p.requires_grad]

    def _remove_clip_hooks(self):
        for handle in self._clip_handles:
            handle.remove()
        self._clip_handles = []

    def remove_clip(self):
        """Stop clipping gradients (by value, by norm and during backprop)."""
        self.clip_value = None
        self.clip_norm = None
        self._remove_clip_hooks()

    def set_tensorboard(self, name, folder="runs"):
        """Also log every epoch's losses to TensorBoard, under ``folder/name_<timestamp>``."""
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as error:
            raise ImportError("set_tensorboard needs the tensorboard package: pip install tensorboard") from error
        suffix = datetime.now().strftime("%Y%m%d%H%M%S")
        self.writer = SummaryWriter(f"{folder}/{name}_{suffix}")

    def add_graph(self):
        """Add the model's graph to TensorBoard, traced on the first training batch."""
        if self.writer is None:
            raise RuntimeError("no TensorBoard writer: call set_tensorboard(name) first")
        if self.train_loader is None:
            raise RuntimeError("add_graph traces the model on a training batch: call set_loaders first")
        x, _ = move_to(_split_batch(next(iter(self.train_loader))), self.device)
        self.writer.add_graph(self.model, x)

    # ----------------------------------------------------------------------------- training
    def _forward(self, x):
        if isinstance(x, dict):
            return self.model(**x)
        if isinstance(x, (tuple, list)):
            return self.model(*x)
        return self.model(x)

    def _clip_gradients(self):
        if self.clip_value is None and self.clip_norm is None:
            return
        parameters = [p for p in self.model.parameters() if p.grad is not None]
        if self.clip_value is not None:
            nn.utils.clip_grad_value_(parameters, self.clip_value)
        if self.clip_norm is not None:
            max_norm, norm_type = self.clip_norm
            nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=norm_type)

    def _steps_in_fractional_epochs(self):
        return (isinstance(self.scheduler, lr_scheduler.CosineAnnealingWarmRestarts)
                and self.scheduler_interval == "batch")

    def _train_epoch(self, epoch):
        """One pass over the training loader; returns the mean batch loss."""
        self.model.train()
        fractional = self._steps_in_fractional_epochs()
        n_batches = len(self.train_loader) if fractional else None
        total, n_done = 0.0, 0
        for batch_index, batch in enumerate(self.train_loader, start=1):
            x, y = move_to(_split_batch(batch), self.device)
            loss = self.loss_fn(self._forward(x), y)
            value = loss.item()
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"the training loss became {value} at epoch {epoch}, batch {batch_index}; training "
                    f"stopped before this step, and the history keeps the {self.total_epochs} completed "
                    "epoch(s). Try a lower learning rate, gradient clipping, or check the data."
                )
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self._clip_gradients()
            self.learning_rates.append(self.optimizer.param_groups[0]["lr"])
            self.optimizer.step()
            if fractional:  # the rate of the next step: epoch - 1 completed epochs plus this one's share
                self.scheduler.step(epoch - 1 + batch_index / n_batches)
            elif self.scheduler is not None and self.scheduler_interval == "batch":
                self.scheduler.step()
            total += value
            n_done += 1
        if n_done == 0:
            raise ValueError("the training loader yielded no batches")
        return total / n_done

    def _validate(self):
        """Mean batch loss over the validation loader, in eval mode and without gradients."""
        total, n_batches = 0.0, 0
        with evaluating(self.model):
            for batch in self.val_loader:
                x, y = move_to(_split_batch(batch), self.device)
                total += self.loss_fn(self._forward(x), y).item()
                n_batches += 1
        if n_batches == 0:
            raise ValueError("the validation loader yielded no batches")
        return total / n_batches

    def _start_streams(self, seed):
        if seed is not None:
            seed_everything(seed, self.train_loader)
        elif self._rng_state is None:
            seed_everything(42, self.train_loader)
        else:
            set_rng_state(self._rng_state, self.train_loader)

    def train(self, n_epochs, seed=None, progress=True):
        """Train for ``n_epochs`` more epochs, validating after each one.

        Args:
            n_epochs: how many epochs to run now.
            seed: reseed every generator with it first. By default the first call seeds with 42
                and later calls continue the streams where the previous call (or the loaded
                checkpoint) left them.
            progress: show a progress bar over epochs with the latest losses (a widget in
                JupyterLab, text elsewhere).

        A NaN or infinite loss raises ``FloatingPointError`` naming the epoch and batch.
        Ctrl-C stops after cleaning up: every completed epoch stays in the history. The model
        is left in eval mode.
        """
        check_positive_int("n_epochs", n_epochs)
        if self.train_loader is None:
            raise RuntimeError("no data to train on: call set_loaders(train_loader, val_loader=None) first")
        if isinstance(self.scheduler, lr_scheduler.ReduceLROnPlateau) and self.val_loader is None:
            raise ValueError("ReduceLROnPlateau steps with the validation loss: pass a val_loader to set_loaders")
        if self._steps_in_fractional_epochs() and not hasattr(self.train_loader, "__len__"):
            raise TypeError("CosineAnnealingWarmRestarts steps with the fractional epoch, which needs "
                            f"len(train_loader); got a {type(self.train_loader).__name__} without a length "
                            "(or use set_lr_scheduler(scheduler, interval='epoch'))")
        self._start_streams(seed)
        bar = trange(n_epochs, desc="epochs", unit="epoch", disable=not progress)
        try:
            for _ in bar:
                epoch = self.total_epochs + 1
                loss = self._train_epoch(epoch)
                val_loss = self._validate() if self.val_loader is not None else None
                self.losses.append(loss)
                if val_loss is not None:
                    self.val_losses.append(val_loss)
                self.total_epochs = epoch
                self._end_of_epoch(epoch, loss, val_loss)
                bar.set_postfix(loss=f"{loss:.4f}", **({} if val_loss is None else {"val_loss": f"{val_loss:.4f}"}))
        except KeyboardInterrupt:
            print(f"Training interrupted: the history keeps the {self.total_epochs} completed epoch(s).")
        finally:
            bar.close()
            self._rng_state = get_rng_state(self.train_loader)
            self.model.eval()

    def _end_of_epoch(self, epoch, loss, val_loss):
        if self.scheduler is not None and self.scheduler_interval == "epoch":
            if isinstance(self.scheduler, lr_scheduler.ReduceLROnPlateau):
                self.scheduler.step(val_loss)
            else:
                self.scheduler.step()
        if self.writer is not None:
            scalars = {"training": loss} if val_loss is None else {"training": loss, "validation": val_loss}
            self.writer.add_scalars("loss", scalars, epoch)
            self.writer.flush()

    def lr_range_test(self, data_loader, end_lr, num_iter=100, step_mode="exp", alpha=0.05, ax=None):
        """Train briefly with a growing learning rate and plot the loss against it.

        The rate goes from the optimizer's current one to ``end_lr`` over ``num_iter`` steps,
        geometrically (``step_mode='exp'``, drawn on a log axis) or evenly (``'linear'``);
        other parameter groups are scaled by the same factor. The loss is smoothed
        exponentially with weight ``alpha`` on the newest value, and the test stops early if
        it stops being finite. Gradients are zeroed before every step and clipped as in
        training. Afterwards the model's weights, buffers and modes and the optimizer's state
        are what they were. Returns ``(tracking, fig)``, ``tracking = {'loss': [...], 'lr': [...]}``.
        """
        check_instance("data_loader", data_loader, Iterable, "an iterable of (x, y) batches")
        check_positive_number("end_lr", end_lr)
        check_positive_int("num_iter", num_iter)
        check_choice("step_mode", step_mode, ("exp", "linear"))
        check_fraction("alpha", alpha, allow_one=True)
        groups = self.optimizer.param_groups
        start_lr = groups[0]["lr"]
        if not start_lr > 0:
            raise ValueError(f"the optimizer's learning rate must be positive (the test starts there), "
                             f"got {start_lr!r}")
        base_lrs = [group["lr"] for group in groups]
        saved_model = copy.deepcopy(self.model.state_dict())
        saved_optimizer = copy.deepcopy(self.optimizer.state_dict())
        modes = [(module, module.training) for module in self.model.modules()]
        tracking = {"loss": [], "lr": []}
        batches = _endless(data_loader)
        try:
            self.model.train()
            for iteration in range(num_iter):
                progress = iteration / max(num_iter - 1, 1)  # 0 at the first step, 1 at the last
                if step_mode == "exp":
                    factor = (end_lr / start_lr) ** progress
                else:
                    factor = 1 + progress * (end_lr / start_lr - 1)
                for group, base_lr in zip(groups, base_lrs):
                    group["lr"] = base_lr * factor
                x, y = move_to(_split_batch(next(batches)), self.device)
                loss = self.loss_fn(self._forward(x), y)
                value = loss.item()
                if not math.isfinite(value):
                    break
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self._clip_gradients()
                self.optimizer.step()
                previous = tracking["loss"][-1] if tracking["loss"] else value
                tracking["loss"].append(alpha * value + (1 - alpha) * previous)
                tracking["lr"].append(groups[0]["lr"])
        finally:
            self.model.load_state_dict(saved_model)
            self.optimizer.load_state_dict(saved_optimizer)
            self.optimizer.zero_grad(set_to_none=True)
            for module, training in modes:
                module.training = training
        from .plots.training import lr_range_curve

        return tracking, lr_range_curve(tracking, log_scale=step_mode == "exp", ax=ax)

    # ----------------------------------------------------------------------------- using the model
    def predict(self, x):
        """The model's output for ``x`` as NumPy, computed in eval mode without gradients.

        Every submodule's mode is restored afterwards. Tensors keep their dtype (token ids stay
        integers); NumPy floating arrays become PyTorch's default float dtype, other NumPy
        arrays keep theirs. ``x`` may be a tuple or dict, as for the loaders; the output may be
        a tensor or any nesting of them (tuples, named tuples, lists, dicts), kept as it is.
        """
        x = map_structure(_numpy_to_tensor, x)
        with evaluating(self.model):
            output = self._forward(move_to(x, self.device))
        return _to_numpy(output)

    def correct(self, x, y, threshold=0.5):
        """Count the correct predictions for ``x`` per class: a ``(n_classes, 2)`` tensor.

        Row ``c`` is ``[n_correct, n_total]`` for the samples whose label is ``c``. The model's
        output must be ``(n, n_outputs)``: with several columns the prediction is the argmax;
        with one column the task is binary and class 1 is predicted when the probability
        exceeds ``threshold``. That probability is the output itself when the model is an
        ``nn.Sequential`` ending in ``nn.Sigmoid``, and ``sigmoid(output)`` otherwise (the
        output is then taken as a logit). ``y`` holds class indices, shape ``(n,)`` or
        ``(n, 1)`` (whole-number floats are fine). Computed in eval mode without gradients.
        """
        check_fraction("threshold", threshold)
        with evaluating(self.model):
            yhat = self._forward(move_to(x, self.device))
        check_tensor("the model's output", yhat, ndim=2)
        check_tensor("y", y, ndim=(1, 2))
        labels = y.to(self.device).reshape(-1)  # (n,)
        if len(labels) != len(yhat):
            raise ValueError(f"y must hold one label per sample: {len(yhat)} outputs, got {len(labels)} labels")
        if labels.is_floating_point() and not torch.equal(labels, labels.round()):
            raise ValueError("y must hold class indices (whole numbers), got fractional values")
        labels = labels.long()  # (n,)
        if yhat.shape[1] > 1:
            n_classes = yhat.shape[1]
            predicted = yhat.argmax(dim=1)  # (n,)
        else:
            n_classes = 2
            is_probability = isinstance(self.model, nn.Sequential) and isinstance(self.model[-1], nn.Sigmoid)
            probability = yhat[:, 0] if is_probability else torch.sigmoid(yhat[:, 0])  # (n,)
            predicted = (probability > threshold).long()  # (n,)
        if len(labels) and (labels.min() < 0 or labels.max() >= n_classes):
            raise ValueError(f"y must hold class indices in 0..{n_classes - 1} for this output, "
                             f"got values from {labels.min().item()} to {labels.max().item()}")
        totals = torch.bincount(labels, minlength=n_classes)  # (n_classes,)
        hits = torch.bincount(labels[predicted == labels], minlength=n_classes)  # (n_classes,)
        return torch.stack([hits, totals], dim=1).cpu()  # (n_classes, 2)

    def count_parameters(self):
        """The number of trainable parameters."""
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def plot_losses(self):
        """Training and validation losses per epoch; returns the Figure."""
        from .plots.training import loss_curves

        return loss_curves(self.losses, self.val_losses)

    @_class_or_instance_method
    def loader_apply(self, loader, func, reduce="sum"):
        """Apply ``func(x, y)`` to every batch of ``loader`` without gradients; sum or average.

        Each call returns a tensor; the results are stacked and summed (``reduce='sum'``, the
        book's default) or averaged (``'mean'``) over batches. It works on a trainer,
        ``sbs.loader_apply(loader, func)``, which first moves each batch to ``sbs.device``, and
        on the class as the book calls it, ``StepByStep.loader_apply(loader, sbs.correct)``,
        which passes the batches as they come (``sbs.correct`` moves them itself).
        """
        check_choice("reduce", reduce, ("sum", "mean"))
        check_instance("func", func, Callable, "callable as func(x, y)")
        results = []
        with torch.no_grad():
            for batch in loader:
                x, y = _split_batch(batch)
                if self is not None:
                    x, y = move_to((x, y), self.device)
                results.append(torch.as_tensor(func(x, y)))
        if not results:
            raise ValueError("the loader yielded no batches")
        stacked = torch.stack(results)  # (n_batches, ...)
        return stacked.sum(dim=0) if reduce == "sum" else stacked.float().mean(dim=0)

    @staticmethod
    def statistics_per_channel(images, labels):
        """Per-channel sums over a batch of images, for ``make_normalizer``: a ``(3, C)`` tensor.

        ``images`` is ``(N, C, H, W)``; ``labels`` is ignored (the signature fits
        ``loader_apply``). The rows are the number of images, the sum of the images' means and
        the sum of the images' standard deviations, per channel, as in the book.
        """
        check_tensor("images", images, ndim=4)
        n_images, n_channels = images.shape[:2]
        per_image = images.reshape(n_images, n_channels, -1).float()  # (N, C, H*W)
        counts = torch.full((n_channels,), float(n_images))  # (C,)
        sum_means = per_image.mean(dim=2).sum(dim=0).cpu()  # (C,)
        sum_stds = per_image.std(dim=2).sum(dim=0).cpu()  # (C,)
        return torch.stack([counts, sum_means, sum_stds])  # (3, C)

    @staticmethod
    def make_normalizer(loader):
        """A ``ChannelNormalizer`` with the per-channel mean and standard deviation of ``loader``'s images.

        As in the book, both are averages over images of each image's own mean and standard
        deviation (the spread between images is not included). Use it as a transform:
        ``normalizer(images)`` for ``(C, H, W)`` or ``(N, C, H, W)`` tensors.
        """
        counts, sum_means, sum_stds = StepByStep.loader_apply(loader, StepByStep.statistics_per_channel)  # (C,) each
        return ChannelNormalizer(sum_means / counts, sum_stds / counts)

    # ----------------------------------------------------------------------------- hooks
    def _layers(self, layers_to_hook):
        """Layer names (one string or a list) -> ``{name: module}``, refusing unknown names."""
        if isinstance(layers_to_hook, str):
            layers_to_hook = [layers_to_hook]
        modules = dict(self.model.named_modules())
        unknown = [name for name in layers_to_hook if name not in modules or name == ""]
        if unknown:
            available = ", ".join(name for name in modules if name) or "none"
            raise ValueError(f"no layer named {unknown} in the model; its layers are: {available}")
        return {name: modules[name] for name in layers_to_hook}

    def attach_hooks(self, layers_to_hook, hook_fn=None):
        """Register forward hooks on the named layers (names as in ``model.named_modules()``).

        Without ``hook_fn``, each layer's outputs in eval mode (``predict``, validation) are
        recorded in ``self.visualization[name]`` as NumPy, concatenated over calls along the
        batch dimension. A layer that returns a tuple, named tuple, list or dict is recorded in
        the same container, each tensor concatenated (``None`` entries kept). With
        ``hook_fn(module, inputs, outputs)``, that function is registered.
        """
        for name, module in self._layers(layers_to_hook).items():
            if name in self.handles:
                self.handles.pop(name).remove()
            self.visualization[name] = None
            hook = hook_fn if hook_fn is not None else self._recorder(name)
            self.handles[name] = module.register_forward_hook(hook)

    def _recorder(self, name):
        def record(module, inputs, outputs):
            if self.model.training:
                return
            self.visualization[name] = _concat(self.visualization[name], _to_numpy(outputs))
        return record

    def capture_gradients(self, layers_to_hook):
        """Record the gradient of every parameter of the named layers at every backward pass.

        ``self._gradients[layer][parameter]`` is a list with one NumPy array per step, taken as
        backpropagation computes it (before any clipping). A new call starts new records.
        """
        layers = self._layers(layers_to_hook)
        self._remove_captures("gradients")
        self._gradients = {}
        for name, layer in layers.items():
            self._gradients[name] = {}
            for parameter_name, parameter in layer.named_parameters():
                record = self._gradients[name][parameter_name] = []
                if parameter.requires_grad:
                    handle = parameter.register_hook(functools.partial(_record_copy, record))
                    self._capture_handles["gradients"].append(handle)

    def capture_parameters(self, layers_to_hook):
        """Record the value of every parameter of the named layers at every training step.

        ``self._parameters[layer][parameter]`` is a list with one NumPy array per training
        forward pass, the values that step starts from. A new call starts new records.
        """
        layers = self._layers(layers_to_hook)
        self._remove_captures("parameters")
        self._parameters = {}
        for name, layer in layers.items():
            records = self._parameters[name] = {parameter_name: [] for parameter_name, _ in layer.named_parameters()}

            def record(module, inputs, outputs, records=records):
                if not self.model.training:
                    return
                for parameter_name, parameter in module.named_parameters():
                    _record_copy(records[parameter_name], parameter)

            self._capture_handles["parameters"].append(layer.register_forward_hook(record))

    def _remove_captures(self, kind):
        for handle in self._capture_handles[kind]:
            handle.remove()
        self._capture_handles[kind] = []

    def remove_hooks(self):
        """Remove every hook, captures included (what they recorded stays)."""
        for handle in self.handles.values():
            handle.remove()
        self.handles = {}
        for kind in self._capture_handles:
            self._remove_captures(kind)

    def visualize_filters(self, layer_name, **kwargs):
        """The filters of an ``nn.Conv2d`` layer, one small image per filter and input channel.

        ``kwargs`` go to matplotlib's ``imshow`` (for example ``cmap='viridis'``). Returns the Figure.
        """
        layer = self._layers(layer_name)[layer_name]
        if not isinstance(layer, nn.Conv2d):
            raise TypeError(f"visualize_filters shows the filters of an nn.Conv2d layer; "
                            f"{layer_name!r} is a {type(layer).__name__}")
        from .plots.filters import filter_grid

        return filter_grid(layer.weight.detach().cpu().numpy(), layer_name, **kwargs)

    def visualize_outputs(self, layers, n_images=10, y=None, yhat=None):
        """What the hooked ``layers`` output for the first ``n_images`` images (see ``attach_hooks``).

        Each layer gives a row per channel of a 4-D output, one row otherwise; ``y`` and
        ``yhat`` (labels and predictions) title the columns when given. Returns the Figure.
        """
        if isinstance(layers, str):
            layers = [layers]
        check_positive_int("n_images", n_images)
        missing = [name for name in layers if not isinstance(self.visualization.get(name), np.ndarray)]
        if missing:
            recorded = [name for name, value in self.visualization.items() if isinstance(value, np.ndarray)]
            raise ValueError(f"no recorded outputs to draw for {missing}: call attach_hooks on them, then predict "
                             f"(outputs recorded as tuples or dicts cannot be drawn); arrays recorded so far: "
                             f"{recorded or 'none'}")
        from .plots.filters import output_grid

        return output_grid({name: self.visualization[name] for name in layers}, n_images=n_images, y=y, yhat=yhat)

    # ----------------------------------------------------------------------------- checkpoints
    def save_checkpoint(self, path):
        """Save everything needed to resume exactly: model, optimizer, scheduler, epoch count,
        loss histories and every random stream. The file is written atomically."""
        checkpoint = {
            "epoch": self.total_epochs,
            "model_state_dict": self.model.state_dict(),
            "optimizer_state_dict": self.optimizer.state_dict(),
            "scheduler_state_dict": None if self.scheduler is None else self.scheduler.state_dict(),
            "loss": list(self.losses),
            "val_loss": list(self.val_losses),
            "learning_rates": list(self.learning_rates),
            "rng_state": self._rng_state,
        }
        atomic_save(checkpoint, path)

    def load_checkpoint(self, path):
        """Restore a checkpoint saved by ``save_checkpoint``, or by the book's class, onto this device.

        Set the loaders (and the scheduler, if the run had one) first: the next ``train`` call
        continues the saved random streams, the train loader's shuffling included. Files are
        read with ``weights_only=True``: one that would run code is refused. The book's files
        hold no scheduler, rates or streams: a scheduler set here starts afresh, and the next
        ``train`` seeds with 42. Everything is checked before anything changes: a refused
        checkpoint leaves the trainer as it was.
        """
        checkpoint = safe_load(path, map_location=self.device)
        missing = [key for key in _CHECKPOINT_KEYS if not isinstance(checkpoint, dict) or key not in checkpoint]
        if missing:
            raise ValueError(f"{str(path)!r} is not a StepByStep checkpoint: it lacks {missing}")
        from_book = "scheduler_state_dict" not in checkpoint
        saved_scheduler = checkpoint.get("scheduler_state_dict")
        if not from_book and (saved_scheduler is None) != (self.scheduler is None):
            raise ValueError(
                "the checkpoint was saved " + ("with" if saved_scheduler is not None else "without")
                + " a learning-rate scheduler and this trainer has " + ("one" if self.scheduler else "none")
                + ": call set_lr_scheduler(...) to match before load_checkpoint"
            )
        previous = self._module_states()
        try:
            self.model.load_state_dict(checkpoint["model_state_dict"])
            self.optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
            if saved_scheduler is not None:
                self.scheduler.load_state_dict(saved_scheduler)
        except Exception:
            self._restore_module_states(previous)
            raise
        self.total_epochs = int(checkpoint["epoch"])
        self.losses = [float(loss) for loss in checkpoint["loss"]]
        # the book appends None for every epoch trained without a validation loader
        self.val_losses = [float(loss) for loss in checkpoint["val_loss"] if loss is not None]
        self.learning_rates = [float(lr) for lr in checkpoint.get("learning_rates", [])]
        self._rng_state = checkpoint.get("rng_state")

    def _module_states(self):
        """Copies of the model's, optimizer's and scheduler's states, to roll back a failed load."""
        return {
            "model": copy.deepcopy(self.model.state_dict()),
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "scheduler": None if self.scheduler is None else copy.deepcopy(self.scheduler.state_dict()),
        }

    def _restore_module_states(self, states):
        self.model.load_state_dict(states["model"])
        self.optimizer.load_state_dict(states["optimizer"])
        if states["scheduler"] is not None:
            self.scheduler.load_state_dict(states["scheduler"])
