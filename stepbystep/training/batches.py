"""Batches between loaders, the model and NumPy: split, forward, convert, repeat, resume a pass."""
from dataclasses import dataclass
from enum import Enum

import numpy as np
import torch

from ..checks import check_float_dtype
from ..containers import map_structure
from ..seeding import get_rng_state, set_rng_state

__all__ = ["split_batch", "forward", "to_numpy", "numpy_to_tensor", "endless", "check_float_inputs", "resume",
           "OpenEpoch", "Pass", "ran_out"]


def split_batch(batch):
    """A loader's batch -> ``(x, y)``, refusing anything that is not a pair."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        length = f" of length {len(batch)}" if hasattr(batch, "__len__") else ""
        raise TypeError(f"loaders must yield (x, y) batches, got {type(batch).__name__}{length}")
    return batch


def forward(model, x):
    """``model(x)``; a tuple or list is passed as ``model(*x)``, a dict as ``model(**x)``."""
    if isinstance(x, dict):
        return model(**x)
    if isinstance(x, (tuple, list)):
        return model(*x)
    return model(x)


def check_float_inputs(x, dtype):
    """Every float tensor in ``x`` (any nesting) must have the model's float ``dtype`` (see
    ``check_float_dtype``); integers (ids) pass. Returns ``x``."""
    def check(leaf):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            check_float_dtype("x", leaf, dtype)

    map_structure(check, x)
    return x


def to_numpy(output):
    """Tensors in any nesting of tuples, lists and dicts -> NumPy arrays, same nesting (bfloat16, which
    NumPy lacks, as float32: autocast's outputs)."""
    def convert(leaf):
        if not isinstance(leaf, torch.Tensor):
            return leaf
        leaf = leaf.detach().cpu()
        return (leaf.float() if leaf.dtype == torch.bfloat16 else leaf).numpy()

    return map_structure(convert, output)


def numpy_to_tensor(leaf, dtype=None):
    """A NumPy array becomes a tensor, its floats in ``dtype`` (the model's; None: PyTorch's default
    float dtype); anything else is kept."""
    if isinstance(leaf, np.ndarray):
        tensor = torch.as_tensor(leaf)
        return tensor.to(dtype or torch.get_default_dtype()) if tensor.is_floating_point() else tensor
    return leaf


def endless(loader):
    """The loader's batches, starting over at the end of every pass."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise ValueError("the loader yielded no batches")


def resume(loader, rng_state, n_done):
    """``loader``'s batches after the first ``n_done`` of a pass begun with the random streams
    ``rng_state``: the streams put back to it, those batches drawn again and skipped, then the
    streams put back to where they are now. The rest of the pass is the one an unbroken run sees."""
    now = get_rng_state(loader)
    set_rng_state(rng_state, loader)
    batches = iter(loader)
    for _ in range(n_done):
        if next(batches, None) is None:
            raise ValueError(f"the training loader ran out before the {n_done} batches the open epoch trained "
                             "on: resume on the loader it started with")
    set_rng_state(now, loader)
    return batches


@dataclass
class OpenEpoch:
    """An epoch not yet ended: ``batches`` steps taken and their ``loss_sum``; the streams at its
    start (``rng_state``), to draw it again after a load; the size of the loader it began on
    (``n_batches``, ``batch_size``: None where the loader, or a file of an earlier release, does not say)."""

    rng_state: object
    batches: int = 0
    loss_sum: float = 0.0
    n_batches: int | None = None
    batch_size: int | None = None

    @classmethod
    def start(cls, loader):
        """A new epoch on ``loader``: its streams and its size, noted before the first batch."""
        return cls(get_rng_state(loader), **loader_size(loader))

    def other_loader(self, loader):
        """``loader``'s size if it differs from the one the epoch began on (where both say), else None."""
        now = loader_size(loader)
        saved = {"n_batches": self.n_batches, "batch_size": self.batch_size}
        return now if any(None not in (saved[key], now[key]) and saved[key] != now[key] for key in now) else None


def loader_size(loader):
    """``{'n_batches', 'batch_size'}`` of a loader, each None where it does not say."""
    size = getattr(loader, "batch_size", None)
    return {"n_batches": len(loader) if hasattr(loader, "__len__") else None,
            "batch_size": size if isinstance(size, int) else None}


class Pass(Enum):
    """Where a loader's pass stands when a call stops after a step (``ran_out``), and what comes next."""

    ENDED = "ended"  # it has no batch left: the epoch ends now
    READ_ON = "read on"  # it has batches left (or cannot tell): the next call reads on from the iterator
    DRAW_AGAIN = "draw again"  # past its length it gave one more, which the iterator lacks: resume draws it again


def ran_out(loader, batches, n_done):
    """Whether ``loader``'s pass ended with its ``n_done``-th batch, a ``Pass``. Before its length (or
    without one) it goes on: ``READ_ON``. Past its length it is asked for one more, as in an unbroken
    run (a shuffling sampler draws its next order as it ends): ``ENDED`` if it had none; else
    ``DRAW_AGAIN``: ``batches`` lacks that one, the streams go back, and resuming draws it again.
    For example, a loader whose ``__len__`` is 4 but which yields 5: after the 4th step it gives the
    5th, which this call does not train on; the next call draws it again and trains on it, as an
    unbroken run would."""
    if not hasattr(loader, "__len__") or n_done < len(loader):
        return Pass.READ_ON
    before = get_rng_state(loader)
    if next(batches, None) is None:
        return Pass.ENDED
    set_rng_state(before, loader)
    return Pass.DRAW_AGAIN
