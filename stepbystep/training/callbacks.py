"""The callback protocol: how clipping, schedulers and logging join the training loop.

``StepByStep.train`` and ``train_steps`` call these hooks on every callback, in the order they
were added (``train_steps`` may stop, and the next call go on, inside an epoch)::

    on_train_start(trainer)
    for every epoch:
        for every batch:   forward, loss, backward
            on_after_backward(trainer)                   # gradients ready, step not taken
                                                          # optimizer step
            on_batch_end(trainer, epoch, batch_index, loss)
        validation
        on_epoch_end(trainer, epoch, loss, val_loss)      # val_loss None without a val_loader
    on_train_end(trainer)                                 # always, even after an error

Epochs and batches count from 1 (``batch_index`` within its epoch; ``trainer.total_steps``
counts every step); ``loss`` is a float. Setting ``trainer.should_stop = True`` in a hook ends
training after the current epoch. Subclass ``Callback`` and override only the hooks you need.

A callback that keeps state across steps (a scheduler, early stopping, a running average)
overrides ``state_dict`` and ``load_state_dict`` as PyTorch's modules do: checkpoints then carry
its state under its class name (``"Name#2"`` for a second one of the same class).
"""

from collections import OrderedDict

import torch

__all__ = ["Callback", "stateful", "check_state"]


class Callback:
    """Does nothing at every hook; override the ones you need."""

    def on_train_start(self, trainer):
        pass

    def on_after_backward(self, trainer):
        pass

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        pass

    def on_epoch_end(self, trainer, epoch, loss, val_loss):
        pass

    def on_train_end(self, trainer):
        pass

    def state_dict(self):
        """What a resume needs: tensors, numbers, strings and containers of them."""
        return {}

    def load_state_dict(self, state):
        """Put back what ``state_dict`` returned."""


def stateful(callbacks):
    """``{key: callback}`` for the callbacks that override ``state_dict``, keyed by class name, in order."""
    keyed = {}
    for callback in callbacks:
        if type(callback).state_dict is not Callback.state_dict:
            name = type(callback).__qualname__
            count = sum(key.split("#")[0] == name for key in keyed)
            keyed[name if count == 0 else f"{name}#{count + 1}"] = callback
    return keyed


_LEAVES = (bool, int, float, str, type(None), torch.device, torch.dtype)
_CONTAINERS = (dict, OrderedDict, list, tuple, torch.Size)


def check_state(key, state):
    """Raise a ``TypeError`` naming the callback ``key`` unless its ``state`` is a dict of tensors,
    numbers, strings and containers of them: all a checkpoint reads back without running code."""
    if type(state) not in (dict, OrderedDict):
        raise TypeError(f"the callback {key}'s state_dict must return a dict, got {type(state).__name__}")
    pending = [(f"{key}.state_dict()", state)]
    while pending:
        where, value = pending.pop()
        if type(value) in (dict, OrderedDict):
            pending += [(f"{where}[{name!r}]", item) for name, item in value.items()]
        elif type(value) in _CONTAINERS:
            pending += [(f"{where}[{index}]", item) for index, item in enumerate(value)]
        elif not (isinstance(value, torch.Tensor) or type(value) in _LEAVES):
            raise TypeError(f"{where} is a {type(value).__module__}.{type(value).__qualname__}: a callback's state "
                            "holds only tensors, numbers, strings and dicts, lists or tuples of them (a checkpoint "
                            "could not be loaded back); convert it, e.g. with torch.as_tensor(...) or float(...)")
