"""One score function and one online-softmax update (chapters 02-03 and 14): ``scores`` is what
``attend`` and the book's two ``score_function`` softmax, so their weights are the modules' own (with
QK-norm, shared key heads and RoPE too); ``online_update`` is the one running update of the row
steps and the block steps, the tiled kernel's written-out loop (which chapter 14 prints and measures)
gives its numbers, and its empty rows stay finite."""
import pytest
import torch

import stepbystep.models.attention.online_softmax as online_softmax
from stepbystep.book import MultiHeadedAttention
from stepbystep.models import (Attention, RotaryEmbedding, attend, attention_row_steps, masked_softmax,
                               online_softmax_steps, tiled_attention)
from stepbystep.models.attention.online_softmax import online_update
from stepbystep.models.attention.scaled_dot_product import scores


def test_attend_softmaxes_scores():
    torch.manual_seed(0)
    q, k, v, bias = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 5), torch.randn(3, 4, 6)
    mask = torch.rand(2, 1, 4, 6) > 0.3
    _, weights = attend(q, k, v, mask, bias)
    torch.testing.assert_close(weights, masked_softmax(q @ k.transpose(-2, -1) / 8 ** 0.5 + bias, mask), rtol=0, atol=0)
    torch.testing.assert_close(weights, masked_softmax(scores(q, k, bias), mask), rtol=0, atol=0)


def test_the_wide_heads_score_function_is_scores_and_gives_its_weights():
    torch.manual_seed(0)
    head, x = Attention(4, input_dim=6), torch.randn(2, 5, 6)
    head.init_keys(x)
    head(x)
    torch.testing.assert_close(head.score_function(x), scores(head.linear_query(x), head.proj_keys), rtol=0, atol=0)
    torch.testing.assert_close(torch.softmax(head.score_function(x), dim=-1), head.alphas, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("qk_norm", [None, "head", "all"])
def test_the_books_score_function_gives_forwards_weights_with_every_option(qk_norm):
    torch.manual_seed(0)
    attention = MultiHeadedAttention(4, 16, dropout=0.0, n_kv_heads=2, qk_norm=qk_norm, rotary=RotaryEmbedding(4))
    with torch.no_grad():
        for norm in (attention.q_norm, attention.k_norm):
            if norm is not None:
                norm.weight.uniform_(0.5, 2.0)  # queries and keys normed differently: a divergence shows
    key, query = torch.randn(2, 7, 16), torch.randn(2, 5, 16)
    attention.init_keys(key)
    attention(query)
    torch.testing.assert_close(torch.softmax(attention.score_function(query), dim=-1), attention.alphas,
                               rtol=1e-5, atol=1e-6)


def test_both_step_functions_take_the_one_update(monkeypatch):
    calls = []

    def counted(*args):
        calls.append(args[2].shape)
        return online_update(*args)

    monkeypatch.setattr(online_softmax, "online_update", counted)
    torch.manual_seed(0)
    online_softmax_steps(torch.randn(10), 4)
    attention_row_steps(torch.randn(8), torch.randn(10, 8), torch.randn(10, 3), 5)
    assert calls == [(4,), (4,), (2,), (5,), (5,)]


def test_the_tiled_loop_gives_the_updates_numbers():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 6, 4), torch.randn(1, 2, 9, 4), torch.randn(1, 2, 9, 3)
    s = q @ k.transpose(-2, -1) / 2  # (N, H, L_q, L_k)
    m, l, acc = torch.full((1, 2, 6), float("-inf")), torch.zeros(1, 2, 6), torch.zeros(1, 2, 6, 3)
    for start in (0, 3, 6):
        m, l, acc = online_update(m, l, s[..., start:start + 3], acc, v[..., start:start + 3, :])
    ours = tiled_attention(q, k, v, block_q=6, block_k=3)
    torch.testing.assert_close(ours, acc / l.unsqueeze(-1), rtol=0, atol=1e-7)


def test_the_update_is_the_softmax_and_keeps_an_empty_row_finite():
    torch.manual_seed(0)
    s, v = torch.randn(3, 12), torch.randn(12, 4)  # (rows, L), (L, d_v)
    s[0, :6] = float("-inf")  # row 0: no key in its first block
    s[1] = float("-inf")  # row 1: no key at all
    m, l, acc = torch.full((3,), float("-inf")), torch.zeros(3), torch.zeros(3, 4)
    for start in (0, 6):
        m, l, acc = online_update(m, l, s[:, start:start + 6], acc, v[start:start + 6])
        assert torch.isfinite(l).all() and torch.isfinite(acc).all()
    expected = torch.softmax(s[[0, 2]], dim=-1) @ v  # (2, d_v)
    torch.testing.assert_close(acc[[0, 2]] / l[[0, 2], None], expected, rtol=1e-5, atol=1e-6)
    assert l[1] == 0 and acc[1].abs().max() == 0
