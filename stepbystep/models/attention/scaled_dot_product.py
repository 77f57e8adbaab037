"""Scaled dot-product attention (chapter 02): ``attend`` is the formula every model calls, written
out or through PyTorch's fused kernel under the same mask rules; ``scaled_dot_product`` checks a
learner's inputs first.

The weights rule, one switch, ``store_alphas``: ``True`` computes the weights step by step and
returns them (a module keeps them in ``alphas`` ``(N, h, L_q, L_k)``, before dropout); ``False``
runs the fused kernel: the same outputs up to rounding, no weights. Every attention keeps them by
default, so that what a learner builds shows what it attended to. The decoder-only models
(``DecoderConfig.store_alphas=False``) do not, because they generate token by token; turn them on
with ``attention_weights`` or ``keeping_weights``. The wide heads (``Attention``) always keep them."""
import math

import torch
import torch.nn.functional as F

from ...checks import check_tensor
from .masks import as_keep_mask, keep_mask

__all__ = ["scaled_dot_product", "attend", "scores", "masked_softmax"]


def masked_softmax(scores, mask=None):
    """Softmax over the last dimension, masked keys (``mask`` ``False``) exactly 0; a row with
    every key masked is all zeros rather than NaN. A 0/1 mask is converted, not checked for shape."""
    if mask is None:
        return torch.softmax(scores, dim=-1)
    if not (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool):
        mask = as_keep_mask(mask)
    # the most negative finite number rather than -inf keeps softmax (and its gradient) finite
    weights = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)
    return weights * mask  # zero for masked keys, zero rows where every key is masked


def scores(q, k, bias=None):
    """The attention scores ``q kᵀ / √d_k (+ bias)``: ``q`` ``(..., L_q, d_k)``, ``k`` ``(..., L_k, d_k)``
    -> ``(..., L_q, L_k)``; ``bias`` (ALiBi's) broadcasts to them."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., L_q, L_k)
    return s if bias is None else s + bias  # e.g. -slope x distance


def attend(q, k, v, mask=None, bias=None, dropout=None, store_alphas=True):
    """``softmax(q kᵀ / √d_k + bias) v``: the context ``(N, ..., L_q, d_v)`` and the weights
    ``(N, ..., L_q, L_k)``, taken before ``dropout`` (an ``nn.Dropout``); with ``store_alphas=False``,
    the fused kernel's context and ``None``. Unchecked: the callers check (``keep_mask``).

    ``q`` ``(N, ..., L_q, d_k)``, ``k`` ``(N, ..., L_k, d_k)``, ``v`` ``(N, ..., L_k, d_v)``; with
    heads, ``k`` and ``v`` may have fewer, ``(N, h_kv, L_k, d)``, each read by ``h // h_kv`` query
    heads in a row (grouped-query attention). ``mask`` (``True`` = may attend) broadcasts to the
    scores (a ``(N, L_q, L_k)`` one gets the head dimension); a row with every key masked gives
    zeros. ``bias`` is added to the scores (ALiBi)."""
    if mask is not None and 2 < mask.dim() < q.dim():  # (N, L_q, L_k) -> (N, 1, ..., L_q, L_k): one mask for every head
        mask = mask.reshape(mask.shape[:1] + (1,) * (q.dim() - mask.dim()) + mask.shape[1:])
    groups = q.shape[-3] // k.shape[-3] if q.dim() > 3 else 1  # query heads per key head
    if not store_alphas:
        return _fused(q, k, v, mask, bias, dropout, groups), None
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=-3), v.repeat_interleave(groups, dim=-3)  # (N, h, L_k, d)
    s = scores(q, k, bias)  # (N, ..., L_q, L_k)
    weights = masked_softmax(s, mask)  # (N, ..., L_q, L_k)
    context = (weights if dropout is None else dropout(weights)) @ v  # (N, ..., L_q, d_v)
    return context, weights


def _fused(q, k, v, mask, bias, dropout, groups):
    """``attend``'s context by ``F.scaled_dot_product_attention``, whose masks mean the same (``True``
    = may attend) but whose rows with no key to read come out NaN: they read every key, then get zeros."""
    has_key = None
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)  # (N, ..., L_q, 1): rows with a key to read
        mask = mask | ~has_key
    if bias is not None:  # a float mask is added to the scores: the bias, -inf where masked
        mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
    gqa = {}
    if groups > 1 and q.device.type == "mps":  # MPS's kernel may fail on shared heads with a mask
        k, v = k.repeat_interleave(groups, dim=-3), v.repeat_interleave(groups, dim=-3)  # (N, h, L_k, d)
    elif groups > 1:
        gqa = {"enable_gqa": True}  # the kernel reads the shared heads (copying them or not)
    p = dropout.p if dropout is not None and dropout.training else 0.0
    context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, **gqa)  # (N, ..., L_q, d_v)
    return context if has_key is None else context.masked_fill(~has_key, 0.0)


def scaled_dot_product(q, k, v, mask=None):
    """``attend`` with the inputs checked first: ``q`` ``(N, L_q, d_k)``, ``k`` ``(N, L_k, d_k)``, ``v``
    ``(N, L_k, d_v)`` (extra leading dimensions, heads, work too), ``mask`` ``(1 or N, 1 or L_q, L_k)``
    bool, ``True`` = may attend. Returns the context ``(N, L_q, d_v)`` and the weights ``(N, L_q, L_k)``."""
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
        raise ValueError("q, k and v must have matching (or broadcastable) leading dimensions such as the batch, "
                         f"got {tuple(q.shape[:-2])}, {tuple(k.shape[:-2])} and {tuple(v.shape[:-2])}") from None
    if mask is not None:
        mask = keep_mask(mask, q.shape[0], q.shape[-2], k.shape[-2])
    return attend(q, k, v, mask)
