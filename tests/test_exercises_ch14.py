"""Chapter 14's checkers accept the solutions and diagnose typical wrong answers."""
import math

import torch

from stepbystep.exercises import ch14


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


def test_running_update_diagnoses(fails_with):
    def acc_not_rescaled(m, l, acc, scores, values):
        m_new = max(m, scores.max().item())
        p = torch.exp(scores - m_new)
        return m_new, l * math.exp(m - m_new) + p.sum(), acc + p @ values

    def nothing_rescaled(m, l, acc, scores, values):
        m_new = max(m, scores.max().item())
        p = torch.exp(scores - m_new)
        return m_new, l + p.sum(), acc + p @ values

    def no_max(m, l, acc, scores, values):
        p = torch.exp(scores)
        return 0.0, l + p.sum(), acc + p @ values

    def stale_max(m, l, acc, scores, values):
        m_new = max(m, scores.max().item())
        p = torch.exp(scores - m_new)
        return (m if m > float("-inf") else m_new), l * math.exp(m - m_new) + p.sum(), acc * math.exp(m - m_new) + p @ values

    fails_with(ch14.running_update, acc_not_rescaled, "the old acc must be rescaled like the old l")
    fails_with(ch14.running_update, nothing_rescaled, "rescale the old sum")
    fails_with(ch14.running_update, no_max, "overflows")
    fails_with(ch14.running_update, stale_max, "m should be the largest score read")
    fails_with(ch14.running_update, lambda m, l, acc, scores, values: (m, l, acc), "m is still -inf or l still 0")


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
    fails_with(ch14.skipped_tiles, with_diagonal, "includes the tiles on the diagonal")
    fails_with(ch14.skipped_tiles, computed, "includes the tiles on the diagonal")  # the same number when square
    fails_with(ch14.skipped_tiles, lambda l_q, l_k, block_q, block_k: computed(l_q, l_k, block_q, block_k)
               if l_q != l_k else ch14.skipped_tiles._solution(l_q, l_k, block_q, block_k), "counted the tiles computed")
    fails_with(ch14.skipped_tiles, first_query, "check each tile's first key against its last query")
    fails_with(ch14.skipped_tiles, lambda *args: "six", "return one number")


def test_failed_checks_do_not_reveal_the_counts():
    message = repr(ch14.skipped_tiles.check(lambda *args: 0))
    assert "6" not in message.replace("(256, 256, 64, 64)", "")
