"""Chapter 04's exercises: a constant sum of squares is not taken for d - 1, and a count that adds
the positional table is told the table is a buffer."""
import pytest

from stepbystep.exercises import ch04


@pytest.mark.parametrize("constant", [0.0, 2.0, 4.0, 15.0])  # 2 is d - 1 at d = 3, 4 at d = 5, 15 at d = 16
def test_a_sum_of_squares_that_ignores_d_is_named_as_such(fails_with, constant):
    text = fails_with(ch04.layer_norm_invariants, lambda d: (0, constant), "for every d")
    assert "unbiased" not in text and "d - 1" not in text


def test_d_minus_one_is_still_named_when_it_fits_every_d(fails_with):
    fails_with(ch04.layer_norm_invariants, lambda d: (0, d - 1), "unbiased variance")


def test_the_length_and_one_are_still_named(fails_with):
    fails_with(ch04.layer_norm_invariants, lambda d: (0, d**0.5), "length")
    fails_with(ch04.layer_norm_invariants, lambda d: (0, 1), "unit vector")


def test_a_slip_at_one_d_only_gets_the_plain_message(fails_with):
    text = fails_with(ch04.layer_norm_invariants, lambda d: (0, 2 if d == 3 else d), "for d = 3")
    assert "unbiased" not in text


def test_the_right_answer_passes():
    assert ch04.layer_norm_invariants.check(ch04._layer_norm_invariants_solution)


@pytest.mark.parametrize("per_layer", [False, True])
def test_a_count_with_the_positional_table_is_told_it_is_a_buffer(fails_with, per_layer):
    def count(n_layers, d_model, ff_units, norm_first):
        table = 100 * d_model * (n_layers if per_layer else 1)  # EncoderTransf's default max_len is 100
        return ch04._stack_parameter_count_solution(n_layers, d_model, ff_units, norm_first) + table

    text = fails_with(ch04.stack_parameter_count, count, "positional encoding")
    assert "buffer, not a parameter" in text
