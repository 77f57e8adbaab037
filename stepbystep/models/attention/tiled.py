"""Attention in tiles (chapter 14): the exact softmax attention without the ``L_q × L_k`` matrix.

Each block of queries reads the keys and values one block at a time and keeps, per query row,
a running maximum ``m`` of its scores, a running sum ``l`` of ``exp(score - m)`` and a running
sum of ``exp(score - m) · value``; whenever the maximum grows, the old sums are rescaled to the
new one (the online softmax of Milakov and Gimelshein 2018, used for attention by Rabe and
Staats 2021 and by FlashAttention, Dao et al. 2022). The backward pass keeps only the output
and one number per row (its log-sum-exp) and recomputes every tile, as FlashAttention does.
"""
import math
from dataclasses import dataclass

import torch

from ...checks import check_instance, check_positive_int, check_tensor
from .masks import keep_mask
from .online_softmax import online_update

__all__ = ["CAUSAL_ALIGNMENTS", "TileCounts", "tile_plan", "tiled_attention"]

CAUSAL_ALIGNMENTS = ("top_left", "bottom_right")


@dataclass(frozen=True)
class TileCounts:
    """How many (query block, key block) tiles a call computed, and how many it skipped."""

    computed: int
    skipped: int

    @property
    def total(self):
        """Every tile of the grid: ``ceil(L_q / block_q) × ceil(L_k / block_k)``."""
        return self.computed + self.skipped


@dataclass(frozen=True)
class _Tiling:
    """What the forward and the backward loops run: ``tile_plan``'s tiles, and the causal diagonal."""

    tiles: list
    is_causal: bool
    offset: int  # query i reads keys 0 .. i + offset: 0 top-left, L_k - L_q bottom-right


def _blocks(length, size):
    """``[(start, end), ...]`` covering ``0..length``; the last block may be shorter."""
    return [(start, min(start + size, length)) for start in range(0, length, size)]


def _causal_offset(l_q, l_k, causal_alignment):
    """How many keys past its own index a query reads under a causal mask: query ``i`` reads ``0 .. i + offset``."""
    check_instance("causal_alignment", causal_alignment, str, "'top_left' or 'bottom_right'")
    if causal_alignment not in CAUSAL_ALIGNMENTS:
        raise ValueError(f"causal_alignment must be one of {CAUSAL_ALIGNMENTS}, got {causal_alignment!r}")
    return 0 if causal_alignment == "top_left" else l_k - l_q


def tile_plan(l_q, l_k, block_q, block_k, is_causal=False, causal_alignment="top_left"):
    """The tiles the loop runs: a list of ``((q_start, q_end), [(k_start, k_end), ...])``, and the ``TileCounts``.

    Under ``is_causal`` a tile whose first key comes after the last key its last query may read
    lies wholly above the diagonal: it is left out of the plan, never computed. The diagonal is
    ``causal_alignment``'s: ``"top_left"`` (query ``i`` reads keys ``0..i``, as
    ``F.scaled_dot_product_attention``'s ``is_causal``) or ``"bottom_right"`` (keys
    ``0..i + L_k - L_q``: the last query reads every key, as new queries after a cache must).
    """
    offset = _causal_offset(l_q, l_k, causal_alignment)
    tiles, skipped = [], 0
    for q_start, q_end in _blocks(l_q, block_q):
        key_blocks = [(k_start, k_end) for k_start, k_end in _blocks(l_k, block_k)
                      if not (is_causal and k_start > q_end - 1 + offset)]
        skipped += math.ceil(l_k / block_k) - len(key_blocks)
        tiles.append(((q_start, q_end), key_blocks))
    computed = sum(len(key_blocks) for _, key_blocks in tiles)
    return tiles, TileCounts(computed, skipped)


def _tile_keep(mask, tiling, q_block, k_block, device):
    """Which keys of the tile each query may read, ``(1 or N, 1, 1 or bq, bk)`` bool; ``None``: all of them."""
    (q_start, q_end), (k_start, k_end) = q_block, k_block
    keep = None
    if mask is not None:
        rows = slice(q_start, q_end) if mask.shape[1] > 1 else slice(None)  # a padding mask has one row for all
        keep = mask[:, rows, k_start:k_end].to(device=device, dtype=torch.bool)  # (1 or N, 1 or bq, bk): this tile's
        keep = keep.unsqueeze(1)  # (1 or N, 1, 1 or bq, bk): one mask for every head
    if tiling.is_causal and k_end - 1 > q_start + tiling.offset:  # some key is past what some query reads: the diagonal crosses
        queries = torch.arange(q_start, q_end, device=device)  # (bq,)
        keys = torch.arange(k_start, k_end, device=device)  # (bk,)
        causal = keys[None, :] <= queries[:, None] + tiling.offset  # (bq, bk): key j at most i + offset
        keep = causal if keep is None else keep & causal  # (1 or N, 1, bq, bk)
    return keep


