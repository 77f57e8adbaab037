"""Tiled attention (chapter 14): the fused kernel's numbers, in tiles, without the L_q × L_k matrix."""
import math

import pytest
import torch
import torch.nn.functional as F

from stepbystep.experiments.memory import measure_memory
from stepbystep.models import TileCounts, attend, subsequent_mask, tile_plan, tiled_attention

SHAPES = [  # (N, H, L_q, L_k, d, d_v, block_q, block_k)
    (2, 3, 17, 29, 8, 8, 5, 7),  # blocks that divide neither length
    (1, 2, 64, 64, 16, 16, 64, 64),  # one tile
    (2, 1, 10, 3, 4, 5, 4, 100),  # L_q > L_k, a key block longer than the keys, d_v != d
    (1, 1, 33, 33, 8, 8, 8, 8),
    (3, 2, 1, 40, 8, 8, 1, 9),  # one query
    (1, 2, 40, 1, 8, 8, 7, 1),  # one key
]


def _inputs(n, h, l_q, l_k, d, d_v, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(n, h, l_q, d, generator=generator, dtype=dtype)
    k = torch.randn(n, h, l_k, d, generator=generator, dtype=dtype)
    v = torch.randn(n, h, l_k, d_v, generator=generator, dtype=dtype)
    return q, k, v


def _masks(n, l_q, l_k, seed=0):
    generator = torch.Generator().manual_seed(seed)
    padding = torch.rand(n, 1, l_k, generator=generator) > 0.3  # (N, 1, L_k)
    padding[:, :, 0] = True  # every row keeps a key: SDPA's own answer is defined everywhere
    causal = torch.ones(1, l_q, l_k, dtype=torch.bool).tril()  # (1, L_q, L_k)
    return {"no mask": None, "padding": padding, "causal mask": causal}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("masking", ["no mask", "padding", "causal mask", "is_causal", "padding and is_causal"])
def test_equals_scaled_dot_product_attention(shape, masking):
    n, h, l_q, l_k, d, d_v, block_q, block_k = shape
    q, k, v = _inputs(n, h, l_q, l_k, d, d_v)
    masks = _masks(n, l_q, l_k)
    mask = masks["padding"] if masking.startswith("padding") else masks.get(masking)
    is_causal = masking.endswith("is_causal")
    ours = tiled_attention(q, k, v, mask=mask, is_causal=is_causal, block_q=block_q, block_k=block_k)
    keep = mask
    if is_causal:  # SDPA takes one or the other: the causal mask and the padding, combined by hand
        causal = masks["causal mask"]
        keep = causal if mask is None else mask & causal
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=None if keep is None else keep.unsqueeze(1))
    assert ours.shape == (n, h, l_q, d_v)
    assert torch.allclose(ours, theirs, atol=1e-5, rtol=0)


def test_is_causal_is_sdpas_is_causal_with_more_keys_than_queries():
    q, k, v = _inputs(2, 2, 7, 19, 8, 8)
    ours = tiled_attention(q, k, v, is_causal=True, block_q=3, block_k=4)
    assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-5, rtol=0)


def test_float64_matches_to_rounding():
    q, k, v = _inputs(2, 2, 23, 31, 8, 8, dtype=torch.float64)
    ours = tiled_attention(q, k, v, is_causal=True, block_q=6, block_k=5)
    assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-12, rtol=0)


def test_a_fully_masked_row_is_zeros_as_in_the_courses_attention():
    q, k, v = _inputs(2, 3, 12, 10, 8, 8)
    mask = torch.rand(2, 12, 10, generator=torch.Generator().manual_seed(1)) > 0.4  # (N, L_q, L_k)
    mask[0, 3] = False  # no key at all for query 3 of sequence 0
    mask[1, 7:] = False  # nor for queries 7-11 of sequence 1: a whole block
    padding = torch.ones(2, 1, 10, dtype=torch.bool)
    padding[1] = False  # sequence 1 is all padding
    for keep in (mask, padding):
        ours = tiled_attention(q, k, v, mask=keep, block_q=4, block_k=3)
        context, _ = attend(q, k, v, keep)
        assert torch.allclose(ours, context, atol=1e-5, rtol=0)
        assert not torch.isnan(ours).any()
    assert tiled_attention(q, k, v, mask=mask, block_q=4, block_k=3)[0, :, 3].abs().max() == 0
    assert tiled_attention(q, k, v, mask=padding, block_q=4, block_k=3)[1].abs().max() == 0


