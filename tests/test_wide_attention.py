"""Attention and WideMultiHeadAttention (wide heads): shapes, weights, masks, creation order, errors."""
import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from stepbystep.models import Attention, NarrowMultiHeadAttention, WideMultiHeadAttention, padding_mask, subsequent_mask


def _head(hidden_dim=4, input_dim=3, proj_values=False, seed=0):
    torch.manual_seed(seed)
    return Attention(hidden_dim, input_dim=input_dim, proj_values=proj_values)


@pytest.mark.parametrize("proj_values, d_v", [(False, 3), (True, 4)])
def test_attention_shapes_and_stored_keys(proj_values, d_v):
    head = _head(proj_values=proj_values)
    assert head.d_k == 4 and head.input_dim == 3 and head.alphas is None
    keys, query = torch.randn(2, 5, 3), torch.randn(2, 7, 3)
    head.init_keys(keys)
    torch.testing.assert_close(head.proj_keys, head.linear_key(keys))
    expected_values = head.linear_value(keys) if proj_values else keys
    torch.testing.assert_close(head.values, expected_values)
    assert head.score_function(query).shape == (2, 7, 5)
    assert head(query).shape == (2, 7, d_v)
    assert head.alphas.shape == (2, 7, 5) and not head.alphas.requires_grad
    torch.testing.assert_close(head.alphas.sum(-1), torch.ones(2, 7))


def test_input_dim_defaults_to_hidden_dim():
    head = Attention(4)
    assert head.input_dim == 4 and head.linear_query.in_features == 4


def test_attention_is_scaled_dot_product_of_the_projections():
    head = _head(proj_values=True)
    keys, query = torch.randn(2, 5, 3), torch.randn(2, 7, 3)
    head.init_keys(keys)
    q, k, v = head.linear_query(query), head.linear_key(keys), head.linear_value(keys)
    scores = q @ k.transpose(-2, -1) / math.sqrt(4)  # (2, 7, 5)
    torch.testing.assert_close(head.score_function(query), scores)
    torch.testing.assert_close(head(query), F.scaled_dot_product_attention(q, k, v))
    torch.testing.assert_close(head.alphas, torch.softmax(scores, dim=-1))


def test_masked_keys_get_exactly_zero_weight_and_all_masked_rows_stay_finite():
    head = _head()
    keys = torch.randn(2, 4, 3)
    head.init_keys(keys)
    mask = padding_mask(torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]))  # (2, 1, 4)
    head(torch.randn(2, 3, 3), mask)
    assert torch.all(head.alphas[0, :, 3] == 0)
    assert torch.all(head.alphas[1, :, 2:] == 0)
    torch.testing.assert_close(head.alphas.sum(-1), torch.ones(2, 3))
    nothing = torch.zeros(1, 1, 4, dtype=torch.bool)
    context = head(torch.randn(2, 3, 3), nothing)
    assert torch.isfinite(context).all() and torch.all(context == 0)


def test_causal_mask_keeps_earlier_outputs_independent_of_later_inputs():
    head = _head(input_dim=4)
    x = torch.randn(1, 5, 4)
    head.init_keys(x)
    out = head(x, subsequent_mask(5))
    later = x.clone()
    later[:, 3:] += 1.0
    head.init_keys(later)
    torch.testing.assert_close(head(later, subsequent_mask(5))[:, :3], out[:, :3])
    assert not torch.allclose(head(later)[:, :3], out[:, :3])  # without the mask they change


