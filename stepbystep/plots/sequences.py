"""Square-corner sequences: the data, and predictions against targets."""
import math

import matplotlib.pyplot as plt
import numpy as np

from ._arrays import _as_numpy

__all__ = ["square_sequences", "sequence_predictions"]

_CORNERS = np.array([[-1, -1], [-1, 1], [1, 1], [1, -1], [-1, -1]])  # closed outline


def _grid(n, n_cols, cell=2.4):
    n_cols = min(n_cols, n)
    n_rows = math.ceil(n / n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(cell * n_cols, cell * n_rows),
                             squeeze=False, layout="constrained")
    return fig, axes.flat


def _square_axes(ax, title):
    ax.plot(_CORNERS[:, 0], _CORNERS[:, 1], color="lightgray", lw=1, zorder=0)
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.6, 1.6)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)


def square_sequences(sequences, directions=None, n=8, n_cols=4):
    """Draw the first ``n`` sequences ``(N, L, 2)``: points numbered in order along the path.

    ``directions`` (0 = counter-clockwise, 1 = clockwise) goes into each title.
    Returns the Figure.
    """
    sequences = _as_numpy(sequences, float)
    if sequences.ndim != 3 or sequences.shape[-1] != 2:
        raise ValueError(f"expected sequences of shape (N, L, 2), got {sequences.shape}")
    n = min(n, len(sequences))
    fig, axes = _grid(n, n_cols)
    for index, ax in zip(range(n), axes):
        points = sequences[index]
        title = f"#{index}"
        if directions is not None:
            title += " clockwise" if int(directions[index]) == 1 else " counter-clockwise"
        _square_axes(ax, title)
        ax.plot(points[:, 0], points[:, 1], color="tab:blue", lw=1, alpha=0.5)
        ax.scatter(points[:, 0], points[:, 1], color="tab:blue", s=25)
        for order, (x, y) in enumerate(points):
            ax.annotate(str(order), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    for ax in axes:
        ax.remove()
    return fig


def sequence_predictions(source, target, predicted=None, n=8, n_cols=4, joins=True, numbered=False):
    """Source corners, true target corners and (optionally) predicted ones, one panel each; the
    corners are numbered in the order the square is travelled (source 0, 1, ..., then target),
    and, with ``joins``, a thin line joins each prediction to the target corner it predicts
    (leave them out when the predictions sit on their corners: the lines hide under the markers).
    With ``numbered``, each prediction carries its corner's number too, in red, for predictions
    that crowd one side of the square, where the lines overlap.

    ``source`` ``(N, L_s, 2)``, ``target`` and ``predicted`` ``(N, L_t, 2)``. Returns the Figure.
    """
    source, target = _as_numpy(source, float), _as_numpy(target, float)
    if source.ndim != 3 or target.ndim != 3 or source.shape[-1] != 2 or target.shape[-1] != 2:
        raise ValueError(
            f"expected source (N, L_s, 2) and target (N, L_t, 2), got {source.shape} and {target.shape}"
        )
    if predicted is not None:
        predicted = _as_numpy(predicted, float)
        if predicted.shape != target.shape:
            raise ValueError(f"predicted must match target's shape {target.shape}, got {predicted.shape}")
    n = min(n, len(source))
    fig, axes = _grid(n, n_cols)
    for index, ax in zip(range(n), axes):
        _square_axes(ax, f"#{index}")
        ax.scatter(*source[index].T, color="tab:blue", s=30, label="source")
        ax.scatter(*target[index].T, facecolors="none", edgecolors="tab:green", s=60, lw=1.5, label="target")
        if predicted is not None:
            ax.scatter(*predicted[index].T, color="tab:red", marker="x", s=40, label="predicted")
            for order, (guess, truth) in enumerate(zip(predicted[index], target[index]) if joins else ()):
                ax.plot([guess[0], truth[0]], [guess[1], truth[1]], color="tab:red", lw=0.8, ls=":", alpha=0.8,
                        label="prediction to its corner" if order == 0 else None)
            for order, guess in enumerate(predicted[index] if numbered else ()):  # alternate sides: crosses meet
                right = order % 2 == 0
                ax.annotate(str(source.shape[1] + order), guess, textcoords="offset points",
                            xytext=(4, -4) if right else (-4, 4), ha="left" if right else "right",
                            va="top" if right else "bottom", fontsize=7, color="tab:red")
        for order, (x, y) in enumerate(np.concatenate([source[index], target[index]])):  # outside the square,
            right, up = x >= 0, y >= 0  # away from the predictions, which fall between or inside the corners
            ax.annotate(str(order), (x, y), textcoords="offset points", xytext=(6 if right else -6, 5 if up else -5),
                        ha="left" if right else "right", va="bottom" if up else "top", fontsize=8)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8)
    for ax in axes:
        ax.remove()
    return fig
