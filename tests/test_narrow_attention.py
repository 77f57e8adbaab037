"""MultiHeadedAttention: chunking, the teaching and fused paths, masks, alphas and errors."""
import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stepbystep.models import MultiHeadedAttention, subsequent_mask


def _self_attend(mha, x, mask=None):
    mha.init_keys(x)
    return mha(x, mask)


def test_shapes_of_output_alphas_and_chunks():
    mha = MultiHeadedAttention(n_heads=3, d_model=12)
    query, key = torch.randn(2, 5, 12), torch.randn(2, 7, 12)
    mha.init_keys(key)
    assert mha.proj_key.shape == mha.proj_value.shape == (2, 3, 7, 4)
    assert mha.score_function(query).shape == (2, 3, 5, 7)
    assert mha(query).shape == (2, 5, 12)
    assert mha.alphas.shape == (2, 3, 5, 7)
    assert mha.d_k == 4


def test_make_chunks_gives_each_head_its_slice_of_features():
    mha = MultiHeadedAttention(n_heads=4, d_model=8)
    x = torch.randn(3, 5, 8)
    chunks = mha.make_chunks(x)  # (3, 4, 5, 2)
    assert chunks.shape == (3, 4, 5, 2)
    for h in range(4):
        assert torch.equal(chunks[:, h], x[:, :, 2 * h : 2 * h + 2])
    merged = chunks.transpose(1, 2).reshape(3, 5, 8)
    assert torch.equal(merged, x)


def test_alphas_are_taken_before_dropout_and_sum_to_one_in_training():
    torch.manual_seed(0)
    mha = MultiHeadedAttention(n_heads=2, d_model=8, dropout=0.5).train()
    x = torch.randn(4, 6, 8)
    out_train = _self_attend(mha, x)
    torch.testing.assert_close(mha.alphas.sum(-1), torch.ones(4, 2, 6))
    assert not mha.alphas.requires_grad
    mha.eval()
    out_eval = _self_attend(mha, x)
    assert not torch.allclose(out_train, out_eval)  # dropout did act on the weights


def test_masked_keys_get_exactly_zero_weight():
    mha = MultiHeadedAttention(n_heads=2, d_model=4).eval()
    x = torch.randn(2, 5, 4)
    mask = torch.ones(2, 1, 5, dtype=torch.bool)
    mask[0, 0, 3:] = False
    _self_attend(mha, x, mask)
    assert torch.all(mha.alphas[0, :, :, 3:] == 0)
    torch.testing.assert_close(mha.alphas.sum(-1), torch.ones(2, 2, 5))
    _self_attend(mha, x, subsequent_mask(5))
    assert torch.all(mha.alphas.triu(diagonal=1) == 0)


@pytest.mark.parametrize("store_alphas", [True, False])
def test_all_masked_rows_are_finite_with_finite_gradients(store_alphas):
    mha = MultiHeadedAttention(n_heads=2, d_model=4, store_alphas=store_alphas)
    x = torch.randn(2, 3, 4, requires_grad=True)
    mask = torch.tensor([[[False, False, False]], [[True, False, True]]])  # (2, 1, 3)
    out = _self_attend(mha, x, mask)
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert torch.isfinite(x.grad).all()
    # an all-masked query gets a zero context: its output is linear_out's bias
    torch.testing.assert_close(out[0], mha.linear_out.bias.expand(3, 4))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 3),
    l_q=st.integers(1, 5),
    l_k=st.integers(1, 5),
    n_heads=st.integers(1, 3),
    d_k=st.integers(1, 4),
    mask_kind=st.sampled_from(["none", "padding", "full"]),
    seed=st.integers(0, 2**16),
)
def test_fused_path_matches_the_teaching_path(n, l_q, l_k, n_heads, d_k, mask_kind, seed):
    gen = torch.Generator().manual_seed(seed)
    d_model = n_heads * d_k
    teach = MultiHeadedAttention(n_heads, d_model).eval()
    fused = MultiHeadedAttention(n_heads, d_model, store_alphas=False).eval()
    fused.load_state_dict(teach.state_dict())
    query = torch.randn(n, l_q, d_model, generator=gen)
    key = torch.randn(n, l_k, d_model, generator=gen)
    mask = {
        "none": None,
        "padding": torch.rand(n, 1, l_k, generator=gen) > 0.4,  # (N, 1, L_k), may mask whole rows
        "full": torch.rand(1, l_q, l_k, generator=gen) > 0.4,  # (1, L_q, L_k)
    }[mask_kind]
    teach.init_keys(key)
    fused.init_keys(key)
    torch.testing.assert_close(fused(query, mask), teach(query, mask), atol=1e-5, rtol=1e-5)
    assert fused.alphas is None