def test_attention_errors():
    head = _head()
    with pytest.raises(RuntimeError, match="call init_keys"):
        head(torch.randn(2, 3, 3))
    with pytest.raises(ValueError, match=r"keys must have shape \(N, L, 3\), got \(2, 5, 4\)"):
        head.init_keys(torch.randn(2, 5, 4))
    head.init_keys(torch.randn(2, 5, 3))
    with pytest.raises(ValueError, match=r"query must have shape \(N, L, 3\), got \(2, 5, 2\)"):
        head(torch.randn(2, 5, 2))
    with pytest.raises(TypeError, match=r"query must be a tensor \(N, L, 3\), got list"):
        head([[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="query must have the keys' batch size 2, got 3"):
        head(torch.randn(3, 5, 3))
    with pytest.raises(ValueError, match=r"mask must have shape \(1 or 2, 1 or 4, 5\), got \(2, 1, 4\)"):
        head(torch.randn(2, 4, 3), torch.ones(2, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="hidden_dim must be a positive int, got 0"):
        Attention(0)


def test_attention_creates_query_key_value_in_order():
    head = _head(seed=3)
    torch.manual_seed(3)
    expected = [nn.Linear(3, 4) for _ in range(3)]
    for layer, reference in zip((head.linear_query, head.linear_key, head.linear_value), expected):
        torch.testing.assert_close(layer.weight, reference.weight)
        torch.testing.assert_close(layer.bias, reference.bias)


def test_copies_drop_the_transient_keys():
    head = _head()
    head.init_keys(torch.randn(2, 5, 3, requires_grad=True))  # keys that carry a graph
    clone = copy.deepcopy(head)
    assert clone.proj_keys is None and clone.values is None and head.proj_keys is not None
    torch.testing.assert_close(clone.linear_key.weight, head.linear_key.weight)


def _multi(n_heads=3, d_model=4, input_dim=2, seed=0):
    torch.manual_seed(seed)
    return WideMultiHeadAttention(n_heads, d_model, input_dim=input_dim)


def test_multi_head_shapes_and_stacked_alphas():
    mha = _multi()
    assert mha.alphas is None
    keys, query = torch.randn(5, 6, 2), torch.randn(5, 7, 2)
    mha.init_keys(keys)
    assert mha(query).shape == (5, 7, 4)
    assert mha.alphas.shape == (3, 5, 7, 6)  # (n_heads, N, L_q, L_k), as in the book
    torch.testing.assert_close(mha.alphas.sum(-1), torch.ones(3, 5, 7))
    for head, alphas in zip(mha.attn_heads, mha.alphas):
        assert torch.equal(head.alphas, alphas)


def test_multi_head_concatenates_the_heads_then_projects():
    mha = _multi()
    keys, query = torch.randn(2, 4, 2), torch.randn(2, 3, 2)
    mha.init_keys(keys)
    out = mha(query)
    contexts = [head(query) for head in mha.attn_heads]  # [(2, 3, 4)] * 3
    torch.testing.assert_close(out, mha.linear_out(torch.cat(contexts, dim=-1)))
    torch.testing.assert_close(mha.output_function(contexts), out)
    assert all(head.proj_values for head in mha.attn_heads)


def test_multi_head_parameters_grow_with_the_heads():
    for n_heads in (1, 2, 3):
        mha = WideMultiHeadAttention(n_heads, d_model=4, input_dim=2)
        per_head = 3 * (2 * 4 + 4)
        expected = n_heads * per_head + (n_heads * 4 * 4 + 4)
        assert sum(p.numel() for p in mha.parameters()) == expected


def test_multi_head_builds_its_output_layer_before_its_heads():
    mha = _multi(seed=5)
    torch.manual_seed(5)
    linear_out = nn.Linear(3 * 4, 4)
    first_query = nn.Linear(2, 4)
    torch.testing.assert_close(mha.linear_out.weight, linear_out.weight)
    torch.testing.assert_close(mha.attn_heads[0].linear_query.weight, first_query.weight)


def test_multi_head_mask_reaches_every_head():
    mha = _multi()
    keys = torch.randn(2, 4, 2)
    mha.init_keys(keys)
    mha(torch.randn(2, 3, 2), padding_mask(torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0]])))
    assert torch.all(mha.alphas[:, 0, :, 2:] == 0) and torch.all(mha.alphas[:, 1, :, 3] == 0)


def test_multi_head_errors():
    with pytest.raises(ValueError, match="n_heads must be a positive int"):
        WideMultiHeadAttention(0, 4)
    with pytest.raises(ValueError, match="input_dim must be None or d_model=4 without proj_values.*got input_dim=2"):
        WideMultiHeadAttention(2, 4, input_dim=2, proj_values=False)
    plain_values = WideMultiHeadAttention(2, 4, proj_values=False)  # values of size d_model are fine
    plain_values.init_keys(torch.randn(1, 3, 4))
    assert plain_values(torch.randn(1, 2, 4)).shape == (1, 2, 4)
    with pytest.raises(RuntimeError, match="call init_keys"):
        _multi()(torch.randn(1, 2, 2))


def test_one_name_for_the_wide_class_and_its_alphas_heads_first():
    from stepbystep.models.attention.wide import WideMultiHeadAttention as from_module

    assert from_module is WideMultiHeadAttention and WideMultiHeadAttention is not NarrowMultiHeadAttention
    assert "NarrowMultiHeadAttention" in WideMultiHeadAttention.__doc__
    wide = WideMultiHeadAttention(3, 4)
    x = torch.randn(2, 5, 4)  # (N, L, d_model)
    wide.init_keys(x)
    wide(x)
    assert wide.alphas.shape == (3, 2, 5, 5)  # (n_heads, N, L_q, L_k): heads first
