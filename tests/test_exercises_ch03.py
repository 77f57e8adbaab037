"""Chapter 03's exercises: the worked solutions pass, typical wrong answers get a useful message."""
import math

import torch

from stepbystep.exercises import ch03
from stepbystep.models import NarrowMultiHeadAttention


def _split(qkv, n_heads, order=(0, 1, 2)):
    """Right or wrong splits: view each third for the heads, then move the heads in front."""
    n, length, three_d = qkv.shape
    d_k = three_d // (3 * n_heads)
    parts = qkv.chunk(3, dim=-1)
    return tuple(parts[i].view(n, length, n_heads, d_k).transpose(1, 2) for i in order)


def test_split_qkv_solution_passes_and_matches_make_chunks():
    assert ch03.split_qkv.check(ch03.split_qkv._solution)
    mha = NarrowMultiHeadAttention(3, 6)
    x = torch.randn(2, 4, 6)
    fused = torch.cat([mha.linear_query(x), mha.linear_key(x), mha.linear_value(x)], dim=-1)  # (N, L, 3 d_model)
    q, k, v = ch03.split_qkv._solution(fused, 3)
    torch.testing.assert_close(q, mha.make_chunks(mha.linear_query(x)))
    torch.testing.assert_close(v, mha.make_chunks(mha.linear_value(x)))


