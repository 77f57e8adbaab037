"""Figures about depth: a quantity per layer of a stack, and gradient norms per layer during training."""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

__all__ = ["depth_profile", "gradient_norms_by_layer"]


def depth_profile(curves, ylabel, title=None, xlabel="layer", first=1, log=True):
    """One line per entry of ``curves`` (label -> values ``(n_layers,)``) against the layer index.

    Layers are numbered from ``first`` (use 0 when the first value is the stack's input). A log
    scale (``log=True``) shows quantities that shrink or grow geometrically with depth as
    straight lines. Returns the Figure.
    """
    if not curves:
        raise ValueError("curves is empty: pass a dict {label: values per layer}")
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    for label, values in curves.items():
        values = np.asarray(values, dtype=float)
        if values.ndim != 1:
            raise ValueError(f"curve {label!r}: expected one value per layer, got shape {values.shape}")
        ax.plot(np.arange(first, first + len(values)), values, "o-", label=label)
    if log:
        ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend()
    return fig


def _check_runs(runs):
    runs = [runs] if hasattr(runs, "norms") else list(runs)
    if not runs or not all(hasattr(run, "norms") and hasattr(run, "losses") for run in runs):
        raise TypeError("expected a GradientNormRun or a list of them (see stepbystep.gradient_norms)")
    return runs


def gradient_norms_by_layer(runs, fig=None):
    """Gradient norms per layer and the loss, one column per run of ``layer_gradient_norms``.

    Rows: (1) each layer's gradient norm at initialisation (bars) and the largest it reached
    during the run (black marks); (2) each layer's gradient norm at every step (one line per
    layer, dark = first layer, yellow = last); (3) the loss, and the learning rate on the right
    axis (dashed). Every row shares its y scale across columns, so runs compare at a glance.
    ``fig``: an existing Figure to clear and redraw (for widgets). Returns the Figure.
    """
    runs = _check_runs(runs)
    size = (0.6 + 4.2 * len(runs), 8.0)
    if fig is None:
        fig = plt.figure(figsize=size, layout="constrained")
    fig.clear()
    fig.set_size_inches(size)
    axes = fig.subplots(3, len(runs), squeeze=False, sharey="row")
    for column, run in enumerate(runs):
        norms = np.asarray(run.norms)  # (steps, n_layers)
        steps, n_layers = norms.shape
        layer_numbers = np.arange(1, n_layers + 1)
        colors = plt.get_cmap("viridis")(np.linspace(0.0, 0.9, n_layers))
        top, middle, bottom = axes[:, column]
        top.bar(layer_numbers, norms[0], color=colors, label="at initialisation")
        top.plot(layer_numbers, norms.max(axis=0), "_", color="black", ms=14, mew=2, label="largest in the run")
        top.set_xticks(layer_numbers)
        top.set_xlabel("layer")
        top.set_title(run.label)
        for layer in range(n_layers):
            middle.plot(np.arange(steps), norms[:, layer], color=colors[layer], label=f"layer {layer + 1}")
        middle.set_yscale("log")
        middle.set_xlabel("step")
        bottom.plot(np.arange(steps), run.losses, color="tab:red")
        bottom.set_yscale("log")
        bottom.set_xlabel("step")
        rate = bottom.twinx()
        rate.plot(np.arange(steps), run.learning_rates, "--", color="tab:gray")
        rate.set_ylim(0, 1.1 * max(max(r.learning_rates) for r in runs))
        if column == len(runs) - 1:
            rate.set_ylabel("learning rate")
        else:
            rate.tick_params(labelright=False)
    axes[0, 0].set_ylabel("gradient norm")
    axes[1, 0].set_ylabel("gradient norm")
    axes[2, 0].set_ylabel("loss")
    axes[0, 0].legend(fontsize=7, loc="upper left")
    if np.shape(runs[-1].norms)[1] <= 8:  # one legend entry per layer: only while they fit
        axes[1, -1].legend(fontsize=7, ncol=2, loc="upper right")
    return fig
