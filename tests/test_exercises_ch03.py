"""Chapter 03's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import math

import torch

from stepbystep.exercises import ch03
from stepbystep.models import MultiHeadedAttention


def test_merge_heads_solution_passes_and_matches_output_functions_merge():
    assert ch03.merge_heads.check(ch03.merge_heads._solution)
    x = torch.randn(2, 3, 6)
    heads = MultiHeadedAttention(3, 6).make_chunks(x)  # (N, h, L, d_k)
    torch.testing.assert_close(ch03.merge_heads._solution(heads), x)


def test_merge_heads_contiguous_view_also_passes():
    def contiguous_view(context):
        n, h, length, d_k = context.shape
        return context.transpose(1, 2).contiguous().view(n, length, h * d_k)

    assert ch03.merge_heads.check(contiguous_view)


def test_merge_heads_view_without_contiguous_is_explained():
    def plain_view(context):
        n, h, length, d_k = context.shape
        return context.transpose(1, 2).view(n, length, h * d_k)

    result = ch03.merge_heads.check(plain_view)
    assert not result
    assert "view refused your tensor" in repr(result) and "index order" in repr(result)
    assert "contiguous()" not in repr(result) and "reshape" not in repr(result)  # the fix stays hidden
    assert "Stuck? .hint() gives a nudge" in repr(result) and "Hint" not in repr(result)


def test_merge_heads_straight_view_is_explained():
    def straight(context):
        n, h, length, d_k = context.shape
        return context.reshape(n, length, h * d_k)

    result = ch03.merge_heads.check(straight)
    assert not result and "regrouped wrongly" in repr(result)


def test_merge_heads_interleaved_features_do_not_reveal_the_expected_numbers():
    def heads_last(context):  # right shape, but feature j of every head side by side
        n, h, length, d_k = context.shape
        return context.permute(0, 2, 3, 1).reshape(n, length, h * d_k)

    result = ch03.merge_heads.check(heads_last)
    assert not result and "head 0's d_k, then head 1's" in repr(result)
    assert "[" not in repr(result).split("shape")[0]  # no tensor values, expected or received


def test_merge_heads_forgotten_merge_says_expected_and_got():
    result = ch03.merge_heads.check(lambda context: context.transpose(1, 2))
    assert not result
    assert "should be (N, L, n_heads * d_k) = (2, 4, 6), got (2, 4, 3, 2)" in repr(result)


def test_hints_nudge_without_solving(capsys):
    ch03.merge_heads.hint()
    ch03.wide_parameter_count.hint()
    ch03.fused_weights.hint()
    hints = capsys.readouterr().out
    assert hints.count("\n") == 3
    for giveaway in ("contiguous(", "reshape", "transpose(1, 2)", "score_function", "softmax", "3 *",
                     "n_heads * d_model"):
        assert giveaway not in hints


def test_merge_heads_rejects_a_non_function():
    result = ch03.merge_heads.check(None)
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


def test_wide_parameter_count_output_layer_reading_only_d_model_features_is_recognised():
    def narrow_output(n_heads, d_model):  # the most likely slip: linear_out as (d_model -> d_model)
        return n_heads * 3 * (d_model * d_model + d_model) + d_model * d_model + d_model

    assert narrow_output(3, 6) == 420
    result = ch03.wide_parameter_count.check(narrow_output)
    assert not result and "the output layer's input" in repr(result) and "n_heads=3, d_model=6" in repr(result)
    assert str(ch03.wide_parameter_count._solution(3, 6)) not in repr(result)


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
    ch03.merge_heads.solution()
    assert "transpose(1, 2)" in capsys.readouterr().out
