"""Chapter 01's checkers hold a guess to the computed widths and name a σ that enters wrongly."""
import pytest
import torch

from stepbystep.data import make_regression_data
from stepbystep.exercises import ch01
from stepbystep.models import best_sigma, nadaraya_watson


def test_laplace_scores_with_sigma_scaled_by_a_constant_are_named(fails_with):
    for scale in (2.0, 0.5, 3.0):
        text = fails_with(ch01.laplace_scores, lambda q, k, s, c=scale: -(q[:, None] - k[None, :]).abs() / (c * s),
                          "times a constant")
        assert "check how σ enters" in text and "abs()" not in text


def test_a_round_guess_that_widens_with_the_noise_fails():
    result = ch01.loo_sigma.check({0.1: 0.2, 0.5: 0.3, 1.0: 0.4})  # each a round number near a minimum
    assert not result and "for noise 0.5" in repr(result) and "for noise 0.1" not in repr(result)
    answer = ch01._loo_sigma_solution()
    assert f"{answer[0.5]:.3f}" not in repr(result) and f"{answer[0.5]:.2f}" not in repr(result)


@pytest.mark.parametrize("points", [61, 301, 3001])
def test_loo_sigma_accepts_the_minimum_found_on_grids_of_any_fineness(points):
    grid = torch.logspace(-2, 1, points)
    answer = {noise: best_sigma(*make_regression_data(n=50, noise=noise, seed=42), grid)[0] for noise in (0.1, 0.5, 1.0)}
    assert ch01.loo_sigma.check(answer)


def test_loo_sigma_names_the_in_sample_choice():
    def in_sample_best(noise):  # the width with the lowest error when every point attends to itself
        x, y = make_regression_data(n=50, noise=noise, seed=42)
        errors = torch.stack([((nadaraya_watson(x, x, y, float(s))[0] - y) ** 2).mean() for s in ch01.LOO_SIGMA_GRID])
        return float(ch01.LOO_SIGMA_GRID[int(errors.argmin())])

    result = ch01.loo_sigma.check({noise: in_sample_best(noise) for noise in (0.1, 0.5, 1.0)})
    assert not result and "in-sample error" in repr(result) and "leave itself out" in repr(result)


def test_loo_sigma_names_errors_given_for_widths():
    lowest = {}
    for noise in (0.1, 0.5, 1.0):
        lowest[noise] = best_sigma(*make_regression_data(n=50, noise=noise, seed=42), ch01.LOO_SIGMA_GRID)[1]
    result = ch01.loo_sigma.check(lowest)
    assert not result and "lowest leave-one-out errors themselves" in repr(result)
