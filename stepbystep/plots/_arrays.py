"""What a figure receives, as a NumPy array: the one conversion every plot module uses."""
import numpy as np
import torch


def _as_numpy(values, dtype=None):
    """``values`` as a NumPy array: a tensor on any device, with or without grad, a list or an array.

    A tensor is detached from its graph and copied to the CPU first (bfloat16, which NumPy
    lacks, becomes float32). ``dtype`` converts the elements (``float`` for values drawn on an
    axis or a colour scale); ``None`` keeps them, so a mask stays bool and token ids stay ints.
    """
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu()
        if values.dtype == torch.bfloat16:
            values = values.float()
        values = values.numpy()
    return np.asarray(values, dtype=dtype)


def _as_2d(values, name, shape):
    """``values`` as a 2-D float array: one ``shape`` (e.g. ``"(H, W)"``), or the same with a
    leading dimension of 1 (a batch of one image, a ``(1, max_len, d_model)`` buffer)."""
    values = _as_numpy(values, float)
    if values.ndim == 3 and values.shape[0] == 1:
        values = values[0]
    if values.ndim != 2:
        raise ValueError(f"{name} must have shape {shape} or (1, {shape[1:-1]}), got {values.shape}")
    return values
