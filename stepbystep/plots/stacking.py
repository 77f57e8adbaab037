"""Figures about depth: a quantity per layer of a stack, gradient norms per layer during training, and
the spread of training runs over seeds."""
import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import LogLocator, MaxNLocator

from ..checks import check_instance
from ._arrays import _as_numpy

__all__ = ["depth_profile", "gradient_norms_by_layer", "seed_spread"]


def _log_y(ax):
    """A log y scale with two minor ticks a decade (at 2 and 5) instead of eight.

    Every minor tick is an object that the layout measures at every draw: with fewer of them a
    grid of log axes draws about twice as fast, and an axis spanning less than a decade still
    gets labelled ticks.
    """
    ax.set_yscale("log")
    ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))


def depth_profile(curves, ylabel, title=None, xlabel="layer", first=1, log=True):
    """One line per entry of ``curves`` (label -> values ``(n_layers,)``) against the layer index.

    Layers are numbered from ``first`` (use 0 when the first value is the stack's input). A log
    scale (``log=True``) shows quantities that shrink or grow geometrically with depth as
    straight lines. Returns the Figure.
    """
    check_instance("curves", curves, dict, "a dict of label -> values per layer")
    if not curves:
        raise ValueError("curves must be a non-empty dict of label -> values per layer, got an empty dict")
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    for label, values in curves.items():
        values = _as_numpy(values, float)
        if values.ndim != 1:
            raise ValueError(f"curve {label!r}: expected one value per layer, got shape {values.shape}")
        ax.plot(np.arange(first, first + len(values)), values, "o-", label=label)
    if log:
        _log_y(ax)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend()
    return fig


def _check_runs(runs):
    expected = "a GradientNormRun or a non-empty list of them (see stepbystep.experiments.gradient_norms)"
    listed = [runs] if hasattr(runs, "norms") else list(runs)
    wrong = [type(run).__name__ for run in listed if not (hasattr(run, "norms") and hasattr(run, "losses"))]
    if wrong:
        raise TypeError(f"runs must be {expected}, got {type(runs).__name__} holding {', '.join(wrong)}")
    if not listed:
        raise ValueError(f"runs must be {expected}, got an empty {type(runs).__name__}")
    return listed


def gradient_norms_by_layer(runs, fig=None):
    """Gradient norms per layer and the loss, one column per run of ``layer_gradient_norms``.

    Rows: (1) each layer's gradient norm at initialisation (bars) and the largest it reached
    during the run (black marks); (2) each layer's gradient norm at every step (one line per
    layer, dark = first layer, yellow = last); (3) the loss, and the learning rate on the right
    axis (dashed). Every row shares its y scale across columns, so runs compare at a glance; one
    legend for the whole figure sits below it, over no panel, where a narrow window keeps it.
    ``fig``: an existing Figure to clear and redraw (for widgets). Returns the Figure.
    """
    runs = _check_runs(runs)
    size = (0.6 + 4.2 * len(runs), 8.6)
    if fig is None:
        fig = plt.figure(figsize=size, layout="constrained")
    fig.clear()
    fig.set_size_inches(size)
    axes = fig.subplots(3, len(runs), squeeze=False, sharey="row")
    for column, run in enumerate(runs):
        norms = _as_numpy(run.norms)  # (steps, n_layers)
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
        _log_y(middle)
        middle.set_xlabel("step")
        bottom.plot(np.arange(steps), run.losses, color="tab:red", label="loss (left axis)")
        _log_y(bottom)
        bottom.set_xlabel("step")
        rate = bottom.twinx()
        rate.plot(np.arange(steps), run.learning_rates, "--", color="tab:gray", label="learning rate (right axis)")
        rate.set_ylim(0, 1.1 * max(max(r.learning_rates) for r in runs))
        if column == len(runs) - 1:
            rate.set_ylabel("learning rate")
        else:
            rate.tick_params(labelright=False)
    axes[0, 0].set_ylabel("gradient norm")
    axes[1, 0].set_ylabel("gradient norm")
    axes[2, 0].set_ylabel("loss")
    # legends for the whole figure, outside the panels: bars and marks, layers, loss and rate
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if np.shape(runs[-1].norms)[1] <= 8:  # one entry per layer: only while they fit
        more = axes[1, -1].get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    for ax in (axes[2, -1], rate):
        more = ax.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(handles), 5), fontsize=7)
    return fig


def seed_spread(groups):
    """Training runs of several settings, each repeated over seeds: what the seeds agree on.

    ``groups`` maps a setting's label to its runs (``GradientNormRun``s of one setting, one per
    seed, all of the same length). Left: for each setting, the median loss over the seeds at
    every step (line) and the band from the lowest to the highest seed; right: every seed's
    final loss (dots) and their median (a bar), one column per setting. Both on a log scale.
    Returns the Figure.
    """
    check_instance("groups", groups, dict, "a dict of setting label -> runs, one per seed")
    if not groups:
        raise ValueError("groups must be a non-empty dict of setting label -> runs, one per seed, got an empty dict")
    fig, (curves, finals) = plt.subplots(1, 2, figsize=(10.5, 3.4), layout="constrained",
                                         gridspec_kw={"width_ratios": [1.4, 1.2]})
    for column, (label, runs) in enumerate(groups.items()):
        runs = _check_runs(runs)
        lengths = {len(run.losses) for run in runs}
        if len(lengths) != 1:
            raise ValueError(f"setting {label!r}: the runs must have the same number of steps, got {sorted(lengths)}")
        losses = np.stack([_as_numpy(run.losses, float) for run in runs])  # (seeds, steps)
        steps = np.arange(losses.shape[1])
        color = f"C{column}"
        median = np.median(losses, axis=0)  # (steps,)
        curves.fill_between(steps, losses.min(axis=0), losses.max(axis=0), color=color, alpha=0.2, lw=0)
        curves.plot(steps, median, color=color, label=f"{label} ({len(runs)} seeds)")
        final = losses[:, -1]  # (seeds,)
        spread = np.linspace(-0.12, 0.12, len(final)) if len(final) > 1 else np.zeros(1)
        finals.plot(column + spread, final, "o", color=color, alpha=0.7)
        finals.plot([column - 0.25, column + 0.25], [np.median(final)] * 2, color="black", lw=2)
    _log_y(curves)
    curves.set_xlabel("step")
    curves.set_ylabel("training loss")
    curves.set_title("median over seeds, band: lowest to highest seed")
    curves.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)  # below, off the bands
    _log_y(finals)
    finals.set_xticks(range(len(groups)), [textwrap.fill(label, 10, break_long_words=False, break_on_hyphens=False)
                                           for label in groups], fontsize=7)  # a few words a line: six fit side by side
    finals.set_xlim(-0.5, len(groups) - 0.5)
    finals.set_ylabel("final loss")
    finals.set_title("final loss of each seed (bar: median)")
    return fig
