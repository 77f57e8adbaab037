"""The book's ``MultiHeadedAttention``: ``score_function`` checks its keys and query as ``forward``
does, with errors that say what to do instead of PyTorch's."""
import pytest
import torch

from stepbystep.book.models import MultiHeadedAttention


def _attention():
    torch.manual_seed(0)
    return MultiHeadedAttention(2, 8, dropout=0.0)


@pytest.mark.parametrize("method", ["score_function", "forward"])
def test_attending_before_init_keys_names_init_keys(method):
    with pytest.raises(RuntimeError, match=r"call init_keys\(key\) before attending"):
        getattr(_attention(), method)(torch.randn(1, 3, 8))


@pytest.mark.parametrize("method", ["score_function", "forward"])
@pytest.mark.parametrize("query, error, message", [
    (torch.randn(1, 3, 6), ValueError, r"query must have shape \(N, L, 8\) with L >= 1, got \(1, 3, 6\)"),
    (torch.randn(3, 8), ValueError, r"query must have shape \(N, L, 8\)"),
    ([[0.0] * 8], TypeError, "query must be a tensor"),
    (torch.randn(2, 3, 8), ValueError, "query batch size 2 does not match the keys' batch size 1"),
])
def test_a_query_that_does_not_fit_the_keys_is_named(method, query, error, message):
    attention = _attention()
    attention.init_keys(torch.randn(1, 4, 8))
    with pytest.raises(error, match=message):
        getattr(attention, method)(query)


def test_score_function_still_gives_the_scores_forward_uses():
    attention = _attention()
    attention.init_keys(torch.randn(2, 4, 8))
    query = torch.randn(2, 3, 8)
    scores = attention.score_function(query)  # (N, h, L_q, L_k)
    assert scores.shape == (2, 2, 3, 4)
    attention(query)
    torch.testing.assert_close(attention.alphas, scores.softmax(-1))
