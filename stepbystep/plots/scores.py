"""Dot-product scores: how their spread grows with d_k, and what that does to the softmax."""
import matplotlib.pyplot as plt
import numpy as np

from ..checks import check_instance
from ._arrays import _as_numpy

__all__ = ["score_variance", "softmax_rows"]


def score_variance(d_ks, unscaled, scaled):
    """Variance of ``q·k`` against ``d_k``, raw and divided by ``√d_k`` (log-log axes).

    ``d_ks``, ``unscaled`` and ``scaled`` are sequences of the same length: the dimensions
    tried and the measured variance of the scores at each. A dashed line marks variance 1.
    Returns the Figure.
    """
    d_ks, unscaled, scaled = _as_numpy(d_ks, float), _as_numpy(unscaled, float), _as_numpy(scaled, float)
    if not (d_ks.ndim == unscaled.ndim == scaled.ndim == 1) or not (len(d_ks) == len(unscaled) == len(scaled)):
        raise ValueError(
            "score_variance expects three 1-D sequences of the same length, got shapes "
            f"{d_ks.shape}, {unscaled.shape} and {scaled.shape}"
        )
    fig, ax = plt.subplots(figsize=(5, 3.5), layout="constrained")
    ax.plot(d_ks, unscaled, "o-", color="tab:red", label=r"$q \cdot k$")
    ax.plot(d_ks, scaled, "o-", color="tab:blue", label=r"$q \cdot k / \sqrt{d_k}$")
    ax.axhline(1.0, color="gray", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks(d_ks, [f"{d:g}" for d in d_ks])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel(r"$d_k$")
    ax.set_ylabel("variance of the scores")
    ax.set_title("Scaling keeps the scores' variance near 1")
    ax.legend()
    return fig


def softmax_rows(rows, key_labels=None):
    """Bar charts of softmax weights, one panel per row: e.g. one query's weights with and
    without scaling.

    ``rows`` maps a panel title to weights ``(L_k,)``. Returns the Figure.
    """
    check_instance("rows", rows, dict, "a dict of title -> weights")
    if not rows:
        raise ValueError("rows must be a non-empty dict of title -> weights, got an empty dict")
    weights = {title: _as_numpy(w, float) for title, w in rows.items()}
    for title, w in weights.items():
        if w.ndim != 1:
            raise ValueError(f"the weights of {title!r} must be 1-D weights (L_k,), got shape {w.shape}")
    fig, axes = plt.subplots(1, len(weights), figsize=(3.2 * len(weights), 2.8), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, (title, w) in zip(axes.flat, weights.items()):
        ax.bar(range(len(w)), w, color="tab:blue")
        ax.set_xticks(range(len(w)), key_labels if key_labels is not None else range(len(w)))
        ax.set_ylim(0, 1)
        ax.set_xlabel("key")
        ax.set_title(title, fontsize=10)
    axes.flat[0].set_ylabel("weight")
    return fig