def test_fused_path_applies_dropout_only_in_training():
    torch.manual_seed(1)
    fused = MultiHeadedAttention(n_heads=2, d_model=8, dropout=0.5, store_alphas=False)
    x = torch.randn(2, 6, 8)
    out_eval = _self_attend(fused.eval(), x)
    torch.testing.assert_close(_self_attend(fused, x), out_eval)
    assert not torch.allclose(_self_attend(fused.train(), x), out_eval)


def test_self_attention_is_permutation_equivariant_without_masks():
    torch.manual_seed(2)
    mha = MultiHeadedAttention(n_heads=3, d_model=6).eval()
    x = torch.randn(2, 7, 6)
    perm = torch.randperm(7)
    out = _self_attend(mha, x)
    out_perm = _self_attend(mha, x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-6, rtol=1e-5)


def test_indivisible_d_model_names_both_numbers():
    with pytest.raises(ValueError, match=r"d_model=10.*n_heads=3"):
        MultiHeadedAttention(n_heads=3, d_model=10)


def test_attending_before_init_keys_says_to_call_it():
    mha = MultiHeadedAttention(n_heads=2, d_model=4)
    with pytest.raises(RuntimeError, match=r"init_keys\(key\)"):
        mha(torch.randn(1, 3, 4))


def test_wrong_shapes_are_named():
    mha = MultiHeadedAttention(n_heads=2, d_model=4)
    with pytest.raises(ValueError, match=r"\(N, L, 4\).*\(1, 3, 5\)"):
        mha.init_keys(torch.randn(1, 3, 5))
    mha.init_keys(torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"\(N, L, 4\)"):
        mha(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match="batch size"):
        mha(torch.randn(5, 3, 4))
    with pytest.raises(ValueError, match=r"mask must have shape.*\(2, 1, 4\)"):
        mha(torch.randn(2, 3, 4), torch.ones(2, 1, 4, dtype=torch.bool))


def test_a_layer_with_keys_can_still_be_deep_copied():
    mha = MultiHeadedAttention(n_heads=2, d_model=4)
    _self_attend(mha, torch.randn(1, 3, 4))  # keys now carry a graph
    clone = copy.deepcopy(mha)
    assert clone.proj_key is None
    assert torch.equal(clone.linear_query.weight, mha.linear_query.weight)


def test_narrow_alias_is_the_same_class_and_keeps_the_batch_first():
    from stepbystep.models import NarrowMultiHeadAttention, WideMultiHeadAttention
    from stepbystep.models.attention.narrow import NarrowMultiHeadAttention as from_module

    assert NarrowMultiHeadAttention is MultiHeadedAttention and from_module is MultiHeadedAttention
    assert NarrowMultiHeadAttention is not WideMultiHeadAttention
    assert "NarrowMultiHeadAttention" in MultiHeadedAttention.__doc__
    assert "WideMultiHeadAttention" in MultiHeadedAttention.__doc__
    narrow = NarrowMultiHeadAttention(3, 6)
    x = torch.randn(2, 5, 6)  # (N, L, d_model)
    assert _self_attend(narrow, x).shape == (2, 5, 6)
    assert narrow.alphas.shape == (2, 3, 5, 5)  # (N, n_heads, L_q, L_k): batch first
