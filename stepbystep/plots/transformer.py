"""The whole Transformer: its data flow, losses side by side, and its three kinds of attention.

* ``loss_comparison``: one row per loss (a mode, a model or a baseline): bars on a linear
  axis, points on a log axis, draws shown as dots;
* ``transformer_attention``: encoder self-, decoder self- and cross-attention of a few
  sequences, every head, next to the sequence's corners.
"""
import numbers
import textwrap

import matplotlib.pyplot as plt
import numpy as np

from ..checks import check_instance
from ._arrays import _as_numpy
from .attention import _draw_map
from .sequences import _square_axes

__all__ = ["loss_comparison", "transformer_attention"]



# ----------------------------------------------------------------------------- losses side by side
def loss_comparison(losses, title=None, xlabel="loss", log=False):
    """Losses side by side, one row each: ``losses`` maps a label to a float or to several floats.

    On a linear axis a single value is one bar from zero; several values (e.g. the same batch
    under several dropout draws) give a bar at their mean with each value drawn as a dot.
    ``log=True`` uses a log scale, for losses of different magnitudes, and draws each mean as a
    point instead of a bar: a log axis has no zero, so the length of a bar on it would depend
    only on where the axis happens to start. Each row is labelled with its value; a row of
    draws marks its mean with a black tick, labelled above the row.
    Returns the Figure.
    """
    check_instance("losses", losses, dict, "a dict of label -> loss(es)")
    if not losses:
        raise ValueError("losses must be a non-empty dict of label -> loss(es), got an empty dict")
    values = {}
    for label, value in losses.items():
        array = np.atleast_1d(_as_numpy(value, float))
        if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)):
            raise ValueError(f"the loss(es) of {label!r} must be finite numbers, got {value!r}")
        if log and np.any(array <= 0):
            raise ValueError(f"a log scale needs positive losses; {label!r} has {array.min()}")
        values[label] = array
    labels = list(values)
    positions = np.arange(len(labels))[::-1]  # the first label on top
    means = np.array([values[label].mean() for label in labels])
    colors = [f"C{i}" for i in range(len(labels))]
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.55 * len(labels)), layout="constrained")
    if log:
        ax.grid(axis="x", which="both", color="0.9", lw=0.8)
        ax.set_axisbelow(True)
        ax.scatter(means, positions, s=60, color=colors, zorder=3)
    else:
        ax.barh(positions, means, height=0.6, color=colors, alpha=0.6)
    for position, label, mean in zip(positions, labels, means):
        draws = values[label]
        if draws.size > 1:
            offsets = np.linspace(-0.2, 0.2, draws.size)  # spread the dots over the row's height
            ax.scatter(draws, position + offsets, color="black", s=10, zorder=4)
            ax.plot([mean, mean], [position - 0.32, position + 0.32], color="black", lw=2, zorder=5)
            # above the row, from the mean's tick: beside the largest dot it would read as that dot's value
            ax.annotate(f"mean of the {draws.size} dots (black tick): {mean:.4f}", (mean, position + 0.34),
                        va="bottom", ha="left", fontsize=8)
        else:
            ax.annotate(f"{mean:.4f}", (mean, position), xytext=(8, 0), textcoords="offset points",
                        va="center", fontsize=8)
    largest = max(float(v.max()) for v in values.values())
    if log:
        ax.set_xscale("log")
        smallest = min(float(v.min()) for v in values.values())
        ax.set_xlim(smallest / 1.5, largest * 4.0)  # room for the labels
        ax.set_ylim(positions.min() - 0.6, positions.max() + 0.6)
    else:
        ax.set_xlim(0, largest * 1.25)  # room for the labels
        ax.set_ylim(positions.min() - 0.6, positions.max() + 0.85)  # room above the top row
    ax.set_yticks(positions, [textwrap.fill(label, 24) for label in labels])  # long labels on two lines: a wider plot
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title)
    return fig


# ----------------------------------------------------------------------------- attention side by side
def _check_alphas(name, alphas, n_heads=None):
    alphas = _as_numpy(alphas, float)
    if alphas.ndim != 4:
        raise ValueError(f"{name} weights must be (N, n_heads, L_q, L_k), got shape {alphas.shape}")
    if n_heads is not None and alphas.shape[1] != n_heads:
        raise ValueError(f"{name} weights have {alphas.shape[1]} heads, the encoder's have {n_heads}")
    return alphas


def _check_shape(name, values, shape):
    values = _as_numpy(values, float)
    if values.shape != shape:
        raise ValueError(f"{name} should have shape {shape} to match the encoder weights, got {values.shape}")
    return values


