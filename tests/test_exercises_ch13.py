"""Chapter 13's exercises: the worked solutions pass, typical wrong answers get a useful message
that does not give the answer away."""
import pytest
import torch

from stepbystep.exercises import ch13
from stepbystep.interpret import induction_score, previous_token_score


# ----------------------------------------------------------------------------- 1. previous-token score
def test_previous_token_solution_passes():
    assert ch13.previous_token.check(ch13.previous_token._solution)
    assert ch13.previous_token.check(previous_token_score)


def test_previous_token_placeholder_is_caught(fails_with):
    fails_with(ch13.previous_token, lambda w: w.mean(dim=(0, 2, 3)), "exactly 1.0")


def test_previous_token_counting_the_first_query_is_caught(fails_with):
    def over_all_queries(weights):
        return weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1).mean(dim=0) / weights.shape[-1]
    fails_with(ch13.previous_token, over_all_queries, "first query has no key before it")


def test_previous_token_sum_diagonal_and_transpose_are_caught(fails_with):
    fails_with(ch13.previous_token, lambda w: w.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=(0, 2)), "a sum")
    fails_with(ch13.previous_token, lambda w: w.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2)), "on itself")
    fails_with(ch13.previous_token, lambda w: w.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2)),
               "key after the query")


def test_previous_token_wrong_shape_is_caught(fails_with):
    fails_with(ch13.previous_token, lambda w: w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=2), "shape (H,)")
    fails_with(ch13.previous_token, 3, "expected a function")


# ----------------------------------------------------------------------------- 2. induction score
def test_induction_solution_passes():
    assert ch13.induction.check(ch13.induction._solution)


def test_induction_placeholder_is_caught(fails_with):
    message = fails_with(ch13.induction, lambda w, ids: w.mean(dim=(0, 2, 3)), "differ")
    assert "- 1" not in message and "length" not in message


@pytest.mark.parametrize("back, words", [(6, "earlier occurrence itself"), (7, "key before the earlier occurrence")])
def test_induction_wrong_offsets_are_caught(fails_with, back, words):
    def fixed_offset(weights, ids):
        repeat = torch.arange(6, 12)
        return weights[:, :, repeat, repeat - back].mean(dim=(0, 2))
    fails_with(ch13.induction, fixed_offset, words)


def test_induction_positional_shortcut_is_caught(fails_with):
    def by_position(weights, ids):  # the stripe T - 1 back, without reading the tokens
        repeat = torch.arange(6, 12)
        return weights[:, :, repeat, repeat - 5].mean(dim=(0, 2))
    fails_with(ch13.induction, by_position, "from the tokens, not from the positions")


def test_induction_averaging_over_every_query_is_caught(fails_with):
    def every_query(weights, ids):
        repeat = torch.arange(6, 12)
        return weights[:, :, repeat, repeat - 5].sum(dim=(0, 2)) / (weights.shape[0] * weights.shape[2])
    fails_with(ch13.induction, every_query, "only over the queries")


# ----------------------------------------------------------------------------- 3. the stripe
def test_stripe_solution_passes():
    assert ch13.stripe.check(ch13.stripe._solution)


@pytest.mark.parametrize("answer, words", [
    (lambda length, gap: length + gap, "earlier occurrence itself"),
    (lambda length, gap: length + gap + 1, "one position too far"),
    (lambda length, gap: length - 1, "count them"), (lambda length, gap: 1, "previous-token head"),
    (lambda length, gap: 1 - length - gap, "positive number"), (lambda length, gap: 0, "does not land"),
    (lambda length, gap: "x", "number of positions"),
])
def test_stripe_wrong_answers_are_caught(fails_with, answer, words):
    message = fails_with(ch13.stripe, answer, words)
    assert "gap - 1" not in message and "+ gap" not in message


def test_stripe_one_argument_is_caught(fails_with):
    fails_with(ch13.stripe, lambda length: length - 1, "TypeError")


# ----------------------------------------------------------------------------- 4. heads that break copying
def test_breaking_heads_solution_passes():
    assert ch13.breaking_heads.check(ch13.breaking_heads._solution)


def test_breaking_heads_wrong_answers_are_caught(fails_with):
    model, ids = ch13._trained_model()
    fails_with(ch13.breaking_heads, lambda m, i: [(0, h) for h in range(4)], "smaller part")
    fails_with(ch13.breaking_heads, lambda m, i: [(1, 0)], "layer-0 heads only")
    fails_with(ch13.breaking_heads, lambda m, i: [], "name some heads")
    fails_with(ch13.breaking_heads, lambda m, i: [(0, 7)], "from 0 to 3")
    fails_with(ch13.breaking_heads, lambda m, i: "0, 1", "list of (layer, head) pairs")
    needed = ch13._breaking_solution(model, ids)
    others = [(0, h) for h in range(4) if (0, h) not in needed]
    fails_with(ch13.breaking_heads, lambda m, i: others, "still copies")


def test_induction_per_sequence_mean_is_caught(fails_with):
    def per_sequence(weights, ids):  # right per sequence, then the sequences averaged with equal weight
        return torch.stack([induction_score(weights[i:i + 1], ids[i:i + 1]) for i in range(len(ids))]).mean(dim=0)
    fails_with(ch13.induction, per_sequence, "not per sequence first")
