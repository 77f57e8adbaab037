"""Chapter 01's leave-one-out exercises: a diagonal filled with 0 and a width one grid step off are named."""
import torch

from stepbystep.exercises import ch01


def _masked_with(value):
    def loo_error(x, y, sigma):
        scores = -((x[:, None] - x[None, :]) ** 2) / (2 * sigma**2)  # (n, n)
        scores = scores.masked_fill(torch.eye(len(x), dtype=torch.bool), value)  # (n, n)
        return ((torch.softmax(scores, dim=-1) @ y - y) ** 2).mean()
    return loo_error


def test_a_diagonal_filled_with_zero_is_told_why_it_changed_nothing(fails_with):
    text = fails_with(ch01.loo_error, _masked_with(0.0), "each point still attends to itself")
    assert "already 0" in text and "changes nothing" in text
    assert "inf" not in text  # the score to use is left to the learner


def test_a_diagonal_filled_with_a_very_low_score_passes():
    assert ch01.loo_error.check(_masked_with(-1e9))


def test_the_loo_error_hint_asks_rather_than_names_the_fill(capsys):
    ch01.loo_error.hint()
    hint = capsys.readouterr().out
    assert "?" in hint
    for giveaway in ("inf", "masked_fill", "torch.eye"):
        assert giveaway not in hint


def _grid_neighbours(step):
    grid = ch01.LOO_SIGMA_GRID
    answer = ch01._loo_sigma_solution()
    return answer, {n: float(grid[int(torch.argmin((grid - answer[n]).abs())) + step]) for n in answer}


def test_widths_one_grid_step_off_are_called_close_not_blamed_on_the_data(fails_with):
    for step in (-1, 1):
        answer, neighbours = _grid_neighbours(step)
        text = fails_with(ch01.loo_sigma, neighbours, "not the grid point with the lowest leave-one-out error")
        assert "seed=42" not in text
        assert not any(f"{answer[n]:.3f}" in text or f"{answer[n]:.2f}" in text for n in answer)


def test_only_the_wrong_noise_level_is_called_close(fails_with):
    answer, neighbours = _grid_neighbours(1)
    text = fails_with(ch01.loo_sigma, {0.1: answer[0.1], 0.5: neighbours[0.5], 1.0: answer[1.0]}, "close")
    assert "noise 0.5" in text and "0.1," not in text


def test_widths_well_off_are_not_called_close(fails_with):
    for step, side in ((3, "too wide"), (-2, "too narrow")):
        _, off = _grid_neighbours(step)
        assert not any(all(abs(w / m - 1) < 1e-6 for w, m in zip(off.values(), draw))
                       for draw in ch01._other_draws_minima())  # not another draw's answer by chance
        text = fails_with(ch01.loo_sigma, off, side)
        assert "close" not in text and "seed=42" not in text


def test_the_minima_of_another_draw_ask_about_the_data(fails_with):
    growing = [draw for draw in ch01._other_draws_minima() if draw[0] < draw[1] < draw[2]]
    assert growing  # widths that grow with the noise, as the right ones do, but for other data
    for draw in growing[:3]:
        text = fails_with(ch01.loo_sigma, dict(zip(ch01._NOISE_LEVELS, draw)), "none is the best width")
        assert "seed=42" in text and "close" not in text
