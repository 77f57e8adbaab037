"""The token-id check every token model runs at its entry point (chapters 07-10)."""
import torch

from ...checks import check_tensor

__all__ = ["check_ids"]


def check_ids(name, ids, vocab_size, max_len, held=0):
    """Token ids ``(N, L)``: ``L >= 1``, at most ``max_len`` with a cache's ``held`` tokens, in
    ``0 .. vocab_size - 1``, on every device: one host read of their range (an id out of range
    would be a device-side assert on an accelerator); a ``meta`` tensor has no values to read."""
    check_tensor(name, ids, dtype=(torch.int64, torch.int32))  # what nn.Embedding reads
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"{name} must have shape (N, L) with L >= 1, got {tuple(ids.shape)}")
    if held + ids.shape[1] > max_len:
        after = f" after the {held} tokens in the cache" if held else ""
        raise ValueError(f"{name} must be at most the model's max_len={max_len} long{after}, "
                         f"got length {held + ids.shape[1]}")
    if ids.device.type != "meta":
        low, high = map(int, ids.aminmax())
        if low < 0 or high >= vocab_size:
            raise ValueError(f"{name} must hold ids in 0..{vocab_size - 1}, got ids from {low} to {high}")
