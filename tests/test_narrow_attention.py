"""NarrowMultiHeadAttention: chunking, the teaching and fused paths, masks, alphas and errors; the
book's two steps on it are tested in test_book_attention.py."""
import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stepbystep.models import NarrowMultiHeadAttention, WideMultiHeadAttention, subsequent_mask


def _self_attend(mha, x, mask=None):
    return mha(x, mask=mask)


def test_shapes_of_output_alphas_and_chunks():
    mha = NarrowMultiHeadAttention(n_heads=3, d_model=12)
    query, key = torch.randn(2, 5, 12), torch.randn(2, 7, 12)
    keys, values = mha.project_keys(key)
    assert keys.shape == values.shape == (2, 3, 7, 4)
    assert mha(query, key).shape == (2, 5, 12)
    assert mha.alphas.shape == (2, 3, 5, 7)
    assert mha.d_k == 4


def test_the_forward_is_stateless():
    """No keys are kept between calls: the same call gives the same output, whatever came before."""
    mha = NarrowMultiHeadAttention(n_heads=2, d_model=4).eval()
    x, other = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    first = mha(x)
    mha(x, other)  # cross-attention to other keys in between
    torch.testing.assert_close(mha(x), first, atol=0, rtol=0)
    torch.testing.assert_close(mha(x, x), first, atol=0, rtol=0)  # key=None is self-attention
    assert not any(isinstance(value, torch.Tensor) and value is not mha.alphas for value in vars(mha).values())


def test_make_chunks_gives_each_head_its_slice_of_features():
    mha = NarrowMultiHeadAttention(n_heads=4, d_model=8)
    x = torch.randn(3, 5, 8)
    chunks = mha.make_chunks(x)  # (3, 4, 5, 2)
    assert chunks.shape == (3, 4, 5, 2)
    for h in range(4):
        assert torch.equal(chunks[:, h], x[:, :, 2 * h : 2 * h + 2])
    merged = chunks.transpose(1, 2).reshape(3, 5, 8)
    assert torch.equal(merged, x)


def test_alphas_are_taken_before_dropout_and_sum_to_one_in_training():
    torch.manual_seed(0)
    mha = NarrowMultiHeadAttention(n_heads=2, d_model=8, dropout=0.5).train()
    x = torch.randn(4, 6, 8)
    out_train = _self_attend(mha, x)
    torch.testing.assert_close(mha.alphas.sum(-1), torch.ones(4, 2, 6))
    assert not mha.alphas.requires_grad
    mha.eval()
    out_eval = _self_attend(mha, x)
    assert not torch.allclose(out_train, out_eval)  # dropout did act on the weights


def test_masked_keys_get_exactly_zero_weight():
    mha = NarrowMultiHeadAttention(n_heads=2, d_model=4).eval()
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
    mha = NarrowMultiHeadAttention(n_heads=2, d_model=4, store_alphas=store_alphas)
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
    teach = NarrowMultiHeadAttention(n_heads, d_model).eval()
    fused = NarrowMultiHeadAttention(n_heads, d_model, store_alphas=False).eval()
    fused.load_state_dict(teach.state_dict())
    query = torch.randn(n, l_q, d_model, generator=gen)
    key = torch.randn(n, l_k, d_model, generator=gen)
    mask = {
        "none": None,
        "padding": torch.rand(n, 1, l_k, generator=gen) > 0.4,  # (N, 1, L_k), may mask whole rows
        "full": torch.rand(1, l_q, l_k, generator=gen) > 0.4,  # (1, L_q, L_k)
    }[mask_kind]
    torch.testing.assert_close(fused(query, key, mask), teach(query, key, mask), atol=1e-5, rtol=1e-5)
    assert fused.alphas is None


def test_fused_path_applies_dropout_only_in_training():
    torch.manual_seed(1)
    fused = NarrowMultiHeadAttention(n_heads=2, d_model=8, dropout=0.5, store_alphas=False)
    x = torch.randn(2, 6, 8)
    out_eval = _self_attend(fused.eval(), x)
    torch.testing.assert_close(_self_attend(fused, x), out_eval)
    assert not torch.allclose(_self_attend(fused.train(), x), out_eval)


def test_self_attention_is_permutation_equivariant_without_masks():
    torch.manual_seed(2)
    mha = NarrowMultiHeadAttention(n_heads=3, d_model=6).eval()
    x = torch.randn(2, 7, 6)
    perm = torch.randperm(7)
    out = _self_attend(mha, x)
    out_perm = _self_attend(mha, x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-6, rtol=1e-5)


def test_indivisible_d_model_names_both_numbers():
    with pytest.raises(ValueError, match=r"d_model=10.*n_heads=3"):
        NarrowMultiHeadAttention(n_heads=3, d_model=10)


def test_wrong_shapes_are_named():
    mha = NarrowMultiHeadAttention(n_heads=2, d_model=4)
    key = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"key must have shape \(N, L, 4\).*\(1, 3, 5\)"):
        mha(torch.randn(1, 2, 4), torch.randn(1, 3, 5))
    with pytest.raises(ValueError, match=r"x must have shape \(N, L, 4\)"):
        mha(torch.randn(2, 3, 6), key)
    with pytest.raises(ValueError, match=r"key must hold one sequence per row of x \(5\)"):
        mha(torch.randn(5, 3, 4), key)
    with pytest.raises(ValueError, match=r"mask must have shape.*\(2, 1, 4\)"):
        mha(torch.randn(2, 3, 4), key, torch.ones(2, 1, 4, dtype=torch.bool))


def test_a_module_that_attended_can_still_be_deep_copied():
    mha = NarrowMultiHeadAttention(n_heads=2, d_model=4)
    x = torch.randn(1, 3, 4, requires_grad=True)
    _self_attend(mha, x)  # the weights of a call with a graph
    clone = copy.deepcopy(mha)
    assert torch.equal(clone.linear_query.weight, mha.linear_query.weight)


def test_one_name_for_the_narrow_class_and_its_alphas_batch_first():
    import stepbystep.models as models
    from stepbystep.models.attention.narrow import NarrowMultiHeadAttention as from_module

    assert from_module is NarrowMultiHeadAttention and NarrowMultiHeadAttention is not WideMultiHeadAttention
    assert not hasattr(models, "MultiHeadedAttention") and not hasattr(models, "MultiHeadAttention")  # book names: book
    assert "WideMultiHeadAttention" in NarrowMultiHeadAttention.__doc__
    narrow = NarrowMultiHeadAttention(3, 6)
    x = torch.randn(2, 5, 6)  # (N, L, d_model)
    assert _self_attend(narrow, x).shape == (2, 5, 6)
    assert narrow.alphas.shape == (2, 3, 5, 5)  # (N, n_heads, L_q, L_k): batch first
