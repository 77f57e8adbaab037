"""Chapter 01's checkers name the direction of a wrong width, another data set, and a squared distance."""
import torch

from stepbystep.data import make_regression_data
from stepbystep.exercises import ch01
from stepbystep.models import best_sigma


def test_a_wrong_width_is_called_too_narrow_or_too_wide():
    answer = ch01._loo_sigma_solution()
    result = ch01.loo_sigma.check({0.1: answer[0.1] * 0.5, 0.5: answer[0.5], 1.0: answer[1.0] * 2})
    text = repr(result)
    assert not result and "noise 0.1 your σ" in text and "too narrow" in text and "too wide" in text
    assert text.index("too narrow") < text.index("too wide")  # noise 0.1 first, the narrow one
    assert "noise 0.5" not in text


def test_widths_from_another_draw_are_traced_to_the_data_set():
    grid = ch01.LOO_SIGMA_GRID
    other = {noise: best_sigma(*make_regression_data(n=50, noise=noise, seed=0), grid)[0] for noise in (0.1, 0.5, 1.0)}
    answer = ch01._loo_sigma_solution()
    assert all(abs(other[n] / answer[n] - 1) > 0.03 for n in other)  # seed 0's widths really differ
    result = ch01.loo_sigma.check(other)
    assert not result and "n=50 and seed=42" in repr(result)
    assert all(f"{answer[n]:.3f}" not in repr(result) for n in answer)


def test_laplace_scores_with_a_squared_distance_are_named(fails_with):
    fails_with(ch01.laplace_scores, lambda q, k, s: -((q[:, None] - k[None, :]) ** 2) / s**2, "square the distance")


def test_query_attention_legend_does_not_promise_proportional_area():
    from stepbystep.plots import query_attention

    x, y = make_regression_data(n=20, seed=1)
    fig = query_attention(x, y, 5.0, 0.5)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "training point (area grows with weight)" in labels
    sizes = fig.axes[0].collections[0].get_sizes()
    assert torch.tensor(sizes).min() > 0  # zero-weight points are still drawn, so area is not proportional
