"""Masks: building them, checking them, and converting to and from PyTorch's conventions."""
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from stepbystep.models import (
    from_additive_mask,
    from_key_padding_mask,
    from_torch_attn_mask,
    keep_mask,
    padding_mask,
    subsequent_mask,
    to_additive_mask,
    to_key_padding_mask,
    to_torch_attn_mask,
)


@pytest.mark.parametrize("size", [1, 2, 5])
def test_subsequent_mask_is_a_lower_triangle_of_trues(size):
    mask = subsequent_mask(size)
    assert mask.shape == (1, size, size) and mask.dtype == torch.bool
    for i in range(size):
        for j in range(size):
            assert mask[0, i, j].item() == (j <= i)  # query i sees keys 0..i


def test_subsequent_mask_is_built_on_the_requested_device():
    assert subsequent_mask(3, device="meta").device.type == "meta"


@pytest.mark.parametrize("size, error", [(0, ValueError), (-2, ValueError), (2.0, TypeError), (True, TypeError),
                                         ("3", TypeError)])
def test_subsequent_mask_rejects_sizes_that_are_not_positive_ints(size, error):
    with pytest.raises(error, match="size must be a positive int, got"):
        subsequent_mask(size)


def test_padding_mask_marks_the_pad_ids_false():
    ids = torch.tensor([[5, 7, 0, 0], [3, 0, 4, 9]])  # (2, 4)
    mask = padding_mask(ids)
    assert mask.shape == (2, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0].tolist() == [[True, True, False, False], [True, False, True, True]]
    assert padding_mask(ids, pad_id=9)[:, 0].tolist() == [[True] * 4, [True, True, True, False]]


def test_padding_mask_rejects_bad_input():
    with pytest.raises(TypeError, match="ids must be a tensor, got list"):
        padding_mask([[1, 0]])
    with pytest.raises(ValueError, match=r"ids must be a 2-D tensor, got shape \(4,\)"):
        padding_mask(torch.tensor([1, 2, 0, 0]))


@pytest.mark.parametrize("shape", [(1, 1, 5), (2, 1, 5), (1, 3, 5), (2, 3, 5)])
def test_keep_mask_accepts_every_shape_that_broadcasts(shape):
    keep_mask(torch.ones(shape, dtype=torch.bool), n=2, l_q=3, l_k=5)
    keep_mask(torch.ones(shape, dtype=torch.long), n=2, l_q=3, l_k=5)  # 0/1 integers too


@pytest.mark.parametrize("shape", [(3, 1, 5), (2, 2, 5), (2, 3, 4), (2, 5), (2, 1, 1, 5)])
def test_keep_mask_names_the_expected_shape(shape):
    with pytest.raises(ValueError, match=re.escape(f"(1 or 2, 1 or 3, 5), got {shape}")):
        keep_mask(torch.ones(shape, dtype=torch.bool), n=2, l_q=3, l_k=5)


def test_keep_mask_rejects_non_tensors_and_float_masks():
    with pytest.raises(TypeError, match="mask must be a tensor, got list"):
        keep_mask([[[True]]], 1, 1, 1)
    with pytest.raises(TypeError, match="from_additive_mask"):
        keep_mask(torch.zeros(1, 1, 3), 1, 1, 3)


masks_3d = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**16)).map(
    lambda args: torch.rand(1, args[0], args[1], generator=torch.Generator().manual_seed(args[2])) > 0.5
)


@settings(max_examples=25, deadline=None)
@given(mask=masks_3d)
def test_attn_mask_round_trip_inverts_the_booleans(mask):
    torch_mask = to_torch_attn_mask(mask)  # (L_q, L_k), True = blocked
    assert torch_mask.shape == mask.shape[1:] and torch_mask.dtype == torch.bool
    assert torch.equal(torch_mask, ~mask[0])
    assert torch.equal(to_torch_attn_mask(mask[0]), torch_mask)  # (L_q, L_k) also accepted
    assert torch.equal(from_torch_attn_mask(torch_mask), mask)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), length=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_key_padding_round_trip(n, length, seed):
    mask = torch.rand(n, 1, length, generator=torch.Generator().manual_seed(seed)) > 0.5  # (N, 1, L)
    key_padding = to_key_padding_mask(mask)  # (N, L), True = pad
    assert key_padding.shape == (n, length)
    assert torch.equal(key_padding, ~mask[:, 0])
    assert torch.equal(from_key_padding_mask(key_padding), mask)


@settings(max_examples=25, deadline=None)
@given(mask=masks_3d, dtype=st.sampled_from([torch.float32, torch.float64, torch.float16]))
def test_additive_round_trip(mask, dtype):
    additive = to_additive_mask(mask, dtype=dtype)
    assert additive.shape == mask.shape and additive.dtype == dtype
    assert torch.all(additive[mask] == 0)
    assert torch.all(additive[~mask] == float("-inf"))
    assert torch.equal(from_additive_mask(additive), mask)


def test_additive_causal_mask_equals_pytorchs_own():
    for length in (1, 4, 7):
        theirs = nn.Transformer.generate_square_subsequent_mask(length)  # (L, L), 0 / -inf
        assert torch.equal(to_additive_mask(subsequent_mask(length))[0], theirs)
        assert torch.equal(from_additive_mask(theirs), subsequent_mask(length)[0])


