"""Chapter 09's design studies over seeds: loss curves from step 0, and label smoothing's numbers."""
import matplotlib.pyplot as plt
import numpy as np

from ..checks import check_instance
from ._arrays import _as_numpy

__all__ = ["seed_loss_curves", "seed_dots"]


def seed_loss_curves(runs, reference=None, reference_label=None, ylabel="validation loss"):
    """Validation loss against the step, every seed of every setting, from step 0.

    ``runs`` maps a setting's name to its runs, one per seed, each with ``steps`` and
    ``val_losses`` (and ``seed``). Left: one thin line per seed, one colour per setting; right:
    every seed's last loss (dots) and their median (a bar). ``reference`` draws a dashed
    horizontal line (e.g. ln V, the loss of a uniform guess). Returns the Figure.
    """
    check_instance("runs", runs, dict, "a dict of setting name -> runs, one per seed")
    if not runs or not all(runs.values()):
        raise ValueError("runs must map each setting's name to a non-empty list of runs")
    fig, (curves, finals) = plt.subplots(1, 2, figsize=(10.5, 3.4), layout="constrained",
                                         gridspec_kw={"width_ratios": [1.7, 1]})
    for column, (name, seed_runs) in enumerate(runs.items()):
        color = f"C{column}"
        for index, run in enumerate(seed_runs):
            curves.plot(run.steps, _as_numpy(run.val_losses, float), color=color, lw=1.2, marker=".",
                        label=f"{name} ({len(seed_runs)} seeds)" if index == 0 else None)
        last = np.array([run.val_losses[-1] for run in seed_runs])  # (seeds,)
        finals.bar(column, np.median(last), color=color, alpha=0.35, width=0.6)
        finals.scatter(np.full(len(last), column), last, color=color, zorder=3)
    if reference is not None:
        curves.axhline(reference, color="grey", ls="--", lw=1)
        curves.annotate(reference_label or f"{reference:.2f}", (curves.get_xlim()[1], reference), ha="right",
                        va="bottom", fontsize=8, color="grey")
    curves.set_xlabel("training step")
    curves.set_ylabel(ylabel)
    curves.set_ylim(bottom=0)
    curves.legend(loc="upper right", frameon=False)
    curves.set_title("every seed, from step 0", fontsize=10)
    finals.set_xticks(range(len(runs)), list(runs))
    finals.set_ylabel(f"{ylabel} at the end")
    finals.set_ylim(bottom=0)
    finals.set_title("last value: seeds (dots), median (bar)", fontsize=10)
    return fig


def seed_dots(results, metrics, references=None):
    """Numbers measured once per seed, for several settings: one panel per metric.

    ``results`` maps a setting's name to a list of dicts (one per seed); ``metrics`` maps a key of
    those dicts to its axis label. Each panel shows every seed (dots) and the median (bar).
    ``references`` maps a metric's key to ``(value, label)`` drawn as a dashed line.
    Returns the Figure.
    """
    check_instance("results", results, dict, "a dict of setting name -> list of per-seed dicts")
    if not results or not metrics:
        raise ValueError("results and metrics must be non-empty dicts")
    references = references or {}
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.4 * len(metrics), 3.0), layout="constrained")
    axes = np.atleast_1d(axes)
    names = list(results)
    for ax, (key, label) in zip(axes, metrics.items()):
        for column, name in enumerate(names):
            values = np.array([numbers[key] for numbers in results[name]], dtype=float)  # (seeds,)
            ax.bar(column, np.median(values), color=f"C{column}", alpha=0.35, width=0.6)
            ax.scatter(np.full(len(values), column), values, color=f"C{column}", zorder=3)
        if key in references:
            value, text = references[key]
            ax.axhline(value, color="grey", ls="--", lw=1)
            ax.annotate(text, (-0.55, value), ha="left", va="top", fontsize=8, color="grey",
                        xytext=(0, -2), textcoords="offset points")
        ax.set_xticks(range(len(names)), names)
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(label)
        ax.set_title(label, fontsize=10)
    fig.suptitle("each seed (dots) and the median (bar)", fontsize=10)
    return fig
