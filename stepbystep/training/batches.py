"""Batches between loaders, the model and NumPy: split, forward, convert, repeat."""
import numpy as np
import torch

from ..containers import map_structure

__all__ = ["split_batch", "forward", "to_numpy", "numpy_to_tensor", "endless", "check_float_inputs"]


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


def check_float_inputs(model, x):
    """Raise a ``TypeError`` when a float tensor in ``x`` (any nesting) has another dtype than the
    model's float weights, rather than PyTorch's from inside its first layer; integers (ids) pass."""
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), None)

    def check(leaf):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and dtype is not None and leaf.dtype != dtype:
            raise TypeError(f"x must hold float tensors of the model's dtype {dtype}, got {leaf.dtype}: "
                            f"convert it with x.to({dtype})")

    map_structure(check, x)


def to_numpy(output):
    """Tensors in any nesting of tuples, lists and dicts -> NumPy arrays, same nesting."""
    return map_structure(lambda leaf: leaf.detach().cpu().numpy() if isinstance(leaf, torch.Tensor) else leaf,
                         output)


def numpy_to_tensor(leaf):
    """A NumPy array becomes a tensor (floats in the default dtype); anything else is kept."""
    if isinstance(leaf, np.ndarray):
        tensor = torch.as_tensor(leaf)
        return tensor.to(torch.get_default_dtype()) if tensor.is_floating_point() else tensor
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
