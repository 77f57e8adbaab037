"""ALiBi (chapter 10; Press, Smith and Lewis 2022): each head ``h`` adds ``-m_h · |i - j|`` to the
score of query ``i`` for key ``j``, with geometric slopes ``m_h``: nothing learned, nothing added
to the embeddings, and an unseen distance only lowers a score further along the same line."""
import math

import torch

from ...checks import check_positive_int, check_tensor

__all__ = ["alibi_slopes", "alibi_bias", "alibi_bias_at"]


def _power_of_two_slopes(n_heads):
    start = 2.0 ** (-8.0 / n_heads)  # 2^(-8/n): for 8 heads, 1/2
    return [start ** (h + 1) for h in range(n_heads)]  # start, start², ..., start^n = 2^-8


def alibi_slopes(n_heads):
    """The heads' slopes ``(n_heads,)``: ``2^(-8/n), 2^(-16/n), ..., 2^(-8)`` for a power of two
    ``n``; otherwise those of the largest power of two ``k < n``, then every other slope of ``2k``
    heads, the first ``n - k`` of them (6 heads: ``1/4, 1/16, 1/64, 1/256, 1/2, 1/8``)."""
    check_positive_int("n_heads", n_heads)
    closest = 2 ** int(math.floor(math.log2(n_heads)))  # the largest power of two <= n_heads
    slopes = _power_of_two_slopes(closest)
    if closest < n_heads:
        slopes += _power_of_two_slopes(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)  # (n_heads,)


def alibi_bias_at(slopes, query_positions, key_positions):
    """``-slope × |query position - key position|`` for every head, query and key, in ``slopes``' dtype:
    ``slopes`` ``(h,)``, integer positions ``(L_q,)`` and ``(L_k,)`` -> ``(h, L_q, L_k)``, or per row
    (rows padded differently) ``(N, L_q)`` and ``(N, L_k)`` -> ``(N, h, L_q, L_k)``."""
    check_tensor("slopes", slopes, ndim=1)
    check_tensor("query_positions", query_positions, ndim=(1, 2))
    check_tensor("key_positions", key_positions, ndim=(1, 2))
    distance = (query_positions.unsqueeze(-1) - key_positions.unsqueeze(-2)).abs()  # (N?, L_q, L_k)
    # negated before the conversion, so the diagonal is 0 rather than -0 (for integer positions)
    negative = (-distance).to(slopes.dtype).unsqueeze(-3)  # (N?, 1, L_q, L_k): one for every head
    return slopes.view(-1, 1, 1) * negative  # (N?, h, L_q, L_k): -slope x distance


def alibi_bias(n_heads, length_q, length_k=None):
    """The additive ALiBi bias ``(n_heads, L_q, L_k)``, ``-slope_h × |i - j|``, the queries being the
    last ``L_q`` of the ``L_k`` positions (``L_k = L_q`` by default: self-attention; else a cache's new
    rows). A causal model masks the future anyway, so only the past's half is ever used."""
    check_positive_int("n_heads", n_heads)
    check_positive_int("length_q", length_q)
    length_k = length_q if length_k is None else check_positive_int("length_k", length_k)
    if length_q > length_k:
        raise ValueError(f"length_q must be at most length_k={length_k} (the queries are the last "
                         f"positions), got {length_q}")
    queries = torch.arange(length_k - length_q, length_k)  # (L_q,)
    keys = torch.arange(length_k)  # (L_k,)
    return alibi_bias_at(alibi_slopes(n_heads), queries, keys)  # (n_heads, L_q, L_k)
