"""Chapter 14's checkers accept the solutions and diagnose typical wrong answers."""
import math

import torch

from stepbystep.exercises import ch14
from stepbystep.models import merge_partials


def test_solutions_pass():
    for exercise in (ch14.merge, ch14.running_update, ch14.skipped_tiles):
        assert exercise.check(exercise._solution), exercise.title


def test_merge_diagnoses(fails_with):
    def no_rescale(m1, l1, o1, m2, l2, o2):
        return max(m1, m2), l1 + l2, (o1 * l1 + o2 * l2) / (l1 + l2)

    def not_divided(m1, l1, o1, m2, l2, o2):
        m = max(m1, m2)
        w1, w2 = l1 * math.exp(m1 - m), l2 * math.exp(m2 - m)
        return m, w1 + w2, o1 * w1 + o2 * w2

    def plain_mean(m1, l1, o1, m2, l2, o2):
        m = max(m1, m2)
        return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m), (o1 + o2) / 2

    def min_max(m1, l1, o1, m2, l2, o2):
        return (min(m1, m2), *ch14.merge._solution(m1, l1, o1, m2, l2, o2)[1:])

    fails_with(ch14.merge, no_rescale, "computed against its own block's max")
    fails_with(ch14.merge, not_divided, "not divided by the merged sum")
    fails_with(ch14.merge, plain_mean, "plain mean of the two outputs")
    fails_with(ch14.merge, min_max, "merged max is wrong")
    fails_with(ch14.merge, lambda *args: args[:2], "return three things")
    fails_with(ch14.merge, 3, "expected a function")


def test_merge_handles_empty_parts(fails_with):
    def textbook(m1, l1, o1, m2, l2, o2):  # right for two real parts, NaN for two empty ones
        m = max(m1, m2)
        w1, w2 = l1 * math.exp(m1 - m), l2 * math.exp(m2 - m)
        return m, w1 + w2, (o1 * w1 + o2 * w2) / (w1 + w2)

    def zero_for_empty(m1, l1, o1, m2, l2, o2):
        if m1 == float("-inf") or m2 == float("-inf"):
            return float("-inf"), 0.0, o1 * 0
        return ch14.merge._solution(m1, l1, o1, m2, l2, o2)

    fails_with(ch14.merge, textbook, "with both parts empty (every key masked: m = -inf, l = 0, o zeros) your merge "
               "gives NaN")
    fails_with(ch14.merge, zero_for_empty, "with the second part empty the merge should give the other part unchanged")
    assert ch14.merge.check(lambda *args: tuple(merge_partials(*args)))  # the package's merge handles them


def test_running_update_diagnoses(fails_with):
    def logs_added(lse, o, scores, values):
        new_lse = torch.logaddexp(torch.as_tensor(lse, dtype=scores.dtype), torch.logsumexp(scores, 0))
        o = o * torch.exp(lse - new_lse) + torch.exp(scores - new_lse) @ values
        return (torch.logsumexp(scores, 0) if lse == float("-inf") else lse + torch.logsumexp(scores, 0)), o

    def o_not_rescaled(lse, o, scores, values):
        new_lse = torch.logaddexp(torch.as_tensor(lse, dtype=scores.dtype), torch.logsumexp(scores, 0))
        return new_lse, o + torch.exp(scores - new_lse) @ values

    def raw_exponentials(lse, o, scores, values):
        new_lse = torch.log(torch.exp(torch.as_tensor(lse, dtype=scores.dtype)) + torch.exp(scores).sum())
        return new_lse, o * torch.exp(lse - new_lse) + torch.exp(scores - new_lse) @ values

    def unnormalised(lse, o, scores, values):  # acc-style: o not divided by the sum
        new_lse = torch.logaddexp(torch.as_tensor(lse, dtype=scores.dtype), torch.logsumexp(scores, 0))
        return new_lse, o + torch.exp(scores) @ values

    fails_with(ch14.running_update, logs_added, "adds the blocks' logs")
    fails_with(ch14.running_update, o_not_rescaled, "the old o was weighted against the old lse")
    fails_with(ch14.running_update, raw_exponentials, "e^1000 overflows")
    fails_with(ch14.running_update, unnormalised, "not the softmax-weighted mean")
    fails_with(ch14.running_update, lambda lse, o, scores, values: (lse, o), "lse is still -inf")
    fails_with(ch14.running_update, lambda lse, o, scores, values: lse, "return two things")
    solution = ch14.running_update._solution
    fails_with(ch14.running_update, lambda *args: (solution(*args)[0], solution(*args)[1][None]), "should have the values' shape")