def _scores(q_scaled, k_tile, keep):
    """The tile's scores ``(N, H, bq, bk)`` from queries already scaled by ``1/√d``, ``-inf`` where a key may not be read."""
    s = q_scaled @ k_tile.transpose(-2, -1)  # (N, H, bq, bk)
    return s if keep is None else s.masked_fill(~keep, float("-inf"))


def _accumulation_dtype(dtype):
    """float16 and bfloat16 tiles are computed in float32, as FlashAttention keeps its statistics."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _forward(q, k, v, mask, tiling, scale):
    """The output ``(N, H, L_q, d_v)`` and each row's log-sum-exp ``(N, H, L_q)`` (``+inf`` for a row with no key)."""
    dtype = _accumulation_dtype(q.dtype)
    out = q.new_empty(*q.shape[:-1], v.shape[-1])  # (N, H, L_q, d_v)
    lse = q.new_empty(q.shape[:-1], dtype=dtype)  # (N, H, L_q)
    for q_block, key_blocks in tiling.tiles:
        q_tile = q[..., q_block[0]:q_block[1], :].to(dtype) * scale  # (N, H, bq, d): scaled once, not every tile
        m = q_tile.new_full(q_tile.shape[:-1], float("-inf"))  # (N, H, bq): running max of each row's scores
        l = q_tile.new_zeros(q_tile.shape[:-1])  # (N, H, bq): running sum of exp(score - m)
        acc = q_tile.new_zeros(*q_tile.shape[:-1], v.shape[-1])  # (N, H, bq, d_v): running Σ exp(score - m) · value
        for k_block in key_blocks:
            keep = _tile_keep(mask, tiling, q_block, k_block, q.device)  # (1 or N, 1, 1 or bq, bk) or None
            k_tile = k[..., k_block[0]:k_block[1], :].to(dtype)  # (N, H, bk, d)
            v_tile = v[..., k_block[0]:k_block[1], :].to(dtype)  # (N, H, bk, d_v)
            s = _scores(q_tile, k_tile, keep)  # (N, H, bq, bk)
            m, l, acc = online_update(m, l, s, acc, v_tile)  # (N, H, bq), (N, H, bq), (N, H, bq, d_v)
        has_key = l > 0  # (N, H, bq): the largest score contributes e^0 = 1, so l >= 1 once a key was read
        rows = slice(q_block[0], q_block[1])
        out[..., rows, :] = acc / torch.where(has_key, l, 1.0).unsqueeze(-1)  # (N, H, bq, d_v): zeros with no key; cast
        lse[..., rows] = torch.where(has_key, m + l.log(), float("inf"))  # (N, H, bq): log Σ exp(score)
    return out, lse


def _backward(grad_out, q, k, v, out, lse, mask, tiling, scale):
    """Gradients of ``q``, ``k``, ``v`` from the saved ``out`` and ``lse``, every tile's weights recomputed.

    The query blocks are the outer loop, as in the forward pass, so several query blocks add into
    the same rows of ``grad_k`` and ``grad_v``. That is harmless in PyTorch; a GPU kernel that ran
    the query blocks in parallel would need atomic adds there. FlashAttention-2's backward swaps
    the loops instead: each key block outer, its ``dK`` and ``dV`` kept on the chip, and ``dQ``
    accumulated with atomic adds.
    """
    dtype = lse.dtype
    q, k, v, out, grad_out = (t.to(dtype) for t in (q, k, v, out, grad_out))  # float32 for half inputs
    grad_q, grad_k, grad_v = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    delta = (grad_out * out).sum(dim=-1)  # (N, H, L_q): Σ_j p_ij dp_ij = dO_i · o_i, the softmax's correction term
    for q_block, key_blocks in tiling.tiles:
        rows = slice(q_block[0], q_block[1])
        q_tile, g_tile = q[..., rows, :] * scale, grad_out[..., rows, :]  # (N, H, bq, d), (N, H, bq, d_v)
        for k_block in key_blocks:
            cols = slice(k_block[0], k_block[1])
            keep = _tile_keep(mask, tiling, q_block, k_block, q.device)  # (1 or N, 1, 1 or bq, bk) or None
            s = _scores(q_tile, k[..., cols, :], keep)  # (N, H, bq, bk): recomputed, not stored
            p = torch.exp(s - lse[..., rows].unsqueeze(-1))  # (N, H, bq, bk): the weights, from the saved lse
            grad_v[..., cols, :] += p.transpose(-2, -1) @ g_tile  # (N, H, bk, d_v)
            dp = g_tile @ v[..., cols, :].transpose(-2, -1)  # (N, H, bq, bk): gradient of the weights
            ds = p * (dp - delta[..., rows].unsqueeze(-1))  # (N, H, bq, bk): through the softmax
            grad_q[..., rows, :] += (ds @ k[..., cols, :]) * scale  # (N, H, bq, d)
            grad_k[..., cols, :] += ds.transpose(-2, -1) @ q_tile  # (N, H, bk, d): q_tile is already scaled
    return grad_q, grad_k, grad_v


