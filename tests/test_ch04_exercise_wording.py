"""Chapter 04's exercises 1 and 3: the output projection and wide heads are named in a count; a
length given for its square is named as such."""
from stepbystep.exercises import ch04

_CASES = ((3, 4, 10, True), (3, 6, 10, True), (2, 8, 16, False), (4, 6, 12, False))


def _right(n_layers, d_model, ff_units, norm_first):
    return ch04.stack_parameter_count._solution(n_layers, d_model, ff_units, norm_first)


def test_a_count_without_the_output_projection_is_named(fails_with):
    def three_projections(n_layers, d_model, ff_units, norm_first):
        return _right(n_layers, d_model, ff_units, norm_first) - n_layers * (d_model * d_model + d_model)

    text = fails_with(ch04.stack_parameter_count, three_projections, "three projections")
    assert "output projection" in text
    assert all(str(_right(*case)) not in text for case in _CASES)


def test_a_count_that_grows_with_the_heads_is_traced_to_wide_heads(fails_with):
    for n_heads in (2, 4):
        def wide(n_layers, d_model, ff_units, norm_first, h=n_heads):
            narrow = 4 * (d_model * d_model + d_model)
            wide_attention = h * 3 * (d_model * d_model + d_model) + (h * d_model * d_model + d_model)
            return _right(n_layers, d_model, ff_units, norm_first) + n_layers * (wide_attention - narrow)

        text = fails_with(ch04.stack_parameter_count, wide, "wide heads")
        assert "same for any n_heads" in text


def test_the_length_given_for_the_squared_length_is_named(fails_with):
    text = fails_with(ch04.layer_norm_invariants, lambda d: (0.0, d**0.5), "y's length ‖y‖")
    assert "‖y‖²" in text and "= d" not in text


def test_the_solution_speaks_of_the_squared_length_and_the_radius_consistently(capsys):
    ch04.layer_norm_invariants.solution()
    printed = capsys.readouterr().out
    assert "‖y‖² = d (radius √d)" in printed and "squared length ‖y‖² is d" in printed
