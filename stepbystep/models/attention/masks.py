"""Attention masks (chapters 02-06): ours are keep-masks, ``True`` = may attend, as in the book:
source (padding) ``(N, 1, L_s)``, target (causal) ``(1, L_t, L_t)``. ``F.scaled_dot_product_attention``'s
bool mask means the same; ``nn.MultiheadAttention`` and ``nn.Transformer`` take blocked-masks
(``True`` = blocked), ``key_padding_mask`` ``(N, L)`` or additive floats: the converters below go
between those and ours explicitly."""
import torch

from ...checks import check_non_negative_int, check_positive_int, check_tensor

__all__ = ["subsequent_mask", "window_mask", "padding_mask", "keep_mask", "as_keep_mask", "to_torch_attn_mask",
           "from_torch_attn_mask", "to_key_padding_mask", "from_key_padding_mask", "to_additive_mask",
           "from_additive_mask"]


def subsequent_mask(size, device=None):
    """Causal keep-mask ``(1, size, size)``: query ``i`` may attend to keys ``0..i``."""
    check_positive_int("size", size)
    ones = torch.ones(size, size, dtype=torch.bool, device=device)  # (L, L)
    return torch.tril(ones).unsqueeze(0)  # (1, L, L)


def window_mask(query_index, key_index, window, sinks=0, causal=False):
    """Sliding-window keep-mask ``(1, L_q, L_k)`` (chapter 17) from the stream indices of the queries
    ``(L_q,)`` and of the keys ``(L_k,)``: query ``i`` may read key ``j`` when ``i - j < window`` (the
    ``window`` most recent tokens, itself included, as Mistral's mask ``j > i - window`` counts them;
    Jiang et al., Mistral 7B, 2023) or when ``j < sinks``, the stream's first tokens kept readable
    beside the window (attention sinks: Xiao et al., Efficient Streaming Language Models with
    Attention Sinks, 2023). It says nothing of the future unless ``causal`` (then also ``j <= i``)."""
    check_positive_int("window", window)
    check_non_negative_int("sinks", sinks)
    check_tensor("query_index", query_index, ndim=1)  # (L_q,)
    check_tensor("key_index", key_index, ndim=1)  # (L_k,)
    return window_keep(query_index, key_index, window, sinks, causal)


def window_keep(query_index, key_index, window, sinks, causal):
    """``window_mask`` unchecked, for a caller that checked ``window`` and ``sinks`` once (the cache, each step)."""
    distance = query_index.unsqueeze(1) - key_index.unsqueeze(0)  # (L_q, L_k): how far back each key is
    keep = (distance < window) | (key_index < sinks).unsqueeze(0)  # (L_q, L_k)
    return (keep & (distance >= 0) if causal else keep).unsqueeze(0)  # (1, L_q, L_k)


def padding_mask(ids, pad_id=0):
    """Source keep-mask ``(N, 1, L)`` from token ids ``(N, L)``: ``False`` at padding."""
    check_tensor("ids", ids, ndim=2)  # (N, L)
    return (ids != pad_id).unsqueeze(1)  # (N, 1, L)


def keep_mask(mask, n, l_q, l_k, name="mask", as_bool=True):
    """``mask`` as a bool keep-mask that broadcasts to scores ``(n, l_q, l_k)``, else a clear error:
    shape ``(1 or n, 1 or l_q, l_k)``, bool or 0/1 integers (``as_bool=False``: returned as it came).

    The one mask rule of every attention entry point (``attend`` trusts what it is given). A 2-D
    mask is refused: PyTorch's ``attn_mask`` ``(L_q, L_k)`` and ``key_padding_mask`` ``(N, L_k)``
    each lack a different dimension; the message gives the conversion for each reading possible."""
    mask = as_keep_mask(mask, name, as_bool)
    if mask.dim() != 3 or mask.shape[0] not in (1, n) or mask.shape[1] not in (1, l_q) or mask.shape[2] != l_k:
        rows, queries = ("1" if n == 1 else f"1 or {n}"), ("1" if l_q == 1 else f"1 or {l_q}")
        raise ValueError(f"{name} must have shape ({rows}, {queries}, {l_k}), got {tuple(mask.shape)}"
                         + (_two_d_hint(mask.shape, n, l_q, name) if mask.dim() == 2 else ""))
    return mask


def _two_d_hint(shape, n, l_q, name):
    """How to add the missing dimension, for each reading of a 2-D mask its first size allows."""
    padding = (f"if it is PyTorch's key_padding_mask (N, L_k), True = pad, use from_key_padding_mask({name}) "
               f"(a keep-mask of that shape: {name}.unsqueeze(1))")
    attn = (f"if it is PyTorch's attn_mask (L_q, L_k), True = blocked, use from_torch_attn_mask({name}) "
            f"(a keep-mask of that shape: {name}.unsqueeze(0))")
    readings = [text for fits, text in ((shape[0] == n, padding), (shape[0] == l_q, attn)) if fits] or [padding, attn]
    return "; a 2-D mask lacks a dimension: " + "; ".join(readings)


