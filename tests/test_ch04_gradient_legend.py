"""Chapter 04's gradient figure keeps its legend below the panels, where a narrow window does not cut it off."""
import matplotlib
import numpy as np

matplotlib.use("Agg")
from stepbystep.experiments.gradient_norms import GradientNormRun  # noqa: E402
from stepbystep.plots import gradient_norms_by_layer  # noqa: E402


def _run(norm_first, seed, n_layers=6, steps=20):
    rng = np.random.default_rng(seed)
    return GradientNormRun(rng.uniform(0.1, 2, (steps, n_layers)), rng.uniform(0.1, 1, steps),
                           np.full(steps, 0.01), norm_first, 0)


def test_the_legend_sits_below_every_panel_and_within_the_panels_width():
    fig = gradient_norms_by_layer([_run(True, 0), _run(False, 1), _run(True, 2), _run(False, 3)])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    panels = [ax.get_tightbbox(renderer) for ax in fig.axes]
    assert box.y1 <= min(panel.y0 for panel in panels)  # under the lowest panel, tick labels included
    assert min(p.x0 for p in panels) <= box.x0 and box.x1 <= max(p.x1 for p in panels)  # no wider than the panels
    assert len(legend.get_texts()) == 2 + 6 + 2  # bars and marks, six layers, loss and rate
