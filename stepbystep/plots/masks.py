"""Attention masks drawn as grids, alone or beside the weights they produce."""
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from ..checks import check_non_negative_int
from ._arrays import _as_numpy
from ._heatmaps import MASK, WEIGHTS, heatmap
from .attention import attention_maps

__all__ = ["mask_map", "mask_and_weights", "padded_attention_maps"]


def _as_square(name, values):
    """A ``(L_q, L_k)`` array from ``(L_q, L_k)`` or a ``(1, L_q, L_k)`` mask."""
    values = _as_numpy(values)
    if values.ndim == 3 and values.shape[0] == 1:
        values = values[0]
    if values.ndim != 2:
        raise ValueError(f"{name} must be of shape (L_q, L_k) or (1, L_q, L_k), got {values.shape}")
    return values


def _highlight_row(ax, row, n_k):
    ax.add_patch(Rectangle((0, row), n_k, 1, fill=False, edgecolor="tab:orange", lw=3))


def _draw_mask(ax, mask, title):
    """The keep-mask ``(L_q, L_k)``, each cell written 1 (may attend) or 0 (blocked)."""
    heatmap(ax, mask.astype(int), MASK, annot=mask.size <= 144, fmt="d", square=True)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    ax.set_title(title)


def mask_map(mask, title="mask (1 = may attend)", ax=None):
    """Draw a keep-mask ``(L_q, L_k)`` or ``(1, L_q, L_k)``: light cells may be attended to.

    Returns the Figure.
    """
    mask = _as_square("mask", mask).astype(bool)
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.4 * mask.shape[1], 0.8 + 0.4 * mask.shape[0]),
                               layout="constrained")
    else:
        fig = ax.figure
    _draw_mask(ax, mask, title)
    return fig


def mask_and_weights(mask, weights, query_row=None, fig=None):
    """The mask and the attention weights it produces, side by side.

    ``mask`` ``(L_q, L_k)`` or ``(1, L_q, L_k)`` (``True`` = may attend) and ``weights`` of the
    same ``(L_q, L_k)`` shape. ``query_row`` outlines one query's row in both panels, and the
    weights panel's title reports that row's weights. Pass ``fig`` to redraw an existing
    figure in place (a widget does); otherwise a new one is made. Returns the Figure.
    """
    mask = _as_square("mask", mask).astype(bool)
    weights = _as_square("weights", weights).astype(float)
    if mask.shape != weights.shape:
        raise ValueError(f"mask and weights must have the same shape, got {mask.shape} and {weights.shape}")
    n_q, n_k = weights.shape
    if query_row is not None:
        check_non_negative_int("query_row", query_row)
        if query_row >= n_q:
            raise ValueError(f"query_row must be in 0..{n_q - 1}, got {query_row}")
    if fig is None:
        fig = plt.figure(figsize=(8.5, 3.8), layout="constrained")
    else:
        fig.clear()
    mask_ax, weights_ax = fig.subplots(1, 2)
    _draw_mask(mask_ax, mask, "mask (1 = may attend)")
    image = heatmap(weights_ax, weights, WEIGHTS, annot=weights.size <= 144, fontsize=7, square=True)
    weights_ax.set_xlabel("key")
    weights_ax.set_ylabel("query")
    weights_ax.set_title("attention weights")
    fig.colorbar(image, ax=weights_ax, fraction=0.046, pad=0.04, label="attention weight")
    if query_row is not None:
        _highlight_row(mask_ax, query_row, n_k)
        _highlight_row(weights_ax, query_row, n_k)
        row = weights[query_row]
        weights_ax.set_title(f"weights of query {query_row}: sum {row.sum():.2f}, "
                             f"{int(mask[query_row].sum())} keys visible", fontsize=10)
    return fig


def padded_attention_maps(weights, lengths, titles=None, suptitle=None):
    """One head's weights ``(N, L, L)`` over ``N`` padded sequences, the padded query rows greyed.

    ``lengths`` ``(N,)``: each sequence's real length. The rows of padded queries are hatched
    grey: their weights are computed but their outputs are ignored downstream; the padded key
    columns show the zeros the source mask gives them. Returns the Figure.
    """
    weights = _as_numpy(weights, float)
    lengths = [int(n) for n in _as_numpy(lengths).reshape(-1)]
    if weights.ndim != 3 or weights.shape[1] != weights.shape[2]:
        raise ValueError(f"weights must be of shape (N, L, L), got {weights.shape}")
    size = weights.shape[1]
    if len(lengths) != weights.shape[0] or not all(1 <= n <= size for n in lengths):
        raise ValueError(f"lengths must be {weights.shape[0]} lengths between 1 and {size}, got {lengths}")
    note = "hatched rows: padded queries (computed, then ignored)"
    fig = attention_maps(weights, titles=titles, suptitle=f"{suptitle}\n{note}" if suptitle else note)
    maps = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    for ax, length in zip(maps, lengths):
        for row in range(length, size):
            ax.add_patch(Rectangle((0, row), size, 1, facecolor="lightgrey", edgecolor="dimgrey", hatch="//",
                                   alpha=0.9, zorder=4))
    return fig