def test_the_courses_causal_mask_and_int_masks_are_accepted():
    q, k, v = _inputs(1, 2, 9, 9, 4, 4)
    ours = tiled_attention(q, k, v, mask=subsequent_mask(9).int(), block_q=2, block_k=4)
    assert torch.allclose(ours, tiled_attention(q, k, v, is_causal=True, block_q=2, block_k=4), atol=1e-6)


@pytest.mark.parametrize("masking", ["none", "padding with an empty row", "is_causal"])
def test_gradients_match_autograd_of_the_naive_attention(masking):
    q, k, v = _inputs(2, 2, 13, 11, 8, 6, dtype=torch.float64)
    mask, is_causal = None, False
    if masking == "padding with an empty row":
        mask = torch.rand(2, 1, 11, generator=torch.Generator().manual_seed(2)) > 0.3
        mask[1] = False  # sequence 1: no key at all, so no gradient either
    elif masking == "is_causal":
        is_causal = True
    grad = torch.randn(2, 2, 13, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    ours = torch.autograd.grad(tiled_attention(*inputs, mask=mask, is_causal=is_causal, block_q=4, block_k=3),
                               inputs, grad)
    keep = torch.ones(1, 13, 11, dtype=torch.bool).tril() if is_causal else mask
    naive = torch.autograd.grad(attend(*inputs, keep)[0], inputs, grad)
    for mine, reference in zip(ours, naive):
        assert torch.allclose(mine, reference, atol=1e-10, rtol=0)
    assert ours[0].abs().sum() > 0


def test_gradcheck():
    q, k, v = (t.requires_grad_() for t in _inputs(1, 1, 5, 7, 3, 2, dtype=torch.float64))
    assert torch.autograd.gradcheck(lambda q, k, v: tiled_attention(q, k, v, is_causal=True, block_q=2, block_k=3),
                                    (q, k, v))


def test_no_tensor_of_lq_by_lk_numbers_forward_or_backward():
    l_q, l_k, d = 1024, 768, 16
    q, k, v = (t.requires_grad_() for t in _inputs(1, 1, l_q, l_k, d, d))
    out, forward = measure_memory(lambda: tiled_attention(q, k, v, block_q=64, block_k=64))
    tile_bytes = 64 * 64 * 4
    output_bytes = l_q * d * 4
    assert forward.largest_bytes <= max(tile_bytes, output_bytes)
    assert forward.peak_bytes < l_q * l_k * 4 / 10  # the scores alone would take 10 times more
    _, backward = measure_memory(lambda: out.sum().backward())
    assert backward.largest_bytes <= max(tile_bytes, l_q * d * 4, l_k * d * 4)
    assert backward.peak_bytes < l_q * l_k * 4 / 10
    _, naive = measure_memory(lambda: attend(q, k, v)[0])
    assert naive.largest_bytes >= l_q * l_k * 4  # the probe does see a full score matrix


def test_causal_tiles_above_the_diagonal_are_skipped_not_masked():
    # keys and values after the first block are NaN: a masked tile would still multiply them by 0 and give NaN
    q, k, v = _inputs(1, 2, 16, 16, 4, 4)
    k[..., 4:, :], v[..., 4:, :] = float("nan"), float("nan")
    out, counts = tiled_attention(q, k, v, is_causal=True, block_q=4, block_k=4, return_counts=True)
    assert not torch.isnan(out[..., :4, :]).any()  # query block 0 read key block 0 only
    assert counts == TileCounts(computed=10, skipped=6) and counts.total == 16


@pytest.mark.parametrize("l_q, l_k, block_q, block_k, skipped", [
    (256, 256, 64, 64, 6),  # 4 blocks: 4·3/2 above the diagonal
    (100, 100, 10, 10, 45),
    (10, 10, 3, 3, 6),  # ragged last block (3, 3, 3, 1)
    (8, 16, 4, 4, 3 + 2),  # more keys than queries: block 0 reads key block 0 of 4, block 1 key blocks 0-1
    (16, 8, 4, 4, 1),  # more queries than keys: only block 0's second key block is skipped
    (12, 12, 4, 6, 1),
    (12, 12, 6, 4, 1),  # query block 0 (queries 0-5) skips keys 8-11 only
])
def test_causal_tile_counts(l_q, l_k, block_q, block_k, skipped):
    _, counts = tile_plan(l_q, l_k, block_q, block_k, is_causal=True)
    total = math.ceil(l_q / block_q) * math.ceil(l_k / block_k)
    assert counts == TileCounts(total - skipped, skipped)
    q, k, v = _inputs(1, 1, l_q, l_k, 2, 2)
    assert tiled_attention(q, k, v, is_causal=True, block_q=block_q, block_k=block_k, return_counts=True)[1] == counts
    assert tile_plan(l_q, l_k, block_q, block_k)[1] == TileCounts(total, 0)


def test_the_plan_lists_the_computed_key_blocks_of_each_query_block():
    plan, _ = tile_plan(10, 10, 4, 4, is_causal=True)
    assert plan == [((0, 4), [(0, 4)]), ((4, 8), [(0, 4), (4, 8)]), ((8, 10), [(0, 4), (4, 8), (8, 10)])]


def test_blocks_larger_than_the_lengths_are_one_tile():
    q, k, v = _inputs(1, 1, 5, 6, 4, 4)
    out, counts = tiled_attention(q, k, v, block_q=64, block_k=64, return_counts=True)
    assert counts == TileCounts(1, 0)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v), atol=1e-6)


