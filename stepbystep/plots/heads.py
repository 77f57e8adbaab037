"""Multi-head attention figures: chunking d_model into heads, parameter counts, dropout, head maps."""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from ..checks import check_positive_int
from ._arrays import _as_numpy
from ._heatmaps import heatmap
from .attention import _draw_map

__all__ = ["head_chunks", "head_parameter_counts", "attention_dropout", "head_maps"]

_HEAD_COLORS = plt.get_cmap("tab10").colors


def _draw_matrix(ax, values, limit, first_column=0):
    """A small annotated heatmap of ``values`` ``(rows, cols)`` on a symmetric colour scale."""
    style = {"cmap": "coolwarm", "vmin": -limit, "vmax": limit}
    heatmap(ax, values, style, annot=True, fontsize=7,
            xticklabels=range(first_column, first_column + values.shape[1]))
    ax.set_ylabel("position")


def head_chunks(x, n_heads, name="x"):
    """How narrow heads chunk one sequence ``x`` ``(L, d_model)`` into ``(n_heads, L, d_k)``.

    Top: the whole ``(L, d_model)`` matrix, its features grouped into ``n_heads`` coloured blocks
    of ``d_k`` columns (``view(L, n_heads, d_k)``). Bottom: after ``transpose``, one ``(L, d_k)``
    matrix per head, framed in its block's colour; the numbers are the same, regrouped.
    ``name`` labels the matrix in the title (e.g. ``"Q"`` for projected queries).
    Returns the Figure.
    """
    x = _as_numpy(x, float)
    if x.ndim != 2:
        raise ValueError(f"x must be one sequence of shape (L, d_model), got {x.shape}")
    seq_len, d_model = x.shape
    check_positive_int("n_heads", n_heads)
    if d_model % n_heads != 0:
        raise ValueError(f"n_heads must be a positive divisor of d_model={d_model}, got {n_heads!r}")
    d_k = d_model // n_heads
    limit = max(float(np.abs(x).max()), 1e-6)
    fig = plt.figure(figsize=(max(4.0, 0.65 * d_model + 1.5), 1.6 + 0.7 * seq_len), layout="constrained")
    top, bottom = fig.subfigures(2, 1)
    whole = top.subplots()
    _draw_matrix(whole, x, limit)
    whole.set_xlabel("feature")
    whole.set_title(f"{name}: (L, d_model) = ({seq_len}, {d_model}), viewed as (L, n_heads, d_k) = "
                    f"({seq_len}, {n_heads}, {d_k})", fontsize=9)
    heads = np.atleast_1d(bottom.subplots(1, n_heads))
    for head, ax in enumerate(heads):
        color = _HEAD_COLORS[head % len(_HEAD_COLORS)]
        start = head * d_k
        whole.add_patch(Rectangle((start, 0), d_k, seq_len, fill=False, edgecolor=color, lw=3))
        _draw_matrix(ax, x[:, start:start + d_k], limit, first_column=start)
        ax.set_xlabel("feature")
        ax.set_title(f"head {head}: (L, d_k) = ({seq_len}, {d_k})", fontsize=9)
        for spine in ax.spines.values():  # the heatmap hides the frame: show it in the head's colour
            spine.set_visible(True)
            spine.set_edgecolor(color)
            spine.set_linewidth(3)
        if head > 0:
            ax.set_ylabel("")
    bottom.suptitle("after transpose: (n_heads, L, d_k), one matrix per head", fontsize=9)
    return fig


