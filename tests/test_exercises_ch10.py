"""Chapter 10's exercises: the worked solutions pass, typical wrong answers get a useful message
that does not give the answer away."""
import math

import torch

from stepbystep.exercises import ch10
from stepbystep.models import alibi_bias, alibi_slopes


# ----------------------------------------------------------------------------- rotate one pair
def test_rotate_pair_solution_passes():
    assert ch10.rotate_pair.check(ch10.rotate_pair._solution)


def test_rotate_pair_placeholder_is_caught(fails_with):
    fails_with(ch10.rotate_pair, lambda a, b, angle: (a, b), "did not turn")


def test_rotate_pair_wrong_way_is_caught(fails_with):
    def clockwise(a, b, angle):
        return a * math.cos(angle) + b * math.sin(angle), -a * math.sin(angle) + b * math.cos(angle)
    fails_with(ch10.rotate_pair, clockwise, "wrong way")


def test_rotate_pair_degrees_are_caught(fails_with):
    def degrees(a, b, angle):
        angle = math.radians(angle)
        return a * math.cos(angle) - b * math.sin(angle), a * math.sin(angle) + b * math.cos(angle)
    fails_with(ch10.rotate_pair, degrees, "radians")


def test_rotate_pair_that_stretches_is_caught(fails_with):
    fails_with(ch10.rotate_pair, lambda a, b, angle: (a * math.cos(angle), b + a * math.sin(angle)), "length")


def test_rotate_pair_accepts_a_tensor_and_refuses_one_number(fails_with):
    assert ch10.rotate_pair.check(lambda a, b, angle: torch.tensor(ch10.rotate_pair._solution(a, b, angle)))
    fails_with(ch10.rotate_pair, lambda a, b, angle: a, "return two numbers")
    fails_with(ch10.rotate_pair, "rotate", "expected a function")


# ----------------------------------------------------------------------------- ALiBi's slopes
def test_slopes_solution_passes():
    assert ch10.slopes.check(ch10.slopes._solution)


def test_slopes_placeholder_is_caught_without_revealing_the_answer(fails_with):
    message = fails_with(ch10.slopes, lambda n: [1.0] * n, "not the paper's geometric sequence")
    assert "2^" not in message.split("hint")[0] and "1/" not in message


def test_slopes_reversed_are_caught(fails_with):
    fails_with(ch10.slopes, lambda n: ch10.slopes._solution(n).flip(0), "wrong order")


def test_slopes_negative_are_caught(fails_with):
    fails_with(ch10.slopes, lambda n: -ch10.slopes._solution(n), "positive")


def test_slopes_too_many_are_caught(fails_with):
    fails_with(ch10.slopes, lambda n: [2 ** -(8 * (h + 1) / n) for h in range(n + 1)], "there should be")


def test_slopes_power_of_two_formula_everywhere_is_caught(fails_with):
    # the geometric sequence applied to 6 heads too: right for 8, 4 and 1, wrong for 6
    fails_with(ch10.slopes, lambda n: [2 ** -(8 * (h + 1) / n) for h in range(n)], "as if 6 were one")


def test_slopes_next_larger_power_truncated_is_caught(fails_with):
    def truncated(n):  # the first n slopes of the next larger power of two
        larger = 2 ** math.ceil(math.log2(n))
        return [2 ** -(8 * (h + 1) / larger) for h in range(n)]
    fails_with(ch10.slopes, truncated, "with 6 heads your first 4 slopes are not")


def test_slopes_extra_heads_wrong_are_caught(fails_with):
    def extra_wrong(n):  # the smaller power's slopes, then the larger one's first slopes (not every other)
        if n & (n - 1) == 0:
            return ch10.slopes._solution(n)
        smaller = 2 ** math.floor(math.log2(n))
        return ch10.slopes._solution(smaller).tolist() + [2 ** -(8 * (h + 1) / (2 * smaller)) for h in range(n - smaller)]
    fails_with(ch10.slopes, extra_wrong, "the 2 after them are not")


def test_slopes_solution_matches_the_package_for_many_head_counts():
    for n in range(1, 33):
        torch.testing.assert_close(ch10.slopes._solution(n).double(), alibi_slopes(n).double())


