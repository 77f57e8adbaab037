"""Seed studies: one dot per seed and the median, for each model compared."""
import matplotlib.pyplot as plt
import numpy as np

from ..checks import check_instance

__all__ = ["seed_dots"]


def seed_dots(results, ylabel="final test loss", title="one dot per seed, bar at the median"):
    """Dots of ``results`` ``{name: [value per seed]}``, one column a name, a bar at each median.

    The dots of one seed sit at the same offset in every column, and seed ``i`` is labelled
    beside the first column. Returns the Figure.
    """
    check_instance("results", results, dict, "a dict of name -> values per seed")
    if not results or any(len(values) == 0 for values in results.values()):
        raise ValueError("results must map each name to at least one value, got "
                         f"{ {name: len(values) for name, values in results.items()} }")
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for column, (name, values) in enumerate(results.items()):
        values = np.asarray([float(v) for v in values])
        offsets = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else np.zeros(1)
        ax.scatter(column + offsets, values, color=f"C{column}", s=30, zorder=3)
        median = float(np.median(values))
        ax.hlines(median, column - 0.3, column + 0.3, color="black", lw=2, zorder=2)
        ax.annotate(f"median {median:.2f}", (column + 0.32, median), va="center", fontsize=8)
    ax.set_xticks(range(len(results)), list(results))
    ax.set_xlim(-0.5, len(results) - 0.2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("model")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig
