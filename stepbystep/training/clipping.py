"""Gradient clipping as a callback: by value, by norm, and during backprop."""
import functools

import torch
from torch import nn

from ..checks import check_positive_number
from .callbacks import Callback

__all__ = ["GradientClipping"]


class GradientClipping(Callback):
    """Clip the gradients after every backward pass, before the optimizer step.

    By value (every element into ``[-value, value]``) and by norm (the total ``norm_type``-norm
    at most ``max_norm``) combine: value first, then norm. ``clip_backprop`` clamps each
    gradient while backpropagation computes it instead (tensor hooks, the book's way).
    """

    def __init__(self, value=None, max_norm=None, norm_type=2):
        self.value = self.max_norm = None
        self.norm_type = 2
        self._handles = []
        if value is not None:
            self.clip_value(value)
        if max_norm is not None:
            self.clip_norm(max_norm, norm_type)

    def clip_value(self, value):
        self.value = check_positive_number("clip_value", value)

    def clip_norm(self, max_norm, norm_type=2):
        self.max_norm = check_positive_number("max_norm", max_norm)
        self.norm_type = check_positive_number("norm_type", norm_type, allow_infinity=True)

    def clip_backprop(self, model, value):
        """Clamp every parameter's gradient of ``model`` to ``[-value, value]`` as it is computed."""
        check_positive_number("clip_value", value)
        self._remove_hooks()
        clamp = functools.partial(torch.clamp, min=-value, max=value)
        self._handles = [p.register_hook(clamp) for p in model.parameters() if p.requires_grad]

    def _remove_hooks(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def remove(self):
        """Stop clipping: by value, by norm and during backprop."""
        self.value = self.max_norm = None
        self._remove_hooks()

    def on_after_backward(self, trainer):
        if self.value is None and self.max_norm is None:
            return
        parameters = [p for p in trainer.model.parameters() if p.grad is not None]
        if self.value is not None:
            nn.utils.clip_grad_value_(parameters, self.value)
        if self.max_norm is not None:
            nn.utils.clip_grad_norm_(parameters, self.max_norm, norm_type=self.norm_type)
