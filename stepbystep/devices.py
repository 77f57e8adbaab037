"""Picking a device and moving whole batches (tensors inside tuples, lists and dicts) onto it."""
import torch

__all__ = ["default_device", "move_to"]


def default_device():
    """The best device available: CUDA, then Apple's MPS, then the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def move_to(batch, device):
    """Move every tensor in ``batch`` to ``device``, keeping the nesting and the dtypes.

    Tuples (named ones included), lists and dicts are walked recursively; anything that is not a
    tensor (an int, a string, ``None``) is passed through untouched.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return type(batch)((key, move_to(value, device)) for key, value in batch.items())
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple
        return type(batch)(*(move_to(value, device) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to(value, device) for value in batch)
    return batch