def test_running_update_accepts_a_float32_computation():
    def in_float32(lse, o, scores, values):  # torch.tensor(lse) makes a float32 scalar: right to float32 precision
        new_lse = torch.logaddexp(torch.tensor(lse), torch.logsumexp(scores.float(), 0))
        return new_lse, o * torch.exp(lse - new_lse.double()) + torch.exp(scores - new_lse.double()) @ values
    assert ch14.running_update.check(in_float32)


def test_skipped_tiles_diagnoses(fails_with):
    def square_formula(l_q, l_k, block_q, block_k):
        n = l_q // block_q
        return n * (n - 1) // 2

    def with_diagonal(l_q, l_k, block_q, block_k):
        n = math.ceil(l_q / block_q)
        return n * (n + 1) // 2

    def computed(l_q, l_k, block_q, block_k):
        return ch14.skipped_tiles._solution(l_q, l_k, block_q, block_k) * -1 + \
            math.ceil(l_q / block_q) * math.ceil(l_k / block_k)

    def first_query(l_q, l_k, block_q, block_k):  # compares with the block's first query instead of its last
        return sum(k > q for q in range(0, l_q, block_q) for k in range(0, l_k, block_k))

    fails_with(ch14.skipped_tiles, square_formula, "ragged last block")
    fails_with(ch14.skipped_tiles, with_diagonal, "check each tile's first key")  # n(n+1)/2: computed, squares only
    fails_with(ch14.skipped_tiles, lambda *args: 1, "your count is off")  # fits the first case only
    fails_with(ch14.skipped_tiles, lambda *args: 6, "your count is off")  # never 'tiles computed' by chance
    fails_with(ch14.skipped_tiles, computed, "the number of tiles computed")
    fails_with(ch14.skipped_tiles, lambda l_q, l_k, block_q, block_k: computed(l_q, l_k, block_q, block_k)
               if l_q != l_k else ch14.skipped_tiles._solution(l_q, l_k, block_q, block_k), "the number of tiles computed")
    fails_with(ch14.skipped_tiles, first_query, "check each tile's first key against its last query")
    fails_with(ch14.skipped_tiles, lambda *args: "six", "return one number")


def test_failed_checks_do_not_reveal_the_counts():
    message = repr(ch14.skipped_tiles.check(lambda *args: 0))
    assert "(12, 12, 4, 6)" in message and "1" not in message.replace("(12, 12, 4, 6)", "")


def test_merge_tells_a_nan_from_zero_over_zero_apart_from_one_from_minus_inf(fails_with):
    def guarded_but_divides(m1, l1, o1, m2, l2, o2):  # the exponentials are safe; 0/0 when both are empty
        m = max(m1, m2)
        m_safe = 0.0 if m == float("-inf") else m
        w1, w2 = l1 * math.exp(m1 - m_safe), l2 * math.exp(m2 - m_safe)
        return m, w1 + w2, (o1 * w1 + o2 * w2) / torch.tensor(w1 + w2, dtype=o1.dtype)

    message = fails_with(ch14.merge, guarded_but_divides, "what is 0 / 0?")
    assert "-inf - (-inf)" not in message


def test_merge_diagnoses_outputs_weighed_by_their_own_sums(fails_with):
    def raw_weights(m1, l1, o1, m2, l2, o2, divide_by_merged):
        m = max(m1, m2)
        w1, w2 = l1 * math.exp(m1 - m), l2 * math.exp(m2 - m)
        return m, w1 + w2, (o1 * l1 + o2 * l2) / ((w1 + w2) if divide_by_merged else (l1 + l2))

    for divide_by_merged in (False, True):
        message = fails_with(ch14.merge, lambda *args: raw_weights(*args, divide_by_merged),
                             "weighs each block by its own l")
        assert "exp(" not in message  # the rescaling is named, not written out