@pytest.mark.parametrize("call, error, words", [
    (lambda q, k, v: tiled_attention(q, k[..., :3], v), ValueError, "k must have shape (2, 3, L_k, 4)"),
    (lambda q, k, v: tiled_attention(q, k[:1], v), ValueError, "k must have shape (2, 3, L_k, 4)"),
    (lambda q, k, v: tiled_attention(q, k, v[:, :, :4]), ValueError, "v must have shape (2, 3, 6)"),
    (lambda q, k, v: tiled_attention(q[0], k, v), ValueError, "q must be a 4-D tensor"),
    (lambda q, k, v: tiled_attention(q, k.double(), v), TypeError, "one dtype"),
    (lambda q, k, v: tiled_attention(q.long(), k.long(), v.long()), TypeError, "floating-point"),
    (lambda q, k, v: tiled_attention(q.tolist(), k, v), TypeError, "q must be a tensor"),
    (lambda q, k, v: tiled_attention(q, k, v, block_q=0), ValueError, "block_q must be a positive int, got 0"),
    (lambda q, k, v: tiled_attention(q, k, v, block_k=2.5), TypeError, "block_k must be a positive int"),
    (lambda q, k, v: tiled_attention(q, k, v, block_k=True), TypeError, "block_k must be a positive int"),
    (lambda q, k, v: tiled_attention(q, k, v, is_causal=1), TypeError, "is_causal must be True or False"),
    (lambda q, k, v: tiled_attention(q, k, v, mask=torch.ones(2, 1, 5, dtype=torch.bool)), ValueError,
     "mask must have shape (1 or 2, 1 or 5, 6)"),
    (lambda q, k, v: tiled_attention(q, k, v, mask=torch.zeros(2, 1, 6)), TypeError, "boolean keep-mask"),
])
def test_bad_arguments_are_named(call, error, words):
    q, k, v = _inputs(2, 3, 5, 6, 4, 4)
    with pytest.raises(error) as raised:
        call(q, k, v)
    assert words in str(raised.value)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_tiles_are_computed_in_float32(dtype):
    q, k, v = _inputs(1, 2, 300, 300, 16, 16)
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # float32
    low = [t.to(dtype) for t in (q, k, v)]
    ours = tiled_attention(*low, is_causal=True, block_q=64, block_k=16)
    fused = F.scaled_dot_product_attention(*low, is_causal=True)
    assert ours.dtype == dtype
    assert (ours.float() - reference).abs().max() <= 1.5 * (fused.float() - reference).abs().max()
    grads = torch.autograd.grad(tiled_attention(*[t.requires_grad_() for t in low], block_q=64, block_k=16).sum(), low)
    assert all(grad.dtype == dtype and torch.isfinite(grad).all() for grad in grads)


def test_an_int_mask_is_converted_tile_by_tile_never_whole():
    l_q = l_k = 512
    q, k, v = _inputs(1, 1, l_q, l_k, 8, 8)
    mask = subsequent_mask(l_q).int()  # (1, L_q, L_k) of int32: given, not created
    out, report = measure_memory(lambda: tiled_attention(q, k, v, mask=mask, block_q=64, block_k=64))
    assert report.largest_bytes < l_q * l_k  # a bool copy of the whole mask would take L_q·L_k bytes
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-5)
