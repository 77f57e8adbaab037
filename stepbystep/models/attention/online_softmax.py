"""The online softmax (chapter 14): a softmax over a stream of blocks, one running max and sum.

Milakov and Gimelshein, "Online normalizer calculation for softmax" (2018): a block's partial
result is its max ``m``, its sum ``l = Σ exp(x - m)`` and, for attention, its output ``o``
(the block's values averaged with those weights); two partial results merge exactly.
"""
import torch

from ...checks import check_positive_int, check_tensor

__all__ = ["merge_partials", "online_update", "online_softmax_steps", "attention_row_steps"]


def online_update(m, l, s, acc=None, v=None):
    """The running state after one more block of scores ``s`` ``(..., b)``: the max ``m`` ``(...)``, the
    sum ``l = Σ exp(score - m)`` ``(...)`` and, with the block's values ``v`` (``(b, d_v)``, or
    ``(N, H, b, d_v)`` for scores ``(N, H, L_q, b)``), the output sum ``acc = Σ exp(score - m) · value``
    ``(..., d_v)``. When the max grows, the old sums are
    rescaled by ``e^(m_old - m_new)``. A row with no key yet (``m = -inf``, scores ``-inf``) subtracts
    0, so it stays empty, never NaN. Returns ``(m, l, acc)``.
    """
    m_new = torch.maximum(m, s.amax(dim=-1))  # (...): the max over every key read so far
    m_safe = m_new.masked_fill(m_new == float("-inf"), 0.0)  # (...): a row with no key yet subtracts 0
    p = torch.exp(s - m_safe.unsqueeze(-1))  # (..., b): exp(score - new max); masked keys exp(-inf) = 0
    rescale = torch.exp(m - m_safe)  # (...): the old sums were relative to the old max
    l = l * rescale + p.sum(dim=-1)  # (...): old sum rescaled, plus this block's
    if v is not None:
        acc = acc * rescale.unsqueeze(-1) + p @ v  # (..., d_v): the same
    return m_new, l, acc


def merge_partials(m1, l1, o1, m2, l2, o2):
    """Merge two partial softmax results into the result over both parts.

    ``m = max(m1, m2)``; ``l = l1·e^(m1-m) + l2·e^(m2-m)``; ``o = (o1·l1·e^(m1-m) + o2·l2·e^(m2-m)) / l``.
    An empty part (every key masked: ``m = -inf``, ``l = 0``) leaves the other as it is, and
    two empty parts give an empty part with ``o`` zeros, never NaN. ``m``, ``l`` are numbers or
    tensors ``(...)``, ``o`` tensors ``(..., d)``; returns ``(m, l, o)``.
    """
    m = torch.maximum(torch.as_tensor(m1), torch.as_tensor(m2))  # (...): the larger max
    m_safe = m.masked_fill(m == float("-inf"), 0.0)  # (...): two empty parts subtract 0, not -inf
    w1 = torch.as_tensor(l1) * torch.exp(m1 - m_safe)  # (...): part 1's sum, relative to the new max
    w2 = torch.as_tensor(l2) * torch.exp(m2 - m_safe)  # (...): part 2's
    l = w1 + w2  # (...)
    o = (o1 * w1.unsqueeze(-1) + o2 * w2.unsqueeze(-1)) / torch.where(l > 0, l, 1.0).unsqueeze(-1)  # (..., d)
    return m, l, o


def online_softmax_steps(x, block):
    """The running max and sum of a softmax over ``x`` ``(L,)`` read in blocks of ``block``.

    Returns ``m`` and ``l`` ``(n_blocks,)``, their values after each block, and the softmax
    ``(L,)`` computed from the last ones: ``exp(x - m[-1]) / l[-1]``.
    """
    check_tensor("x", x, ndim=1)
    check_positive_int("block", block)
    m, l = torch.tensor(float("-inf"), dtype=x.dtype), torch.tensor(0.0, dtype=x.dtype)  # (), ()
    ms, ls = [], []
    for start in range(0, x.shape[0], block):
        m, l, _ = online_update(m, l, x[start:start + block])  # (), (): the max so far, the sum rescaled to it
        ms.append(m)
        ls.append(l)
    return torch.stack(ms), torch.stack(ls), torch.exp(x - m) / l


def attention_row_steps(q_row, k, v, block_k):
    """One query row's attention read in key blocks: the running state after each block.

    ``q_row`` ``(d,)``, ``k`` ``(L_k, d)``, ``v`` ``(L_k, d_v)``. Returns ``m``, ``l``
    ``(n_blocks,)`` and ``o`` ``(n_blocks, d_v)``: the max, the sum and the output normalised by
    the sum so far, after each block; ``o[-1]`` is the exact attention output of the row.
    """
    check_tensor("q_row", q_row, ndim=1)
    check_tensor("k", k, ndim=2)
    check_tensor("v", v, ndim=2)
    check_positive_int("block_k", block_k)
    if k.shape[-1] != q_row.shape[0] or v.shape[0] != k.shape[0]:
        raise ValueError(f"k must be (L_k, {q_row.shape[0]}) and v (L_k, d_v), got {tuple(k.shape)} and {tuple(v.shape)}")
    scores = k @ q_row / q_row.shape[0] ** 0.5  # (L_k,)
    m = torch.tensor(float("-inf"), dtype=q_row.dtype)  # ()
    l = torch.tensor(0.0, dtype=q_row.dtype)  # ()
    acc = torch.zeros(v.shape[1], dtype=q_row.dtype)  # (d_v,)
    ms, ls, os = [], [], []
    for start in range(0, k.shape[0], block_k):
        m, l, acc = online_update(m, l, scores[start:start + block_k], acc, v[start:start + block_k])  # (), (), (d_v,)
        ms.append(m)
        ls.append(l)
        os.append(acc / l)
    return torch.stack(ms), torch.stack(ls), torch.stack(os)
