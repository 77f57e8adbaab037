"""The book's StepByStep: the core trainer plus every method of the book's class.

Each extra method is a short delegator to a training collaborator or to a figure in
``stepbystep.plots``, so the book's calls (``sbs.lr_range_test(...)``, ``sbs.attach_hooks(...)``,
``StepByStep.loader_apply(loader, sbs.correct)``) run unchanged and give the book's numbers.
"""
import functools
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ..serialization import safe_load
from ..checks import check_choice, check_fraction, check_instance, check_positive_int, check_tensor
from ..devices import evaluating, move_to
from ..plots.filters import filter_grid, output_grid
from ..plots.training import loss_curves, lr_range_curve
from ..seeding import get_rng_state, set_seed
from ..training import trainer as core
from ..training.batches import forward, split_batch
from ..training.captures import Captures, named_layers
from ..training.callbacks import stateful
from ..training.checkpoint import BOOK_KEYS, check_keys, upgrade
from ..training.lr_finder import lr_range_test
from ..training.schedulers import LRScheduler
from ..training.tensorboard import TensorBoard, summary_writer
from .models import without_book_tables

__all__ = ["StepByStep", "ChannelNormalizer", "from_book"]


def from_book(checkpoint, callbacks):
    """A checkpoint the book's class wrote, in our format: no rates, no streams; others as they are.

    A book file holds no scheduler: the trainer's own ``callbacks`` (if any hold state) keep it.
    The book appends a ``None`` validation loss for every epoch trained without a validation loader.
    """
    is_book = (isinstance(checkpoint, dict) and not {"scheduler_state_dict", "callbacks"} & set(checkpoint)
               and all(key in checkpoint for key in BOOK_KEYS))
    if not is_book:
        return checkpoint
    return {**checkpoint,
            "callbacks": {key: callback.state_dict() for key, callback in stateful(callbacks).items()},
            "val_loss": [loss for loss in checkpoint["val_loss"] if loss is not None],
            "learning_rates": [], "rng_state": None, "steps": 0, "open_epoch": None}


class _class_or_instance_method:
    """A method callable on an instance (``sbs.f(...)``) or on the class (``StepByStep.f(...)``,
    where ``self`` is None): the book calls ``StepByStep.loader_apply(loader, sbs.correct)``."""

    def __init__(self, function):
        self.function = function
        functools.update_wrapper(self, function)

    def __get__(self, instance, owner=None):
        return functools.wraps(self.function)(functools.partial(self.function, instance))


