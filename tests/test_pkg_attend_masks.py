"""``attend`` reads every mask shape the same way in both kernels: ``(L_q, L_k)`` broadcasts from
the right, ``(N, L_q, L_k)`` gets the head dimension, ``(N, 1, L_q, L_k)`` is used as it is."""
import pytest
import torch

from stepbystep.models.attention.scaled_dot_product import attend


def _inputs(seed=0, n=2, h=3, l_q=5, l_k=6, d=4):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, h, l_q, d, generator=g)
    k = torch.randn(n, h, l_k, d, generator=g)
    v = torch.randn(n, h, l_k, d, generator=g)
    full = torch.rand(n, 1, l_q, l_k, generator=g) > 0.4  # (N, 1, L_q, L_k)
    full[..., 0] = True  # every query has a key to read
    return q, k, v, full


@pytest.mark.parametrize("shape", ["(L_q, L_k)", "(N, L_q, L_k)", "(N, 1, L_q, L_k)"])
def test_both_kernels_read_each_mask_shape_as_the_full_mask(shape):
    q, k, v, full = _inputs()
    if shape == "(L_q, L_k)":
        full = full[:1].expand_as(full)  # one mask for the whole batch
        mask = full[0, 0]  # (L_q, L_k)
    elif shape == "(N, L_q, L_k)":
        mask = full[:, 0]  # (N, L_q, L_k)
    else:
        mask = full
    expected, expected_weights = attend(q, k, v, full.expand(-1, q.shape[1], -1, -1))
    written, weights = attend(q, k, v, mask)
    fused, _ = attend(q, k, v, mask, store_alphas=False)
    assert written.shape == q.shape and fused.shape == q.shape
    torch.testing.assert_close(written, expected)
    torch.testing.assert_close(weights, expected_weights)
    torch.testing.assert_close(fused, expected, atol=1e-5, rtol=1e-5)
    assert (weights[~full.expand_as(weights)] == 0).all()


def test_a_two_d_mask_against_one_batch_keeps_its_shape():
    q, k, v, full = _inputs(n=1, h=2, l_q=6, l_k=6)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()  # (L_q, L_k)
    written, weights = attend(q, k, v, causal)
    fused, _ = attend(q, k, v, causal, store_alphas=False)
    assert written.shape == (1, 2, 6, 4) and weights.shape == (1, 2, 6, 6)
    torch.testing.assert_close(fused, written, atol=1e-5, rtol=1e-5)
    assert (weights.triu(1) == 0).all()
