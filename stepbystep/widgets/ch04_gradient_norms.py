"""Chapter 04: gradient norms per layer by norm placement and depth, without and with warm-up."""
import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from ..checks import check_int_range, check_positive_int
from ..experiments.gradient_norms import layer_gradient_norms
from ..plots import gradient_norms_by_layer
from ._figure_box import FigureBox, show

__all__ = ["gradient_norms_explorer"]

NORM_PLACEMENTS = {"norm-first": True, "norm-last": False}


def _gradient_norms_summary(runs):
    """One line per run: how the last layer's gradient compares with the first, and the final loss."""
    lines = []
    for run in runs:
        first, last = run.norms[0, 0], run.norms[0, -1]
        lines.append(f"{run.label}: at initialisation the last layer's gradient is {last / first:.2f}× "
                     f"the first layer's; loss after {len(run.losses)} steps {run.losses[-1]:.4f}")
    return "<br>".join(lines)


def gradient_norms_explorer(max_layers=8, n_layers=6, steps=50, warmup_steps=20, lr=0.03, seed=0, runs=()):
    """Norm placement toggle and depth slider: gradient norms per layer, without and with warm-up.

    Every setting shows two stacks (``layer_gradient_norms``) of the chosen placement and depth,
    one trained at the full learning rate ``lr`` from the first step and one warming up over
    ``warmup_steps``, side by side (``gradient_norms_by_layer``). ``runs``: runs already computed
    with these ``steps``, ``lr`` and ``seed`` (e.g. a notebook's), shown without training again;
    new settings are trained once and kept. Returns a ``VBox`` (controls, summary, output); its
    ``figure`` attribute is the one figure redrawn in place.
    """
    check_positive_int("max_layers", max_layers)
    check_int_range("n_layers", n_layers, 1, max_layers)  # what the slider can show
    computed = {}
    for run in runs:
        if len(run.losses) != steps or not np.isclose(max(run.learning_rates), lr):
            raise ValueError(f"runs must be computed with steps={steps} and lr={lr}, got a run of "
                             f"{len(run.losses)} steps peaking at lr={max(run.learning_rates)}")
        computed[(run.norm_first, run.n_layers, run.warmup_steps)] = run
    placement = widgets.ToggleButtons(options=list(NORM_PLACEMENTS), value="norm-last", description="norm")
    depth = widgets.IntSlider(value=n_layers, min=1, max=max_layers, description="layers",
                              continuous_update=False)
    summary = widgets.HTML()
    output = widgets.Output()
    figure = Figure(layout="constrained")

    def run_for(norm_first, n_layers, warmup):
        key = (norm_first, n_layers, warmup)
        if key not in computed:
            computed[key] = layer_gradient_norms(n_layers, norm_first, steps=steps, lr=lr,
                                                 warmup_steps=warmup, seed=seed)
        return computed[key]

    def redraw(_change=None):
        shown = [run_for(NORM_PLACEMENTS[placement.value], depth.value, warmup) for warmup in (0, warmup_steps)]
        gradient_norms_by_layer(shown, fig=figure)
        summary.value = _gradient_norms_summary(shown)
        show(output, figure)

    placement.observe(redraw, names="value")
    depth.observe(redraw, names="value")
    redraw()
    return FigureBox([widgets.HBox([placement, depth]), summary, output], figure)
