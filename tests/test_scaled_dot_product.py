"""scaled_dot_product and masked_softmax: agreement with PyTorch, masks, all-masked rows, errors."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from stepbystep.models import masked_softmax, scaled_dot_product, subsequent_mask


def _qkv(n, l_q, l_k, d_k, d_v, seed=0, heads=()):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(n, *heads, l_q, d_k, generator=gen)  # (N, ..., L_q, d_k)
    k = torch.randn(n, *heads, l_k, d_k, generator=gen)  # (N, ..., L_k, d_k)
    v = torch.randn(n, *heads, l_k, d_v, generator=gen)  # (N, ..., L_k, d_v)
    return q, k, v


def _mask_with_a_key_per_row(shape, seed):
    """A random keep-mask in which every query row keeps at least one key."""
    mask = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5
    mask[..., 0] = True
    return mask


def test_shapes_and_the_formula_by_hand():
    q, k, v = _qkv(n=2, l_q=3, l_k=5, d_k=4, d_v=6)
    context, weights = scaled_dot_product(q, k, v)
    assert context.shape == (2, 3, 6) and weights.shape == (2, 3, 5)
    q64, k64, v64 = q.double(), k.double(), v.double()
    expected_weights = torch.softmax(q64 @ k64.transpose(-2, -1) / math.sqrt(4), dim=-1)  # (2, 3, 5)
    torch.testing.assert_close(weights, expected_weights.float())
    torch.testing.assert_close(context, (expected_weights @ v64).float())


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 3),
    l_q=st.integers(1, 5),
    l_k=st.integers(1, 5),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 6),
    mask_kind=st.sampled_from(["none", "padding", "shared", "per_sequence"]),
    seed=st.integers(0, 2**16),
)
def test_matches_pytorchs_fused_kernel(n, l_q, l_k, d_k, d_v, mask_kind, seed):
    """Our keep-mask is exactly ``F.scaled_dot_product_attention``'s boolean ``attn_mask``.

    For ``F.scaled_dot_product_attention`` a boolean ``True`` means "takes part in attention",
    as in ours, so the mask passes through unconverted. ``nn.MultiheadAttention`` and
    ``nn.Transformer`` read booleans the other way round (``True`` = blocked): masks for them go
    through ``to_torch_attn_mask`` / ``to_key_padding_mask`` (see ``test_masks.py``).
    """
    q, k, v = _qkv(n, l_q, l_k, d_k, d_v, seed)
    shape = {"padding": (n, 1, l_k), "shared": (1, l_q, l_k), "per_sequence": (n, l_q, l_k)}
    mask = None if mask_kind == "none" else _mask_with_a_key_per_row(shape[mask_kind], seed)
    context, _ = scaled_dot_product(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (N, L_q, d_v)
    torch.testing.assert_close(context, expected, atol=1e-5, rtol=1e-5)


def test_masked_keys_get_exactly_zero_weight_and_rows_sum_to_one():
    q, k, v = _qkv(n=2, l_q=4, l_k=4, d_k=3, d_v=3)
    source = torch.tensor([[[True, True, True, False]], [[True, False, True, True]]])  # (2, 1, 4)
    _, weights = scaled_dot_product(q, k, v, source)
    assert torch.all(weights[0, :, 3] == 0) and torch.all(weights[1, :, 1] == 0)
    assert torch.all(weights[source.expand(2, 4, 4)] > 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4))
    _, causal = scaled_dot_product(q, k, v, subsequent_mask(4))
    assert torch.all(causal.triu(diagonal=1) == 0)
    torch.testing.assert_close(causal[:, 0, 0], torch.ones(2))  # the first query sees only itself


def test_masked_values_do_not_change_the_context():
    q, k, v = _qkv(n=1, l_q=3, l_k=4, d_k=2, d_v=2)
    mask = torch.tensor([[[True, True, False, False]]])  # (1, 1, 4)
    changed_k, changed_v = k.clone(), v.clone()
    changed_k[:, 2:] = 100.0
    changed_v[:, 2:] = -100.0
    context, _ = scaled_dot_product(q, k, v, mask)
    torch.testing.assert_close(scaled_dot_product(q, changed_k, changed_v, mask)[0], context)


def test_an_all_masked_query_gets_zeros_not_nan_and_finite_gradients():
    q, k, v = (t.requires_grad_() for t in _qkv(n=2, l_q=3, l_k=3, d_k=2, d_v=2))
    mask = torch.tensor([[[False, False, False]], [[True, False, True]]])  # (2, 1, 3)
    context, weights = scaled_dot_product(q, k, v, mask)
    assert torch.equal(weights[0], torch.zeros(3, 3)) and torch.equal(context[0], torch.zeros(3, 2))
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(3))
    context.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert torch.equal(q.grad[0], torch.zeros(3, 2))  # nothing flows through an empty row
    assert torch.equal(v.grad[1, 1], torch.zeros(2))  # nor into a masked value


def test_one_masked_query_row_leaves_the_other_rows_alone():
    q, k, v = _qkv(n=1, l_q=3, l_k=3, d_k=2, d_v=2)
    mask = torch.tensor([[[True, True, False], [False, False, False], [True, False, True]]])  # (1, 3, 3)
    context, weights = scaled_dot_product(q, k, v, mask)
    assert torch.equal(weights[0, 1], torch.zeros(3))
    expected = F.scaled_dot_product_attention(q[:, [0, 2]], k, v, attn_mask=mask[:, [0, 2]])  # (1, 2, 2)
    torch.testing.assert_close(context[:, [0, 2]], expected)


def test_head_dimensions_broadcast_with_the_mask():
    q, k, v = _qkv(n=2, l_q=4, l_k=5, d_k=3, d_v=2, heads=(3,))  # (2, 3, L, d)
    source = _mask_with_a_key_per_row((2, 1, 5), seed=1)  # (N, 1, L_k)
    context, weights = scaled_dot_product(q, k, v, source)
    assert context.shape == (2, 3, 4, 2) and weights.shape == (2, 3, 4, 5)
    for h in range(3):  # every head is an independent attention under the same mask
        context_h, weights_h = scaled_dot_product(q[:, h], k[:, h], v[:, h], source)
        torch.testing.assert_close(context[:, h], context_h)
        torch.testing.assert_close(weights[:, h], weights_h)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=source.unsqueeze(1))  # (2, 3, 4, 2)
    torch.testing.assert_close(context, fused, atol=1e-5, rtol=1e-5)


def test_integer_masks_work_like_boolean_ones():
    q, k, v = _qkv(n=1, l_q=3, l_k=3, d_k=2, d_v=2)
    mask = subsequent_mask(3)
    for as_int in (mask.long(), mask.int()):
        for ours, theirs in zip(scaled_dot_product(q, k, v, as_int), scaled_dot_product(q, k, v, mask)):
            torch.testing.assert_close(ours, theirs)


def test_masked_softmax_without_a_mask_is_softmax():
    scores = torch.randn(2, 3, 4)
    torch.testing.assert_close(masked_softmax(scores), torch.softmax(scores, dim=-1))


def test_masked_softmax_accepts_0_1_masks_and_refuses_float_masks():
    scores = torch.randn(2, 3)
    mask = torch.tensor([[1, 0, 1]])  # (1, 3)
    torch.testing.assert_close(masked_softmax(scores, mask), masked_softmax(scores, mask.bool()))
    with pytest.raises(TypeError, match="from_additive_mask"):
        masked_softmax(scores, torch.tensor([[0.0, float("-inf"), 0.0]]))
    with pytest.raises(TypeError, match="mask must be a tensor, got list"):
        masked_softmax(scores, [[True, False, True]])


def test_errors_name_what_was_expected_and_what_arrived():
    q, k, v = _qkv(n=2, l_q=3, l_k=4, d_k=5, d_v=6)
    with pytest.raises(TypeError, match="k must be a tensor, got list"):
        scaled_dot_product(q, k.tolist(), v)
    with pytest.raises(ValueError, match=r"q must have shape \(N, L, d\), got \(3, 5\)"):
        scaled_dot_product(q[0], k, v)
    with pytest.raises(ValueError, match="k must have the last dimension d_k=5 of q, got 4"):
        scaled_dot_product(q, k[..., :4], v)
    with pytest.raises(ValueError, match="v must have the length L_k=4 of k, got 2"):
        scaled_dot_product(q, k, v[:, :2])
    with pytest.raises(ValueError, match=r"leading dimensions.*\(2,\), \(3,\) and \(3,\)"):
        scaled_dot_product(q, torch.randn(3, 4, 5), torch.randn(3, 4, 6))
    with pytest.raises(ValueError, match=r"mask must have shape \(1 or 2, 1 or 3, 4\), got \(2, 1, 3\)"):
        scaled_dot_product(q, k, v, torch.ones(2, 1, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="from_additive_mask"):
        scaled_dot_product(q, k, v, torch.zeros(2, 1, 4))