def as_keep_mask(mask, name="mask", as_bool=True):
    """``mask`` (bool or 0/1 integers, ``True`` = may attend) as a bool tensor of the same shape
    (``as_bool=False``: checked only, for a caller that converts it part by part). A float mask is
    a TypeError: an additive mask (``0`` keep, ``-inf`` block) cast to bool would come out inverted.
    Every element is checked, through the minimum and maximum (no copy of the mask)."""
    check_tensor(name, mask)
    if mask.dtype == torch.bool:
        return mask
    if mask.is_floating_point() or mask.is_complex():
        raise TypeError(f"{name} must be a boolean keep-mask (True = may attend), got dtype {mask.dtype}; "
                        "for an additive float mask (0 keep, -inf block, as nn.Transformer."
                        "generate_square_subsequent_mask makes) use from_additive_mask first"
                        + (", then unsqueeze(0) for the batch dimension" if mask.dim() == 2 else ""))
    if mask.numel():
        low, high = torch.aminmax(mask)  # integers are all 0/1 exactly when these are
        if bool((low < 0) | (high > 1)):
            raise ValueError(f"{name} must hold True/False or 0/1 (1 = may attend), got values from "
                             f"{int(low)} to {int(high)}")
    return mask.bool() if as_bool else mask


def to_torch_attn_mask(mask):
    """Target keep-mask ``(1, L_q, L_k)`` or ``(L_q, L_k)`` -> PyTorch bool ``attn_mask``
    ``(L_q, L_k)`` where ``True`` means blocked."""
    blocked = ~as_keep_mask(mask)
    if blocked.dim() == 3:
        if mask.shape[0] != 1:
            raise ValueError(f"mask must be shared by the batch, shape (1, L_q, L_k), got {tuple(mask.shape)}. "
                             "Per-sequence masks are key padding masks: use to_key_padding_mask")
        blocked = blocked[0]  # (L_q, L_k)
    if blocked.dim() != 2:
        raise ValueError(f"mask must have shape (1, L_q, L_k) or (L_q, L_k), got {tuple(mask.shape)}")
    return blocked  # (L_q, L_k)


def from_torch_attn_mask(attn_mask):
    """PyTorch bool ``attn_mask`` ``(L_q, L_k)`` (``True`` = blocked) -> our ``(1, L_q, L_k)``."""
    check_tensor("attn_mask", attn_mask, ndim=2)  # (L_q, L_k)
    if attn_mask.dtype != torch.bool:
        raise TypeError(f"attn_mask must be a bool mask (True = blocked), got dtype {attn_mask.dtype}; "
                        "for float masks use from_additive_mask")
    return (~attn_mask).unsqueeze(0)  # (1, L_q, L_k)


def to_key_padding_mask(source_mask):
    """Source keep-mask ``(N, 1, L)`` -> PyTorch ``key_padding_mask`` ``(N, L)``, ``True`` = pad."""
    blocked = ~as_keep_mask(source_mask, "source_mask")  # (N, 1, L)
    if blocked.dim() != 3 or blocked.shape[1] != 1:
        raise ValueError(f"source_mask must have shape (N, 1, L), got {tuple(source_mask.shape)}")
    return blocked[:, 0, :]  # (N, L)


def from_key_padding_mask(key_padding_mask):
    """PyTorch ``key_padding_mask`` ``(N, L)`` (``True`` = pad) -> our ``(N, 1, L)``."""
    check_tensor("key_padding_mask", key_padding_mask, ndim=2)  # (N, L)
    return (~key_padding_mask.bool()).unsqueeze(1)  # (N, 1, L)


def to_additive_mask(mask, dtype=torch.float32):
    """Keep-mask -> additive float mask of the same shape: ``0`` to keep, ``-inf`` to block."""
    blocked = ~as_keep_mask(mask)
    additive = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return additive.masked_fill(blocked, float("-inf"))


def from_additive_mask(additive):
    """Additive float mask (``0`` keep; ``-inf`` or a large negative such as ``-1e9`` or the dtype's
    most negative number, block) -> keep-mask of the same shape."""
    check_tensor("additive", additive)
    if not additive.is_floating_point():
        raise TypeError(f"additive must be a float mask, got dtype {additive.dtype}")
    keep, blocked = additive == 0, additive <= -1e4
    if not (keep | blocked).all():
        odd = additive[~(keep | blocked)].unique()[:5].tolist()
        raise ValueError("additive must hold 0 (keep) or a large negative <= -1e4 such as -inf (block), "
                         f"got values such as {odd}: that is a bias, not a mask")
    return keep
