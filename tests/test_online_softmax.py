"""The online softmax (chapter 14): running max and sum, and the merge of two partial results."""
import pytest
import torch

from stepbystep.models import attention_row_steps, merge_partials, online_softmax_steps


def test_running_max_and_sum_per_block():
    x = torch.tensor([1.0, 3.0, 2.0, 5.0, 0.0])
    m, l, probs = online_softmax_steps(x, 2)
    assert m.tolist() == [3.0, 5.0, 5.0]
    expected = [torch.exp(torch.tensor([1.0, 3.0]) - 3).sum(),  # after block 1, relative to its max 3
                torch.exp(x[:4] - 5).sum(),  # block 2 brings 5: the first sum rescaled by e^(3 - 5)
                torch.exp(x - 5).sum()]
    assert torch.allclose(l, torch.stack(expected))
    assert torch.allclose(probs, torch.softmax(x, 0))


@pytest.mark.parametrize("block", [1, 3, 7, 100])
def test_any_block_size_gives_the_softmax_even_for_huge_scores(block):
    x = torch.randn(50, generator=torch.Generator().manual_seed(0)) * 30 + 1000  # exp(1000) overflows float32
    _, l, probs = online_softmax_steps(x, block)
    assert torch.isfinite(l).all()
    assert torch.allclose(probs, torch.softmax(x, 0), atol=1e-6)


def test_merge_of_two_halves_is_the_whole():
    generator = torch.Generator().manual_seed(1)
    scores, values = torch.randn(3, 12, generator=generator) * 4, torch.randn(3, 12, 5, generator=generator)

    def partial(s, v):  # (rows, b), (rows, b, d)
        m = s.max(dim=-1).values
        p = torch.exp(s - m[:, None])
        return m, p.sum(-1), (p[..., None] * v).sum(1) / p.sum(-1, keepdim=True)

    m, l, o = merge_partials(*partial(scores[:, :5], values[:, :5]), *partial(scores[:, 5:], values[:, 5:]))
    whole = partial(scores, values)
    for mine, reference in zip((m, l, o), whole):
        assert torch.allclose(mine, reference, atol=1e-5)
    assert torch.allclose(o, (torch.softmax(scores, -1)[..., None] * values).sum(1), atol=1e-5)


def test_merge_takes_plain_numbers_and_is_symmetric():
    a = (2.0, 1.5, torch.tensor([1.0, 0.0]))
    b = (0.5, 3.0, torch.tensor([0.0, 1.0]))
    m, l, o = merge_partials(*a, *b)
    m2, l2, o2 = merge_partials(*b, *a)
    assert float(m) == 2.0 and torch.isclose(l, 1.5 + 3.0 * torch.exp(torch.tensor(-1.5)))
    assert torch.allclose(o, o2) and torch.isclose(l, l2) and float(m2) == 2.0
    assert torch.isclose(o.sum(), torch.tensor(1.0))  # a weighted mean of (1, 0) and (0, 1)


def test_attention_row_steps_end_at_the_exact_output():
    generator = torch.Generator().manual_seed(2)
    q, k, v = torch.randn(8, generator=generator), torch.randn(21, 8, generator=generator), torch.randn(21, 3, generator=generator)
    m, l, o = attention_row_steps(q, k, v, 5)
    assert m.shape == l.shape == (5,) and o.shape == (5, 3)
    scores = k @ q / 8 ** 0.5
    assert torch.allclose(o[-1], torch.softmax(scores, 0) @ v, atol=1e-6)
    assert torch.allclose(o[1], torch.softmax(scores[:10], 0) @ v[:10], atol=1e-6)  # after two blocks: the first ten keys
    assert (m[1:] >= m[:-1]).all() and float(m[-1]) == float(scores.max())
    assert torch.isclose(l[-1], torch.exp(scores - scores.max()).sum())


def test_bad_arguments():
    with pytest.raises(ValueError, match="x must be a 1-D tensor"):
        online_softmax_steps(torch.ones(2, 2), 1)
    with pytest.raises(ValueError, match="block must be a positive int"):
        online_softmax_steps(torch.ones(4), 0)
    with pytest.raises(ValueError, match="k must be"):
        attention_row_steps(torch.ones(4), torch.ones(5, 3), torch.ones(5, 2), 2)


def test_merge_with_an_empty_part_keeps_the_other_and_two_empty_parts_stay_empty():
    empty = (float("-inf"), 0.0, torch.zeros(2))
    part = (torch.tensor(1.5), torch.tensor(2.0), torch.tensor([0.3, -0.7]))
    for merged in (merge_partials(*part, *empty), merge_partials(*empty, *part)):
        assert float(merged[0]) == 1.5 and float(merged[1]) == 2.0 and torch.equal(merged[2], part[2])
    m, l, o = merge_partials(*empty, *empty)
    assert float(m) == float("-inf") and float(l) == 0.0 and torch.equal(o, torch.zeros(2))