def _corner_panel(ax, index, source, target, predicted):
    """One sequence in the plane: source corners (numbered), target corners and predictions."""
    _square_axes(ax, f"#{index}")
    ax.scatter(*source.T, color="tab:blue", s=25)
    numbered = source
    if target is not None:
        ax.scatter(*target.T, facecolors="none", edgecolors="tab:green", s=50, lw=1.5)
        numbered = np.concatenate([source, target])  # (L_s + L_t, 2)
    if predicted is not None:
        ax.scatter(*predicted.T, color="tab:red", marker="x", s=35)
    for order, (x, y) in enumerate(numbered):
        ax.annotate(str(order), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)


def transformer_attention(encoder, decoder, cross, source, target=None, predicted=None, indices=(0, 1, 2),
                          layer=None):
    """Encoder self-, decoder self- and cross-attention of a few sequences, every head.

    One row per sequence in ``indices``: its corners in the plane (source numbered from 0,
    target circled, prediction as crosses), then one map per head for each kind of attention.

    Args:
        encoder: encoder self-attention weights ``(N, h, L_s, L_s)``.
        decoder: decoder self-attention weights ``(N, h, L_t, L_t)``.
        cross: cross-attention weights ``(N, h, L_t, L_s)``.
        source: ``(N, L_s, 2)``; ``target`` and ``predicted``: optional ``(N, L_t, 2)``.
        indices: which sequences to draw.
        layer: a name for the layer the weights come from, shown in the group titles.

    Labels assume greedy decoding (weights kept after ``predict``): the source corners are
    ``x_0 ... x_{L_s-1}``; the decoder reads the last source corner, then its own predictions
    ``x̂_{L_s} ...``; each decoder row is labelled with what it reads and what it predicts
    (``x_1 → x̂_2``). Returns the Figure.
    """
    encoder = _check_alphas("encoder", encoder)
    n, n_heads, source_len = encoder.shape[:3]
    decoder = _check_alphas("decoder", decoder, n_heads)
    cross = _check_alphas("cross", cross, n_heads)
    target_len = decoder.shape[2]
    _check_shape("decoder", decoder, (n, n_heads, target_len, target_len))
    _check_shape("cross", cross, (n, n_heads, target_len, source_len))
    source = _check_shape("source", source, (n, source_len, 2))
    target = None if target is None else _check_shape("target", target, (n, target_len, 2))
    predicted = None if predicted is None else _check_shape("predicted", predicted, (n, target_len, 2))
    indices = list(indices)
    if not indices or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) and 0 <= i < n
                              for i in indices):
        raise ValueError(f"indices must be a non-empty list of sequence numbers in [0, {n}), got {indices}")

    source_labels = [f"$x_{i}$" for i in range(source_len)]
    decoder_labels = [f"$x_{source_len - 1}$"] + [f"$\\hat{{x}}_{source_len + i}$" for i in range(target_len - 1)]
    # a decoder row is a position: the input it reads -> the corner it predicts
    predicts = [f"$\\hat{{x}}_{source_len + i}$" for i in range(target_len)]
    row_labels = [f"{read[:-1]} \\to {made[1:]}" for read, made in zip(decoder_labels, predicts)]
    kinds = (
        ("encoder self-attention", encoder, source_labels, source_labels, "source corner", "source corner"),
        ("decoder self-attention (masked)", decoder, row_labels, decoder_labels, "input → prediction",
         "decoder input"),
        ("cross-attention", cross, row_labels, source_labels, "input → prediction", "source corner"),
    )
    n_rows = len(indices)
    fig = plt.figure(figsize=(3.4 + 3 * 1.25 * n_heads, 0.8 + 1.55 * n_rows), layout="constrained")
    corner_fig, *map_figs = fig.subfigures(1, 4, width_ratios=[1.2, n_heads, n_heads + 0.5, n_heads + 1.0],
                                           wspace=0.02)
    corner_axes = corner_fig.subplots(n_rows, 1, squeeze=False)[:, 0]
    corner_fig.suptitle("corners", fontsize=10)
    for ax, index in zip(corner_axes, indices):
        _corner_panel(ax, index, source[index], None if target is None else target[index],
                      None if predicted is None else predicted[index])
    suffix = f", {layer}" if layer else ""
    for subfig, (title, alphas, q_labels, k_labels, q_name, k_name) in zip(map_figs, kinds):
        axes = subfig.subplots(n_rows, n_heads, squeeze=False)
        for row, index in enumerate(indices):
            for head in range(n_heads):
                ax = axes[row, head]
                image = _draw_map(ax, alphas[index, head], q_labels, k_labels,
                                  f"head {head}" if row == 0 else None, annotate=True)
                ax.set_xlabel(k_name if row == n_rows - 1 else "", fontsize=8)
                ax.set_ylabel(q_name if head == 0 else "", fontsize=8)
                if head > 0:  # the rows are the same for every head: label them once, on the left
                    ax.tick_params(axis="y", labelleft=False)
        subfig.suptitle(title + suffix, fontsize=10)
    fig.colorbar(image, ax=list(axes.flat), fraction=0.05, pad=0.03, label="weight")
    return fig
