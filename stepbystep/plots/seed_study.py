"""Seed studies: every seed as a dot and the median as a bar, for each setting compared.

One drawing serves the course's seed studies: ``seed_dots`` (one measure, chapters 02 and 11),
``seed_panels`` (several measures, chapter 09) and ``seed_loss_curves`` (curves from step 0, then
the last value of each seed, chapter 09).
"""
import matplotlib.pyplot as plt
import numpy as np

from ..checks import check_instance, check_positive_int
from ._arrays import _as_numpy

__all__ = ["seed_dots", "seed_panels", "seed_loss_curves"]


def _draw_seed_dots(ax, results, ylabel, references=None, colors=None, boxed=False):
    """Column ``i`` is setting ``i``: its seeds as dots, a bar at their median, in ``colors[i]`` (default
    ``C{i}``); ``references`` ``{label: value}`` as dashed lines (``boxed``: their labels on white, readable
    over a bar). ``results`` ``{name: values (seeds,)}``."""
    colors = colors or [f"C{column}" for column in range(len(results))]
    for column, (name, values) in enumerate(results.items()):
        values = _as_numpy(values, float)
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"{name}: expected one value per seed (seeds,), got shape {values.shape}")
        offsets = np.linspace(-0.15, 0.15, values.size) if values.size > 1 else np.zeros(1)  # (seeds,)
        ax.bar(column, np.median(values), color=colors[column], alpha=0.35, width=0.6)
        ax.scatter(column + offsets, values, color=colors[column], s=30, zorder=3)
    for label, value in (references or {}).items():
        ax.axhline(value, color="grey", ls="--", lw=1)
        ax.annotate(label, (len(results) - 0.4, value), ha="right", va="bottom", fontsize=8, color="grey",
                    xytext=(-4, 2), textcoords="offset points",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1} if boxed else None)
    ax.set_xticks(range(len(results)), list(results))
    ax.set_xlim(-0.6, len(results) - 0.4)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(ylabel)


def _check_results(results):
    check_instance("results", results, dict, "a dict of setting name -> values per seed")
    if not results or any(len(values) == 0 for values in results.values()):
        raise ValueError("results must map each setting to at least one value per seed, got "
                         f"{ {name: len(values) for name, values in results.items()} }")


def seed_dots(results, ylabel, title="each seed (dots), the median (bar)", references=None):
    """One measure over seeds: ``results`` ``{name: values (seeds,)}``; ``references``
    ``{label: value}`` (a chance level, a ceiling) drawn dashed. Returns the Figure."""
    _check_results(results)
    fig, ax = plt.subplots(figsize=(1.6 * len(results) + 2.6, 3.6), layout="constrained")
    _draw_seed_dots(ax, results, ylabel, references)
    ax.set_title(title, fontsize=10)
    return fig


def seed_panels(results, metrics, references=None):
    """Several measures over seeds, one panel each: ``results`` ``{name: [{metric: value}, ...]}``
    (a dict per seed), ``metrics`` ``{metric: axis label}``, ``references``
    ``{metric: (value, label)}`` or ``{metric: [(value, label), ...]}`` (dashed lines). Returns
    the Figure."""
    _check_results(results)
    if not metrics:
        raise ValueError("metrics must name at least one measure")
    references = references or {}
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.4 * len(metrics), 3.0), layout="constrained")
    for ax, (key, label) in zip(np.atleast_1d(axes), metrics.items()):
        per_setting = {name: [numbers[key] for numbers in seeds] for name, seeds in results.items()}
        lines = references.get(key, [])
        lines = [lines] if isinstance(lines, tuple) else lines
        _draw_seed_dots(ax, per_setting, label, {text: value for value, text in lines} or None, boxed=True)
        if lines:  # room above the highest line for its label, clear of the frame and the title
            ax.set_ylim(top=max(ax.get_ylim()[1], max(value for value, _ in lines)) * 1.25)
        ax.set_title(label, fontsize=10)
    fig.suptitle("each seed (dots), the median (bar)", fontsize=10)
    return fig


def seed_loss_curves(runs, reference=None, reference_label=None, ylabel="validation loss", last=1, label_at="right",
                     reference_on_finals=False):
    """Loss against the step for every seed of every setting, from step 0 (left), and each seed's
    final loss (right): its last value, or the mean of its ``last`` values. ``runs`` ``{name: [run per
    seed]}``, each run with ``steps`` and ``val_losses``; ``reference`` a dashed line (e.g. ln V, a uniform
    guess), labelled at the ``label_at`` end ("left" or "right") of the curves, and drawn on the right panel
    too if ``reference_on_finals``. Returns the Figure."""
    check_instance("runs", runs, dict, "a dict of setting name -> runs, one per seed")
    if not runs or not all(runs.values()):
        raise ValueError("runs must map each setting's name to a non-empty list of runs")
    check_positive_int("last", last)
    if label_at not in ("left", "right"):
        raise ValueError(f"label_at must be 'left' or 'right', got {label_at!r}")
    fig, (curves, finals) = plt.subplots(1, 2, figsize=(10.5, 3.4), layout="constrained",
                                         gridspec_kw={"width_ratios": [1.7, 1]})
    for column, (name, seed_runs) in enumerate(runs.items()):
        for index, run in enumerate(seed_runs):
            curves.plot(run.steps, _as_numpy(run.val_losses, float), color=f"C{column}", lw=1.2, marker=".",
                        label=f"{name} ({len(seed_runs)} seeds)" if index == 0 else None)
    label = reference_label or (None if reference is None else f"{reference:.2f}")
    if reference is not None:
        curves.axhline(reference, color="grey", ls="--", lw=1)
        left = label_at == "left"
        curves.annotate(label, (curves.get_xlim()[0 if left else 1], reference), ha="left" if left else "right",
                        va="bottom", fontsize=8, color="grey", xytext=(4 if left else -4, 2),
                        textcoords="offset points")
    curves.set_xlabel("training step")
    curves.set_ylabel(ylabel)
    curves.set_ylim(bottom=0)
    curves.legend(loc="upper right", frameon=False)
    curves.set_title("every seed, from step 0", fontsize=10)
    ends = {name: [float(np.mean(_as_numpy(run.val_losses, float)[-last:])) for run in seed_runs]
            for name, seed_runs in runs.items()}
    on_finals = {label: reference} if reference is not None and reference_on_finals else None
    _draw_seed_dots(finals, ends, f"{ylabel} at the end" if last == 1 else f"{ylabel}, mean of the last {last}",
                    on_finals, boxed=True)
    if on_finals:  # room above the line for its label, below the title
        finals.set_ylim(top=max(finals.get_ylim()[1], reference) * 1.15)
    finals.set_title("last value: seeds (dots), median (bar)" if last == 1
                     else f"mean of the last {last} steps: seeds (dots), median (bar)", fontsize=10)
    return fig