def test_torch_attn_mask_of_the_causal_mask_blocks_the_future():
    blocked = to_torch_attn_mask(subsequent_mask(4))
    assert torch.equal(blocked, torch.ones(4, 4, dtype=torch.bool).triu(diagonal=1))


def test_key_padding_mask_zeroes_padded_keys_in_pytorchs_attention():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True).eval()
    x = torch.randn(2, 5, 4)
    ids = torch.tensor([[1, 2, 3, 0, 0], [4, 5, 6, 7, 0]])
    key_padding = to_key_padding_mask(padding_mask(ids))  # (2, 5), True = pad
    _, weights = mha(x, x, x, key_padding_mask=key_padding, average_attn_weights=False)  # (2, 2, 5, 5)
    assert torch.all(weights[0, :, :, 3:] == 0) and torch.all(weights[1, :, :, 4] == 0)
    assert torch.all(weights[0, :, :, :3] > 0) and torch.all(weights[1, :, :, :4] > 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 5))


def test_passing_our_keep_mask_unconverted_would_block_the_wrong_keys():
    """The reference material's bug: PyTorch reads a keep-mask as its opposite."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(embed_dim=4, num_heads=1, batch_first=True).eval()
    x = torch.randn(1, 3, 4)
    keep = subsequent_mask(3)  # (1, 3, 3), True = may attend
    _, right = mha(x, x, x, attn_mask=to_torch_attn_mask(keep))  # (1, 3, 3)
    _, wrong = mha(x, x, x, attn_mask=keep[0, :, :])
    assert torch.all(right[0].triu(diagonal=1) == 0)
    # unconverted, each query sees only the keys after it, and the last query none at all (NaN)
    assert torch.all(wrong[0, :2].tril() == 0) and torch.isnan(wrong[0, 2]).all()


def test_converters_reject_wrong_shapes():
    with pytest.raises(ValueError, match=r"mask must be shared by the batch.*use to_key_padding_mask"):
        to_torch_attn_mask(torch.ones(2, 3, 3, dtype=torch.bool))  # per-sequence masks
    with pytest.raises(ValueError, match=r"mask must have shape \(1, L_q, L_k\) or \(L_q, L_k\), got \(3,\)"):
        to_torch_attn_mask(torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"attn_mask must be a 2-D tensor, got shape \(4, 3, 3\)"):
        from_torch_attn_mask(torch.zeros(4, 3, 3, dtype=torch.bool))  # PyTorch's (N*heads, L, L)
    with pytest.raises(ValueError, match=r"source_mask must have shape \(N, 1, L\), got \(2, 3, 5\)"):
        to_key_padding_mask(torch.ones(2, 3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"key_padding_mask must be a 2-D tensor, got shape \(2, 1, 5\)"):
        from_key_padding_mask(torch.zeros(2, 1, 5, dtype=torch.bool))


@pytest.mark.parametrize(
    "converter, argument",
    [
        (to_torch_attn_mask, "mask"),
        (from_torch_attn_mask, "attn_mask"),
        (to_key_padding_mask, "source_mask"),
        (from_key_padding_mask, "key_padding_mask"),
        (to_additive_mask, "mask"),
        (from_additive_mask, "additive"),
    ],
)
def test_converters_reject_non_tensors(converter, argument):
    with pytest.raises(TypeError, match=f"^{argument} must be a tensor, got list"):
        converter([[True, False]])


@pytest.mark.parametrize("converter", [to_torch_attn_mask, to_key_padding_mask, to_additive_mask])
def test_keep_mask_converters_refuse_float_masks(converter):
    """An additive mask (0 keep, -inf block) cast to bool would come out inverted."""
    additive = to_additive_mask(subsequent_mask(3))  # (1, 3, 3)
    with pytest.raises(TypeError, match="from_additive_mask"):
        converter(additive)


def test_from_converters_refuse_the_wrong_dtype():
    with pytest.raises(TypeError, match="from_additive_mask"):
        from_torch_attn_mask(torch.zeros(3, 3))
    with pytest.raises(TypeError, match="additive must be a float mask, got dtype torch.bool"):
        from_additive_mask(subsequent_mask(3))


def test_integer_keep_masks_convert_like_booleans():
    keep = subsequent_mask(3)
    assert torch.equal(to_torch_attn_mask(keep.long()), to_torch_attn_mask(keep))
    assert torch.equal(to_additive_mask(keep.int()), to_additive_mask(keep))


def test_keep_mask_names_only_the_sizes_a_batch_of_one_allows():
    with pytest.raises(ValueError, match=r"mask must have shape \(1, 1, 4\), got \(2, 1, 4\)"):
        keep_mask(torch.ones(2, 1, 4, dtype=torch.bool), 1, 1, 4)
    with pytest.raises(ValueError, match=r"mask must have shape \(1, 1 or 3, 4\), got \(2, 3, 4\)"):
        keep_mask(torch.ones(2, 3, 4, dtype=torch.bool), 1, 3, 4)
