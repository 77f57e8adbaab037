"""Chapter 01's loo_sigma: its hint leaves the prediction to the learner, its checker names the usual slips."""
import torch

from stepbystep.exercises import ch01


def _answer():
    return ch01._loo_sigma_solution()  # {noise: σ}


def _reveals(message, answer):
    return any(f"{answer[n]:.3f}" in message or f"{answer[n]:.2f}" in message for n in answer)


def test_the_hint_asks_rather_than_tells_which_way_the_width_moves(capsys):
    ch01.loo_sigma.hint()
    hint = capsys.readouterr().out
    assert "?" in hint and "LOO_SIGMA_GRID" in hint
    for giveaway in ("need more", "wider kernel for", "narrower kernel for", "grows with the noise"):
        assert giveaway not in hint


def test_one_width_given_for_all_three_noise_levels_is_traced_to_the_noise_argument(fails_with):
    answer = _answer()
    for noise in (0.1, 0.5, 1.0):  # e.g. make_regression_data called without noise=... three times
        text = fails_with(ch01.loo_sigma, {n: answer[noise] for n in answer}, "all three widths are the same")
        assert "noise=" in text and not _reveals(text, answer)


def test_the_right_widths_swapped_between_noise_levels_are_named(fails_with):
    answer = _answer()
    swapped = {0.1: answer[0.5], 0.5: answer[0.1], 1.0: answer[1.0]}
    text = fails_with(ch01.loo_sigma, swapped, "not each with its own noise level")
    assert not _reveals(text, answer)
    reversed_order = {0.1: answer[1.0], 0.5: answer[0.5], 1.0: answer[0.1]}  # a shrinking answer says so first
    fails_with(ch01.loo_sigma, reversed_order, "shrink as the noise grows")


def test_grid_positions_and_the_worst_widths_are_named(fails_with):
    grid = ch01.LOO_SIGMA_GRID
    answer = _answer()
    indices = {n: int(torch.argmin((grid - answer[n]).abs())) for n in answer}  # the index, not the width
    text = fails_with(ch01.loo_sigma, indices, "not a width on the grid")
    assert "position in the grid" in text
    fails_with(ch01.loo_sigma, {n: float(grid[-1]) for n in answer}, "wide end of the grid")


def test_a_value_that_is_not_one_number_is_refused_by_name(fails_with):
    answer = _answer()
    fails_with(ch01.loo_sigma, {0.1: answer[0.1], 0.5: [0.3, 0.4], 1.0: answer[1.0]}, "0.5: list")
    fails_with(ch01.loo_sigma, {"0.1": 0.2, "0.5": 0.3, "1.0": 0.4}, "as numbers")


def test_the_notebooks_placeholder_still_fails_per_noise_level(fails_with):
    text = fails_with(ch01.loo_sigma, {0.1: 1.0, 0.5: 1.0, 1.0: 1.0}, "too wide")
    assert "all three widths are the same" not in text and not _reveals(text, _answer())