# ----------------------------------------------------------------------------- RoPE's offset
def test_offset_score_solution_passes():
    assert ch10.offset_score.check(ch10.offset_score._solution)


def test_offset_score_placeholder_is_caught(fails_with):
    fails_with(ch10.offset_score, lambda q, k, offset, rotary: (q * k).sum(), "ignores the offset")


def test_offset_score_turning_the_query_is_caught(fails_with):
    def query_turned(q, k, offset, rotary):
        return (rotary(q.unsqueeze(0), torch.tensor([offset])).squeeze(0) * k).sum()
    fails_with(ch10.offset_score, query_turned, "which vector should turn")


def test_offset_score_twice_the_offset_is_caught(fails_with):
    def twice(q, k, offset, rotary):
        return (q * rotary(k.unsqueeze(0), torch.tensor([2 * offset])).squeeze(0)).sum()
    fails_with(ch10.offset_score, twice, "differs from the score")


def test_offset_score_must_be_one_number(fails_with):
    fails_with(ch10.offset_score, lambda q, k, offset, rotary: q, "one number")


# ----------------------------------------------------------------------------- ALiBi mask
def test_alibi_mask_solution_passes():
    assert ch10.alibi_mask.check(ch10.alibi_mask._solution)


def test_alibi_mask_placeholder_is_caught(fails_with):
    fails_with(ch10.alibi_mask, lambda h, n: torch.zeros(h, n, n), "exactly the future keys")


def test_alibi_mask_without_the_causal_part_is_caught(fails_with):
    fails_with(ch10.alibi_mask, lambda h, n: alibi_bias(h, n), "exactly the future keys")


def test_alibi_mask_lower_triangle_is_caught(fails_with):
    def below(h, n):
        past = torch.ones(n, n, dtype=torch.bool).tril(diagonal=-1)
        return alibi_bias(h, n).masked_fill(past, float("-inf"))
    fails_with(ch10.alibi_mask, below, "above the diagonal")


def test_alibi_mask_wrong_sign_is_caught(fails_with):
    def positive(h, n):
        future = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
        return (-alibi_bias(h, n)).masked_fill(future, float("-inf"))
    fails_with(ch10.alibi_mask, positive, "wrong sign")


def test_alibi_mask_boolean_is_caught(fails_with):
    fails_with(ch10.alibi_mask, lambda h, n: torch.ones(h, n, n, dtype=torch.bool).tril(), "float tensor")


def test_alibi_mask_one_head_only_is_caught(fails_with):
    fails_with(ch10.alibi_mask, lambda h, n: ch10.alibi_mask._solution(h, n)[0], "one (L, L) matrix per head")


def test_messages_do_not_reveal_the_answers(fails_with):
    """A failed check says what is wrong, never the expected slopes, angles or masks."""
    message = fails_with(ch10.slopes, lambda n: [1.0] * n, "slope")
    assert "0.5" not in message and "256" not in message and "2^" not in message
    message = fails_with(ch10.rotate_pair, lambda a, b, angle: (a, b), "angle")
    assert "cos" not in message and "sin" not in message
    message = fails_with(ch10.alibi_mask, lambda h, n: torch.zeros(h, n, n), "future")
    assert "tensor(" not in message and "triu" not in message


def test_alibi_mask_large_negative_instead_of_inf_is_told_why(fails_with):
    def large_negative(h, n):
        return ch10.alibi_mask._solution(h, n).clamp(min=-1e9)
    fails_with(ch10.alibi_mask, large_negative, "float('-inf')")


def test_rotate_pair_hint_does_not_give_the_matrix(capsys):
    ch10.rotate_pair.hint()
    hint = capsys.readouterr().out
    assert "-sin" not in hint and "[[" not in hint


def test_slopes_solution_runs_on_its_own(capsys):
    ch10.slopes.solution()
    source = capsys.readouterr().out
    namespace = {"math": math, "torch": torch}
    exec(source, namespace)  # the printed code needs only math and torch
    assert ch10.slopes.check(namespace["_slopes_solution"])
