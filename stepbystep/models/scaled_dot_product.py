"""Scaled dot-product attention, written out so every step can be inspected."""
import math

import torch

from ..checks import check_tensor
from .masks import as_keep_mask, check_mask

__all__ = ["scaled_dot_product", "masked_softmax"]


def masked_softmax(scores, mask=None):
    """Softmax over the last dimension that gives masked keys exactly zero weight.

    ``mask`` (``True`` = may attend; bool or 0/1 integers) must broadcast to ``scores``. A
    query whose keys are all masked gets a row of zeros instead of NaN, so padded queries stay
    finite.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    mask = as_keep_mask(mask)
    # the most negative finite number rather than -inf keeps softmax (and its gradient) finite
    lowest = torch.finfo(scores.dtype).min
    weights = torch.softmax(scores.masked_fill(~mask, lowest), dim=-1)
    return weights * mask  # zero for masked keys, zero rows where every key is masked


def scaled_dot_product(q, k, v, mask=None):
    """Attention by hand: ``softmax(q kᵀ / √d_k) v``.

    Shapes: ``q`` ``(N, L_q, d_k)``, ``k`` ``(N, L_k, d_k)``, ``v`` ``(N, L_k, d_v)``,
    ``mask`` ``(1 or N, 1 or L_q, L_k)`` bool, ``True`` = may attend.
    Extra leading dimensions (e.g. heads ``(N, h, L, d)``) work too; the mask then gets a
    head dimension broadcast in.

    Returns the context ``(N, L_q, d_v)`` and the weights ``(N, L_q, L_k)``.
    """
    _check_attention_inputs(q, k, v, mask)
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (N, ..., L_q, L_k)
    if mask is not None:
        mask = mask.bool()
        while mask.dim() < scores.dim():
            mask = mask.unsqueeze(1)  # (N, 1, ..., L_q, L_k): broadcast over heads
    weights = masked_softmax(scores, mask)  # (N, ..., L_q, L_k)
    context = weights @ v  # (N, ..., L_q, d_v)
    return context, weights


def _check_attention_inputs(q, k, v, mask):
    """``q`` ``(N, ..., L_q, d_k)``, ``k`` ``(N, ..., L_k, d_k)``, ``v`` ``(N, ..., L_k, d_v)`` and the mask fit."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t)
        if t.dim() < 3:
            raise ValueError(f"{name} must have shape (N, L, d), got {tuple(t.shape)}")
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k must have the last dimension d_k={q.shape[-1]} of q, got {k.shape[-1]}")
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v must have the length L_k={k.shape[-2]} of k, got {v.shape[-2]}")
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "q, k and v must have matching (or broadcastable) leading dimensions such as the batch, "
            f"got {tuple(q.shape[:-2])}, {tuple(k.shape[:-2])} and {tuple(v.shape[:-2])}"
        ) from None
    if mask is not None:
        check_mask(mask, q.shape[0], q.shape[-2], k.shape[-2])
