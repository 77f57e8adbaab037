"""Attention weights drawn as heatmaps: one map, or a grid of maps (heads or sequences)."""
import math

import matplotlib.pyplot as plt

from ._arrays import _as_numpy
from ._heatmaps import WEIGHTS, heatmap

__all__ = ["attention_map", "attention_maps"]


def _draw_map(ax, weights, query_labels, key_labels, title, annotate):
    """Draw one ``(L_q, L_k)`` map on ``ax``: rows are queries, columns are keys. Returns the mesh."""
    image = heatmap(ax, weights, WEIGHTS, annot=annotate, xticklabels=key_labels, yticklabels=query_labels)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if title:
        ax.set_title(title)
    return image


def attention_map(weights, query_labels=None, key_labels=None, title=None, annotate=None, ax=None):
    """Heatmap of one attention matrix ``(L_q, L_k)``: how much each query reads each key.

    Values are drawn on a fixed 0-1 colour scale so maps can be compared by eye; cells are
    annotated with their weight when the map is small (or when ``annotate=True``).
    Returns the Figure.
    """
    weights = _as_numpy(weights, float)
    if weights.ndim != 2:
        raise ValueError(f"weights must be of shape (L_q, L_k), got {weights.shape}")
    if annotate is None:
        annotate = weights.size <= 64
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.5 * weights.shape[1], 0.8 + 0.45 * weights.shape[0]))
    else:
        fig = ax.figure
    image = _draw_map(ax, weights, query_labels, key_labels, title, annotate)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    return fig


def attention_maps(weights, titles=None, query_labels=None, key_labels=None, n_cols=4,
                   annotate=None, suptitle=None):
    """A grid of attention maps, one per leading index of ``weights`` ``(n_maps, L_q, L_k)``.

    Use it for the heads of one sequence (``alphas[0]`` of shape ``(n_heads, L_q, L_k)``)
    or one head across several sequences. Returns the Figure.
    """
    weights = _as_numpy(weights, float)
    if weights.ndim != 3:
        raise ValueError(f"weights must be of shape (n_maps, L_q, L_k), got {weights.shape}")
    n_maps, n_q, n_k = weights.shape
    if titles is not None and len(titles) != n_maps:
        raise ValueError(f"titles must be {n_maps} strings, one per map, got {len(titles)}")
    if annotate is None:
        annotate = n_q * n_k <= 36
    n_cols = min(n_cols, n_maps)
    n_rows = math.ceil(n_maps / n_cols)
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(0.6 + (0.5 + 0.45 * n_k) * n_cols, 0.6 + (0.6 + 0.4 * n_q) * n_rows),
        squeeze=False, layout="constrained",
    )
    used, spare = list(axes.flat[:n_maps]), axes.flat[n_maps:]
    for index, ax in enumerate(used):
        title = titles[index] if titles is not None else None
        image = _draw_map(ax, weights[index], query_labels, key_labels, title, annotate)
    for ax in spare:
        ax.remove()
    fig.colorbar(image, ax=used, fraction=0.03, pad=0.02, label="attention weight")
    if suptitle:
        fig.suptitle(suptitle)
    return fig