class _TiledAttention(torch.autograd.Function):
    """Forward in tiles; backward recomputes the tiles from the output and the rows' log-sum-exp."""

    @staticmethod
    def forward(ctx, q, k, v, mask, tiling):
        scale = 1 / math.sqrt(q.shape[-1])
        out, lse = _forward(q, k, v, mask, tiling, scale)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.mask, ctx.tiling, ctx.scale = mask, tiling, scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved_tensors
        grads = _backward(grad_out, q, k, v, out, lse, ctx.mask, ctx.tiling, ctx.scale)
        return (*(grad.to(q.dtype) for grad in grads), None, None)


def tiled_attention(q, k, v, mask=None, is_causal=False, block_q=64, block_k=64, return_counts=False,
                    causal_alignment="top_left"):
    """``softmax(q kᵀ / √d) v`` computed in ``block_q × block_k`` tiles, never the whole score matrix.

    Shapes: ``q`` ``(N, H, L_q, d)``, ``k`` ``(N, H, L_k, d)``, ``v`` ``(N, H, L_k, d_v)``; ``mask``
    the course's keep-mask (``True`` = may attend), ``(1 or N, 1 or L_q, L_k)``: ``(N, 1, L_k)``
    padding or ``(1, L_q, L_k)`` causal. Returns the output ``(N, H, L_q, d_v)``, and with
    ``return_counts`` also the ``TileCounts`` of the tiles computed and skipped.

    Causal: query ``i`` reads keys ``0..i`` (``causal_alignment="top_left"``, as
    ``F.scaled_dot_product_attention``'s ``is_causal``) or keys ``0..i + L_k - L_q``
    (``"bottom_right"``: the new queries of a decode step or of a chunk after a cache); the two
    agree when ``L_q = L_k``. Tiles wholly above the diagonal are skipped. With ``mask`` too, both
    apply; a row with no key to read gets zeros, as the course's attention gives.

    Memory: besides the output and one number per row (kept for the backward pass), the largest
    tensor the forward pass creates holds ``N·H·block_q·max(block_k, d, d_v)`` numbers; float16 and
    bfloat16 tiles are computed in float32 (adding one key and one value block's copy). The
    backward pass adds the gradients. No dropout on the weights.
    """
    check_tensor("q", q, ndim=4)
    check_tensor("k", k, ndim=4)
    check_tensor("v", v, ndim=4)
    if not q.is_floating_point() or k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k and v must be floating-point tensors of one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    n, h, l_q, d = q.shape
    if k.shape[:2] != (n, h) or k.shape[-1] != d:
        raise ValueError(f"k must have shape ({n}, {h}, L_k, {d}) to match q {tuple(q.shape)}, got {tuple(k.shape)}")
    if v.shape[:3] != k.shape[:3]:
        raise ValueError(f"v must have shape {tuple(k.shape[:3])} + (d_v,) to match k, got {tuple(v.shape)}")
    check_instance("is_causal", is_causal, bool, "True or False")
    check_positive_int("block_q", block_q)
    check_positive_int("block_k", block_k)
    if mask is not None:
        keep_mask(mask, n, l_q, k.shape[2], as_bool=False)  # (1 or N, 1 or L_q, L_k): each tile converts its part
    tiles, counts = tile_plan(l_q, k.shape[2], block_q, block_k, is_causal, causal_alignment)  # the plan shown in chapter 14
    tiling = _Tiling(tiles, is_causal, _causal_offset(l_q, k.shape[2], causal_alignment))
    out = _TiledAttention.apply(q, k, v, mask, tiling)  # (N, H, L_q, d_v)
    return (out, counts) if return_counts else out
