"""Attention weights drawn as heatmaps: one map, or a grid of maps (heads or sequences)."""
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

__all__ = ["attention_map", "attention_maps"]


def _as_numpy(weights):
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    return np.asarray(weights, dtype=float)


def _draw_map(ax, weights, query_labels, key_labels, title, annotate):
    """Draw one ``(L_q, L_k)`` map on ``ax``: rows are queries, columns are keys."""
    n_q, n_k = weights.shape
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    if annotate:
        for i in range(n_q):
            for j in range(n_k):
                color = "black" if weights[i, j] > 0.6 else "white"
                ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center", color=color, fontsize=8)
    ax.set_xticks(range(n_k), key_labels if key_labels is not None else range(n_k))
    ax.set_yticks(range(n_q), query_labels if query_labels is not None else range(n_q))
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
    weights = _as_numpy(weights)
    if weights.ndim != 2:
        raise ValueError(f"attention_map expects weights of shape (L_q, L_k), got {weights.shape}")
    if annotate is None:
        annotate = weights.size <= 64
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.5 * weights.shape[1], 0.8 + 0.45 * weights.shape[0]))
    else:
        fig = ax.figure
    image = _draw_map(ax, weights, query_labels, key_labels, title, annotate)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return fig


def attention_maps(weights, titles=None, query_labels=None, key_labels=None, n_cols=4,
                   annotate=None, suptitle=None):
    """A grid of attention maps, one per leading index of ``weights`` ``(n_maps, L_q, L_k)``.

    Use it for the heads of one sequence (``alphas[0]`` of shape ``(n_heads, L_q, L_k)``)
    or one head across several sequences. Returns the Figure.
    """
    weights = _as_numpy(weights)
    if weights.ndim != 3:
        raise ValueError(f"attention_maps expects weights of shape (n_maps, L_q, L_k), got {weights.shape}")
    n_maps, n_q, n_k = weights.shape
    if titles is not None and len(titles) != n_maps:
        raise ValueError(f"got {len(titles)} titles for {n_maps} maps")
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
    fig.colorbar(image, ax=used, fraction=0.03, pad=0.02)
    if suptitle:
        fig.suptitle(suptitle)
    return fig
