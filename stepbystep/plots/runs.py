"""Several training runs on one set of axes: their training and test loss curves."""
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from ..checks import check_instance
from ._arrays import _as_numpy

__all__ = ["compare_runs"]


def compare_runs(runs, test_label="test"):
    """Loss curves of several runs: training solid, test (or validation) dashed, one colour a run.

    ``runs`` maps a run's name to ``(train_losses, test_losses)``, two per-epoch sequences
    (e.g. a trainer's ``losses`` and ``val_losses``; the second may be empty). The legend
    reports each run's final test loss. Returns the Figure.
    """
    check_instance("runs", runs, dict, "a dict of name -> (train, test) losses")
    if not runs:
        raise ValueError("runs must be a non-empty dict of name -> (train, test) losses, got an empty dict")
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    for index, (name, curves) in enumerate(runs.items()):
        if len(curves) != 2:
            raise ValueError(f"run {name!r} must be a pair (train_losses, test_losses), got {len(curves)} items")
        train, test = (_as_numpy(c, float) for c in curves)
        color = f"C{index}"
        ax.plot(range(1, len(train) + 1), train, color=color, label=f"{name}: training")
        if len(test):
            ax.plot(range(1, len(test) + 1), test, color=color, ls="--",
                    label=f"{name}: {test_label} (last {test[-1]:.4f})")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole numbers
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.set_title(f"Training and {test_label} losses")
    ax.legend(fontsize=8)
    return fig