def head_parameter_counts(n_heads, wide, narrow, d_model=None):
    """Parameters of wide vs narrow multi-head attention against the number of heads.

    ``n_heads``, ``wide`` and ``narrow`` are equally long sequences (counts per head count). The
    head counts sit at their values on a numeric axis, so a count that grows linearly with the
    heads draws a straight line; every point is labelled with its count. Returns the Figure.
    """
    n_heads, wide, narrow = list(n_heads), list(wide), list(narrow)
    if not len(n_heads) == len(wide) == len(narrow):
        raise ValueError(
            f"n_heads, wide and narrow must be equally long, got {len(n_heads)}, {len(wide)} and {len(narrow)}"
        )
    fig, ax = plt.subplots(figsize=(6.0, 3.6), layout="constrained")
    for counts, label, marker, color, va in ((wide, "wide heads", "o", "tab:orange", "bottom"),
                                             (narrow, "narrow heads", "s", "tab:blue", "top")):
        ax.plot(n_heads, counts, marker=marker, color=color, label=label)
        for h, count in zip(n_heads, counts):
            ax.annotate(f"{count:,}", (h, count), xytext=(0, 5 if va == "bottom" else -5), textcoords="offset points",
                        ha="center", va=va, fontsize=7, color=color)
    ax.set_xticks(n_heads, [str(h) for h in n_heads])
    ax.set_ylim(bottom=0, top=1.12 * max(wide + narrow))
    ax.set_xlabel("number of heads")
    ax.set_ylabel("parameters")
    title = "parameters of multi-head attention"
    ax.set_title(title if d_model is None else f"{title}, d_model = {d_model}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)  # below the axes, off the lines
    return fig


def attention_dropout(weights, dropped, p):
    """One row of attention weights ``(L_k,)`` before dropout and after ``n_draws`` draws of it.

    ``dropped`` is ``(n_draws, L_k)``: each draw zeroes some weights and scales the survivors by
    ``1 / (1 - p)``, so the rows no longer sum to 1; each legend entry gives its row's sum, and
    a red × marks every weight a draw zeroed. Returns the Figure.
    """
    weights, dropped = _as_numpy(weights, float), _as_numpy(dropped, float)
    if dropped.ndim == 1:
        dropped = dropped[None]
    if weights.ndim != 1 or dropped.ndim != 2 or dropped.shape[1] != weights.shape[0]:
        raise ValueError(
            f"expected weights (L_k,) and dropped (n_draws, L_k), got {weights.shape} and {dropped.shape}"
        )
    rows = np.vstack([weights, dropped])  # (1 + n_draws, L_k)
    labels = ["before dropout"] + [f"draw {i + 1}" for i in range(len(dropped))]
    n_bars, n_keys = rows.shape
    width = 0.8 / n_bars
    fig, ax = plt.subplots(figsize=(1.5 + 0.9 * n_keys, 3.2), layout="constrained")
    zeroed_x, handles = [], []
    for index, (row, label) in enumerate(zip(rows, labels)):
        positions = np.arange(n_keys) + (index - (n_bars - 1) / 2) * width
        handles.append(ax.bar(positions, row, width=width, label=f"{label} (sum {row.sum():.2f})",
               color="black" if index == 0 else None))
        if index > 0:
            zeroed_x.extend(positions[(row == 0) & (weights != 0)])  # weights dropout set to 0
    if zeroed_x:
        handles.append(ax.scatter(zeroed_x, np.zeros(len(zeroed_x)), marker="x", color="red", s=40,
                                  zorder=3, label="zeroed by dropout"))
    ax.axhline(0.0, color="gray", lw=0.8)
    ax.set_xticks(range(n_keys))
    ax.set_xlabel("key")
    ax.set_ylabel("weight")
    ax.set_title(f"attention dropout, p = {p}: survivors scaled by 1/(1-p) = {1 / (1 - p):.2f}")
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, not over them
    return fig


def head_maps(weights, titles=None, n_cols=6, fig=None):
    """One attention map per head, in rows of ``n_cols``: ``weights`` ``(n_heads, L_q, L_k)``.

    Like ``attention_maps``, but it can redraw an existing figure in place (``fig``, cleared
    and resized for the new number of maps), which is what a widget needs. Returns the Figure.
    """
    weights = _as_numpy(weights, float)
    if weights.ndim != 3:
        raise ValueError(f"weights must be of shape (n_heads, L_q, L_k), got {weights.shape}")
    n_maps, n_q, n_k = weights.shape
    if titles is None:
        titles = [f"head {head}" for head in range(n_maps)]
    if len(titles) != n_maps:
        raise ValueError(f"titles must be {n_maps} strings, one per map, got {len(titles)}")
    n_cols = min(n_cols, n_maps)
    n_rows = -(-n_maps // n_cols)
    size = (1.0 + (0.6 + 0.4 * n_k) * n_cols, 0.4 + (0.6 + 0.35 * n_q) * n_rows)
    if fig is None:
        fig = plt.figure(figsize=size, layout="constrained")
    fig.clear()
    fig.set_size_inches(size)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    used = list(axes.flat[:n_maps])
    annotate = n_q * n_k <= 36
    for ax, head_weights, title in zip(used, weights, titles):
        image = _draw_map(ax, head_weights, None, None, title, annotate)
    for ax in axes.flat[n_maps:]:
        ax.remove()
    fig.colorbar(image, ax=used, fraction=0.03, pad=0.02, label="attention weight")
    return fig