class ChannelNormalizer(nn.Module):
    """Standardise images per channel, ``(image - mean[c]) / std[c]``, as torchvision's ``Normalize``.

    Takes one image ``(C, H, W)`` or a batch ``(N, C, H, W)``; ``mean`` and ``std`` are ``(C,)``
    buffers, so the module follows ``.to(device)``.
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


class StepByStep(core.StepByStep):
    """The core trainer with the book's whole API: figures, hooks, captures, clipping setters,
    TensorBoard, the range test, ``correct``/``loader_apply`` and the book's checkpoints.

    ``visualization[layer]`` holds what ``attach_hooks`` recorded.
    """

    def __init__(self, model, loss_fn, optimizer, device=None, callbacks=()):
        super().__init__(model, loss_fn, optimizer, device, callbacks)
        self.captures = Captures(model)
        self.writer = None

    visualization = property(lambda self: self.captures.outputs)
    handles = property(lambda self: self.captures.handles)
    _gradients = property(lambda self: self.captures.gradients)
    _parameters = property(lambda self: self.captures.parameters)

    # ----------------------------------------------------------------------------- set-up
    def set_seed(self, seed=42):
        """Seed every random generator now; the next ``train`` call starts from these streams."""
        set_seed(seed, self.train_loader)
        self.rng_state = get_rng_state(self.train_loader)

    def set_optimizer(self, optimizer):
        """Train with ``optimizer`` from now on; a scheduler built on the old one is dropped."""
        core.check_optimizer(self.model, optimizer)
        self.optimizer = optimizer
        self._set_callback(LRScheduler, None)
        self.to(self.device)

    def set_clip_grad_value(self, clip_value):
        """Clip every gradient element to ``[-clip_value, clip_value]`` before each step."""
        self._clipping().clip_value(clip_value)

    def set_clip_backprop(self, clip_value):
        """Clamp every gradient to ``[-clip_value, clip_value]`` during backprop (replaces earlier hooks)."""
        self._clipping().clip_backprop(self.model, clip_value)

    def remove_clip(self):
        """Stop clipping gradients (by value, by norm and during backprop)."""
        self._clipping().remove()

    def set_tensorboard(self, name, folder="runs"):
        """Also log every epoch's losses to TensorBoard, under ``folder/name_<timestamp>``."""
        self.writer = summary_writer(name, folder)
        self._set_callback(TensorBoard, TensorBoard(self.writer))

    def add_graph(self):
        """Add the model's graph to TensorBoard, traced on the first training batch."""
        if self.writer is None:
            raise RuntimeError("no TensorBoard writer: call set_tensorboard(name) first")
        if self.train_loader is None:
            raise RuntimeError("add_graph traces the model on a training batch: call set_loaders first")
        x, _ = move_to(split_batch(next(iter(self.train_loader))), self.device)
        self.writer.add_graph(self.model, x)

    # ----------------------------------------------------------------------------- figures and the range test
    def plot_losses(self):
        """Training and validation losses per epoch; returns the Figure."""
        return loss_curves(self.losses, self.val_losses)

    def lr_range_test(self, data_loader, end_lr, num_iter=100, step_mode="exp", alpha=0.05, ax=None):
        """Run ``training.lr_range_test`` and plot it; returns ``(tracking, fig)``."""
        tracking = lr_range_test(self, data_loader, end_lr, num_iter, step_mode, alpha)
        return tracking, lr_range_curve(tracking, log_scale=step_mode == "exp", ax=ax)

    # ----------------------------------------------------------------------------- hooks and captures
    def attach_hooks(self, layers_to_hook, hook_fn=None):
        """Record the named layers' outputs in eval mode in ``visualization`` (see ``Captures``)."""
        self.captures.attach_hooks(layers_to_hook, hook_fn)

    def capture_gradients(self, layers_to_hook):
        """Record the named layers' gradients at every backward pass in ``_gradients``."""
        self.captures.capture_gradients(layers_to_hook)

    def capture_parameters(self, layers_to_hook):
        """Record the named layers' parameters at every training step in ``_parameters``."""
        self.captures.capture_parameters(layers_to_hook)

    def remove_hooks(self):
        """Remove every hook, captures included (what they recorded stays)."""
        self.captures.remove_hooks()

    def visualize_filters(self, layer_name, **kwargs):
        """The filters of an ``nn.Conv2d`` layer, one image per filter and input channel; the Figure."""
        layer = named_layers(self.model, layer_name)[layer_name]
        if not isinstance(layer, nn.Conv2d):
            raise TypeError(f"visualize_filters shows the filters of an nn.Conv2d layer; "
                            f"{layer_name!r} is a {type(layer).__name__}")
        return filter_grid(layer.weight.detach().cpu().numpy(), layer_name, **kwargs)

    def visualize_outputs(self, layers, n_images=10, y=None, yhat=None):
        """What the hooked ``layers`` output for the first ``n_images`` images; the Figure."""
        layers = [layers] if isinstance(layers, str) else layers
        check_positive_int("n_images", n_images)
        drawable = {name: value for name, value in self.visualization.items() if isinstance(value, np.ndarray)}
        missing = [name for name in layers if name not in drawable]
        if missing:
            raise ValueError(f"no recorded outputs to draw for {missing}: call attach_hooks on them, then predict "
                             f"(outputs recorded as tuples or dicts cannot be drawn); arrays recorded so far: "
                             f"{list(drawable) or 'none'}")
        return output_grid({name: drawable[name] for name in layers}, n_images=n_images, y=y, yhat=yhat)

    # ----------------------------------------------------------------------------- accuracy and normalisation
    def correct(self, x, y, threshold=0.5):
        """Correct predictions per class: a ``(n_classes, 2)`` tensor of ``[n_correct, n_total]``.

        The output must be ``(n, n_outputs)``: the argmax with several columns; with one, class 1
        when the probability exceeds ``threshold`` (the output itself after a final
        ``nn.Sigmoid`` of an ``nn.Sequential``, else ``sigmoid(output)``). ``y``: class indices,
        ``(n,)`` or ``(n, 1)``. Eval mode, no gradients.
        """
        check_fraction("threshold", threshold)
        with evaluating(self.model):
            yhat = forward(self.model, move_to(x, self.device))  # (n, n_outputs)
        check_tensor("the model's output", yhat, ndim=2)
        check_tensor("y", y, ndim=(1, 2))
        labels = y.to(self.device).reshape(-1)  # (n,)
        if len(labels) != len(yhat):
            raise ValueError(f"y must hold one label per sample: {len(yhat)} outputs, got {len(labels)} labels")
        if labels.is_floating_point() and not torch.equal(labels, labels.round()):
            raise ValueError("y must hold class indices (whole numbers), got fractional values")
        labels = labels.long()  # (n,)
        if yhat.shape[1] > 1:
            n_classes, predicted = yhat.shape[1], yhat.argmax(dim=1)  # (n,)
        else:
            is_probability = isinstance(self.model, nn.Sequential) and isinstance(self.model[-1], nn.Sigmoid)
            probability = yhat[:, 0] if is_probability else torch.sigmoid(yhat[:, 0])  # (n,)
            n_classes, predicted = 2, (probability > threshold).long()  # (n,)
        if len(labels) and (labels.min() < 0 or labels.max() >= n_classes):
            raise ValueError(f"y must hold class indices in 0..{n_classes - 1} for this output, "
                             f"got values from {labels.min().item()} to {labels.max().item()}")
        totals = torch.bincount(labels, minlength=n_classes)  # (n_classes,)
        hits = torch.bincount(labels[predicted == labels], minlength=n_classes)  # (n_classes,)
        return torch.stack([hits, totals], dim=1).cpu()  # (n_classes, 2)

    @_class_or_instance_method
    def loader_apply(self, loader, func, reduce="sum"):
        """Apply ``func(x, y)`` to every batch of ``loader`` without gradients; sum or average.

        The results are stacked and summed (``reduce='sum'``, the book's default) or averaged
        (``'mean'``) over batches. On a trainer, ``sbs.loader_apply(loader, func)`` first moves
        each batch to ``sbs.device``; on the class, ``StepByStep.loader_apply(loader,
        sbs.correct)`` as the book calls it, the batches are passed as they come.
        """
        check_choice("reduce", reduce, ("sum", "mean"))
        check_instance("func", func, Callable, "callable as func(x, y)")
        results = []
        with torch.no_grad():
            for batch in loader:
                x, y = split_batch(batch)
                if self is not None:
                    x, y = move_to((x, y), self.device)
                results.append(torch.as_tensor(func(x, y)))
        if not results:
            raise ValueError("the loader yielded no batches")
        stacked = torch.stack(results)  # (n_batches, ...)
        return stacked.sum(dim=0) if reduce == "sum" else stacked.float().mean(dim=0)

    @staticmethod
    def statistics_per_channel(images, labels):
        """Per-channel ``[n_images, sum of image means, sum of image stds]``: a ``(3, C)`` tensor.

        ``images`` is ``(N, C, H, W)``; ``labels`` is ignored (the signature fits ``loader_apply``).
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
        """A ``ChannelNormalizer`` with the mean over images of each image's per-channel mean and std."""
        counts, sum_means, sum_stds = StepByStep.loader_apply(loader, StepByStep.statistics_per_channel)  # (C,) each
        return ChannelNormalizer(sum_means / counts, sum_stds / counts)

    # ----------------------------------------------------------------------------- checkpoints
    def load_checkpoint(self, path):
        """Restore a checkpoint from ``save_checkpoint`` or from the book's class, all or nothing.

        The book's files hold no scheduler, rates or streams: a scheduler set here carries on,
        and the next ``train`` seeds with 42.
        """
        checkpoint = check_keys(from_book(upgrade(safe_load(path, map_location=self.device)), self.callbacks), path)
        if isinstance(checkpoint["model_state_dict"], dict):  # the book's positional tables, checked and dropped
            checkpoint["model_state_dict"] = without_book_tables(self.model, checkpoint["model_state_dict"])
        self.load_state_dict(checkpoint)
