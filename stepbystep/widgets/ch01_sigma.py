"""Chapter 01: a σ slider over Nadaraya-Watson kernel regression.

``kernel_fit`` is everything the widget shows for one width, computed without any widget or
plotting library; ``sigma_explorer`` wires it to a slider and draws it with
``plots.kernel_dashboard``.
"""
from collections import namedtuple

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..checks import check_number_range, check_positive_int
from ..data import make_regression_data, regression_grid
from ..models import best_sigma, leave_one_out_error, nadaraya_watson
from ..plots import kernel_dashboard
from ._figure_box import FigureBox, show

__all__ = ["KernelFit", "kernel_fit", "sigma_explorer"]

KernelFit = namedtuple("KernelFit", ["sigma", "predictions", "weights", "loo_error"])
KernelFit.__doc__ = """One width's fit: predictions ``(n_q,)`` and weights ``(n_q, n_k)`` at the
queries, and the leave-one-out error on the training points (a float)."""


def kernel_fit(x_train, y_train, queries, sigma):
    """Everything the σ widget shows for one width: predictions, weights and leave-one-out error."""
    with torch.no_grad():
        predictions, weights = nadaraya_watson(queries, x_train, y_train, sigma)
        loo = leave_one_out_error(x_train, y_train, float(sigma))
    return KernelFit(float(sigma), predictions, weights, float(loo))


SIGMA_LOG_RANGE = (-2.0, 1.0)  # the σ slider spans 10⁻² .. 10¹


def sigma_explorer(x_train=None, y_train=None, sigma=0.5, n_grid=200):
    """A σ slider (log scale) redrawing the fit, the kernel and the weights heatmap together.

    ``x_train``, ``y_train`` ``(n,)`` default to ``make_regression_data()``. The label under
    the slider gives the leave-one-out error at the current σ and the best σ on a grid over the
    slider's range. The computation is ``kernel_fit``; the drawing is ``kernel_dashboard``.
    Returns a ``VBox`` (slider, label, output); its ``figure`` attribute is the one figure the
    slider redraws in place.
    """
    check_number_range("sigma", sigma, *(10 ** bound for bound in SIGMA_LOG_RANGE))  # what the slider can show
    check_positive_int("n_grid", n_grid)
    if x_train is None or y_train is None:
        x_train, y_train = make_regression_data()
    x_grid, y_true = regression_grid(n_grid)  # (n_grid,), (n_grid,)
    grid_best, grid_error = best_sigma(x_train, y_train, torch.logspace(*SIGMA_LOG_RANGE, 61))
    slider = widgets.FloatLogSlider(value=sigma, base=10, min=SIGMA_LOG_RANGE[0], max=SIGMA_LOG_RANGE[1],
                                    step=0.02, description="σ", readout_format=".3f",
                                    continuous_update=False)
    label = widgets.Label()
    output = widgets.Output()
    figure = Figure(figsize=(12, 3.6), layout="constrained")

    def redraw(_change=None):
        fit = kernel_fit(x_train, y_train, x_grid, slider.value)
        kernel_dashboard(x_train, y_train, x_grid, fit, y_true=y_true, fig=figure, best=(grid_best, grid_error))
        label.value = (f"leave-one-out MSE at σ = {fit.sigma:.3f}: {fit.loo_error:.4f}   "
                       f"(lowest on the slider's range: {grid_error:.4f} at σ = {grid_best:.3f})")
        show(output, figure)

    slider.observe(redraw, names="value")
    redraw()
    return FigureBox([slider, label, output], figure)
