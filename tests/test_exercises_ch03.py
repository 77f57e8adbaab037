"""Chapter 03's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import math

import torch

from stepbystep.exercises import ch03
from stepbystep.models import MultiHeadedAttention


def test_split_heads_solution_passes_and_matches_make_chunks():
    assert ch03.split_heads.check(ch03.split_heads._solution)
    x = torch.randn(2, 3, 6)
    torch.testing.assert_close(ch03.split_heads._solution(x, 3), MultiHeadedAttention(3, 6).make_chunks(x))


def test_split_heads_straight_view_is_explained():
    def straight_view(x, n_heads):
        batch_size, seq_len, d_model = x.shape
        return x.view(batch_size, n_heads, seq_len, d_model // n_heads)

    result = ch03.split_heads.check(straight_view)
    assert not result
    assert "mix positions" in repr(result) and "Stuck? .hint() gives a nudge" in repr(result)
    assert "Hint" not in repr(result)  # hints come only on request


def test_split_heads_wrong_grouping_does_not_reveal_the_expected_numbers():
    def heads_last(x, n_heads):  # right shape, features regrouped by stride instead of by chunk
        batch_size, seq_len, d_model = x.shape
        return x.view(batch_size, seq_len, d_model // n_heads, n_heads).permute(0, 3, 1, 2)

    result = ch03.split_heads.check(heads_last)
    assert not result and "consecutive chunk" in repr(result)
    assert "[" not in repr(result)  # no tensor values, expected or received


def test_hints_nudge_without_solving(capsys):
    ch03.split_heads.hint()
    ch03.wide_parameter_count.hint()
    ch03.fused_weights.hint()
    hints = capsys.readouterr().out
    assert hints.count("\n") == 3
    for giveaway in ("transpose", "view(", "score_function", "softmax", "3 *", "n_heads * d_model"):
        assert giveaway not in hints


def test_split_heads_forgotten_transpose_says_expected_and_got():
    result = ch03.split_heads.check(lambda x, n_heads: x.view(x.shape[0], x.shape[1], n_heads, -1))
    assert not result
    assert "should be (N, n_heads, L, d_k) = (2, 3, 4, 2), got (2, 4, 3, 2)" in repr(result)


def test_split_heads_rejects_a_non_function():
    result = ch03.split_heads.check(None)
    assert not result and "expected a function" in repr(result)


def test_wide_parameter_count_solution_passes():
    assert ch03.wide_parameter_count.check(ch03.wide_parameter_count._solution)


def test_wide_parameter_count_narrow_formula_is_recognised():
    result = ch03.wide_parameter_count.check(lambda n_heads, d_model: 4 * (d_model * d_model + d_model))
    # one head: wide and narrow agree, so the first failure is the two-head case
    assert not result and "the narrow count" in repr(result) and "n_heads=3, d_model=6" in repr(result)
    assert str(ch03.wide_parameter_count._solution(3, 6)) not in repr(result)  # the answer stays hidden


def test_wide_parameter_count_other_wrong_answers_do_not_reveal_the_count():
    result = ch03.wide_parameter_count.check(lambda n_heads, d_model: 1)
    assert not result and "not the number of parameters" in repr(result)
    assert str(ch03.wide_parameter_count._solution(1, 4)) not in repr(result)


def test_wide_parameter_count_forgotten_biases_are_recognised():
    result = ch03.wide_parameter_count.check(lambda n_heads, d_model: 4 * n_heads * d_model * d_model)
    assert not result and "leaves out the biases" in repr(result)


def test_fused_weights_solution_passes():
    assert ch03.fused_weights.check(ch03.fused_weights._solution)


def test_fused_weights_unscaled_scores_fail():
    def unscaled(mha, query):
        proj_query = mha.make_chunks(mha.linear_query(query))  # (N, h, L_q, d_k)
        return torch.softmax(proj_query @ mha.proj_key.transpose(-2, -1), dim=-1)

    result = ch03.fused_weights.check(unscaled)
    assert not result and "sqrt(d_k)" in repr(result)


def test_fused_weights_softmax_over_the_wrong_dimension_fails():
    result = ch03.fused_weights.check(lambda mha, query: torch.softmax(mha.score_function(query), dim=-2))
    assert not result and "sum to 1" in repr(result) and "softmax" not in repr(result)


def test_fused_weights_scaled_twice_fails():
    result = ch03.fused_weights.check(
        lambda mha, query: torch.softmax(mha.score_function(query) / math.sqrt(mha.d_k), dim=-1)
    )
    assert not result


def test_solutions_print_their_source(capsys):
    ch03.split_heads.solution()
    assert "transpose(1, 2)" in capsys.readouterr().out
