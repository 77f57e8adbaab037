"""Chapter 01's loo_sigma: only widths that another draw of the data would give are blamed on the data."""
import torch

from stepbystep.data import make_regression_data
from stepbystep.exercises import ch01
from stepbystep.models import leave_one_out_error


def _grid_minima(**draw):
    grid = ch01.LOO_SIGMA_GRID
    return {noise: float(grid[int(leave_one_out_error(*make_regression_data(noise=noise, **draw), grid).argmin())])
            for noise in (0.1, 0.5, 1.0)}


def test_widths_30_percent_off_are_called_too_wide_or_too_narrow_not_blamed_on_the_data(fails_with):
    answer = ch01._loo_sigma_solution()
    for factor, word in ((1.3, "too wide"), (0.7, "too narrow")):
        text = fails_with(ch01.loo_sigma, {n: factor * w for n, w in answer.items()}, word)
        assert "seed=42" not in text and text.count(word) == 3  # one verdict per noise level


def test_the_minima_of_another_seed_are_traced_to_the_draw(fails_with):
    other = _grid_minima(n=50, seed=0)
    assert all(abs(other[n] / ch01._loo_minimum(n)[0] - 1) > 0.03 for n in other)  # seed 0 differs at every level
    assert list(other.values()) == sorted(other.values())  # and grows with the noise
    fails_with(ch01.loo_sigma, other, "seed=42")