def test_split_qkv_one_view_and_permute_also_passes():
    def by_permute(qkv, n_heads):
        n, length, three_d = qkv.shape
        return qkv.view(n, length, 3, n_heads, three_d // (3 * n_heads)).permute(2, 0, 3, 1, 4).unbind(0)

    assert ch03.split_qkv.check(by_permute)


def test_split_qkv_heads_first_grouping_is_explained():
    def by_head(qkv, n_heads):  # view for the heads first, then cut every head's 3 * d_k features
        n, length, three_d = qkv.shape
        return qkv.view(n, length, n_heads, three_d // n_heads).transpose(1, 2).chunk(3, dim=-1)

    result = ch03.split_qkv.check(by_head)
    assert not result and "grouped head by head" in repr(result) and "projection by projection" in repr(result)
    assert "chunk(" not in repr(result) and "view(" not in repr(result)  # the fix stays hidden


def test_split_qkv_wrong_order_is_named():
    result = ch03.split_qkv.check(lambda qkv, n_heads: _split(qkv, n_heads, order=(1, 0, 2)))
    assert not result and "wrong order" in repr(result)


def test_split_qkv_straight_view_is_explained():
    def straight(qkv, n_heads):
        n, length, three_d = qkv.shape
        return tuple(t.reshape(n, n_heads, length, three_d // (3 * n_heads)) for t in qkv.chunk(3, dim=-1))

    result = ch03.split_qkv.check(straight)
    assert not result and "mix of positions" in repr(result)


def test_split_qkv_forgotten_transpose_says_expected_and_got():
    def no_transpose(qkv, n_heads):
        n, length, three_d = qkv.shape
        return tuple(t.view(n, length, n_heads, three_d // (3 * n_heads)) for t in qkv.chunk(3, dim=-1))

    result = ch03.split_qkv.check(no_transpose)
    assert not result
    assert "q should be (N, n_heads, L, d_k) = (2, 2, 4, 3), got (2, 4, 2, 3)" in repr(result)


def test_split_qkv_other_wrong_numbers_do_not_reveal_them():
    result = ch03.split_qkv.check(lambda qkv, n_heads: tuple(t + 1 for t in _split(qkv, n_heads)))
    assert not result and "q is not what the module's own projection" in repr(result)
    assert "tensor(" not in repr(result)


def test_split_qkv_needs_three_tensors():
    result = ch03.split_qkv.check(lambda qkv, n_heads: qkv)
    assert not result and "three tensors" in repr(result)
    result = ch03.split_qkv.check(None)
    assert not result and "expected a function" in repr(result)


def test_hints_nudge_without_solving(capsys):
    ch03.split_qkv.hint()
    ch03.wide_parameter_count.hint()
    ch03.fused_weights.hint()
    hints = capsys.readouterr().out
    assert hints.count("\n") == 3
    for giveaway in ("chunk(", "view(", "reshape", "transpose(1, 2)", "project_keys", "softmax", "masked_fill",
                     "-inf", "3 *", "n_heads * d_model"):
        assert giveaway not in hints


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


def test_wide_parameter_count_forgotten_output_layer_is_recognised():
    result = ch03.wide_parameter_count.check(lambda n_heads, d_model: n_heads * 3 * (d_model * d_model + d_model))
    assert not result and "what maps the concatenated contexts back to d_model" in repr(result)
    assert "n_heads=1, d_model=4" in repr(result)  # one head is enough to miss it
    assert str(ch03.wide_parameter_count._solution(1, 4)) not in repr(result)


def test_wide_parameter_count_output_layer_per_head_is_recognised():
    result = ch03.wide_parameter_count.check(lambda n_heads, d_model: n_heads * 4 * (d_model * d_model + d_model))
    # one head: one output layer either way, so the first failure is the three-head case
    assert not result and "one output layer per head" in repr(result) and "n_heads=3, d_model=6" in repr(result)
    assert str(ch03.wide_parameter_count._solution(3, 6)) not in repr(result)


def test_wide_parameter_count_forgotten_biases_are_recognised():
    result = ch03.wide_parameter_count.check(lambda n_heads, d_model: 4 * n_heads * d_model * d_model)
    assert not result and "leaves out the biases" in repr(result)


def test_fused_weights_solution_passes():
    assert ch03.fused_weights.check(ch03.fused_weights._solution)


def _scores(mha, query, key):
    """The module's scaled scores (N, h, L_q, L_k), as an answer would compute them."""
    q = mha.make_chunks(mha.linear_query(query))  # (N, h, L_q, d_k)
    return q @ mha.project_keys(key)[0].transpose(-2, -1) / math.sqrt(mha.d_k)


def test_fused_weights_unscaled_scores_fail():
    def unscaled(mha, query, key, mask):
        proj_query = mha.make_chunks(mha.linear_query(query))  # (N, h, L_q, d_k)
        return torch.softmax(proj_query @ mha.project_keys(key)[0].transpose(-2, -1), dim=-1)

    result = ch03.fused_weights.check(unscaled)
    assert not result and "without a mask" in repr(result) and "sqrt(d_k)" in repr(result)


def test_fused_weights_softmax_over_the_wrong_dimension_fails():
    result = ch03.fused_weights.check(lambda mha, query, key, mask: torch.softmax(_scores(mha, query, key), dim=-2))
    assert not result and "sum to 1" in repr(result) and "softmax" not in repr(result)


def test_fused_weights_scaled_twice_fails():
    result = ch03.fused_weights.check(
        lambda mha, query, key, mask: torch.softmax(_scores(mha, query, key) / math.sqrt(mha.d_k), dim=-1)
    )
    assert not result


def test_fused_weights_ignored_mask_is_named():
    result = ch03.fused_weights.check(lambda mha, query, key, mask: torch.softmax(_scores(mha, query, key), dim=-1))
    assert not result and "with a padding mask, some weight goes to keys the mask hides" in repr(result)
    assert "-inf" not in repr(result) and "masked_fill" not in repr(result)


def _masked(mha, query, key, mask, hide, value):
    scores = _scores(mha, query, key)  # (N, h, L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(hide(mask.unsqueeze(1)), value)
    return torch.softmax(scores, dim=-1)


def test_fused_weights_masked_scores_set_to_zero_are_explained():
    result = ch03.fused_weights.check(lambda mha, query, key, mask: _masked(mha, query, key, mask, lambda m: ~m, 0.0))
    assert not result and "a score set to 0 is an ordinary score" in repr(result)


def test_fused_weights_inverted_mask_is_explained():
    result = ch03.fused_weights.check(lambda mha, query, key, mask: _masked(mha, query, key, mask, lambda m: m, -1e9))
    assert not result and "True means 'may attend'" in repr(result)


def test_fused_weights_masking_after_the_softmax_is_explained():
    def zeroed_after(mha, query, key, mask):
        weights = torch.softmax(_scores(mha, query, key), dim=-1)  # (N, h, L_q, L_k)
        return weights if mask is None else weights * mask.unsqueeze(1)

    result = ch03.fused_weights.check(zeroed_after)
    assert not result and "rows sum to less than 1" in repr(result)


def test_fused_weights_mask_without_a_head_dimension_is_explained():
    def no_head_dimension(mha, query, key, mask):
        scores = _scores(mha, query, key)  # (N, h, L_q, L_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))  # (N, 1, L_k) against (N, h, L_q, L_k)
        return torch.softmax(scores, dim=-1)

    result = ch03.fused_weights.check(no_head_dimension)
    assert not result and "has no dimension for the heads" in repr(result)


def test_solutions_print_their_source(capsys):
    ch03.split_qkv.solution()
    assert "transpose(1, 2)" in capsys.readouterr().out
    ch03.fused_weights.solution()
    assert "masked_fill" in capsys.readouterr().out
