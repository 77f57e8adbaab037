"""Sinusoidal positional encoding: its waves, its table, shifts as rotations, and distances."""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from ..checks import check_positive_int
from ._arrays import _as_2d

__all__ = ["sinusoids", "encoding_heatmap", "relative_shift", "position_distances"]


def _as_table(table, name="table"):
    """The encoding as a ``(max_len, d_model)`` float array (a ``(1, max_len, d_model)`` buffer too)."""
    return _as_2d(table, name, "(max_len, d_model)")


def _integer_ticks(axis):
    """Positions are whole numbers: tick an axis at integers only."""
    axis.set_major_locator(MaxNLocator(integer=True))


def _check_dims(dims, d_model):
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise ValueError(f"dimensions must be in 0..{d_model - 1}, got {bad}")


def sinusoids(table, dims=(0, 1, 2, 3)):
    """One panel per chosen dimension: its value against the position (a sine or a cosine
    whose frequency drops as the dimension grows). Returns the Figure."""
    table = _as_table(table)
    dims = list(dims)
    _check_dims(dims, table.shape[1])
    positions = np.arange(table.shape[0])
    fig, axes = plt.subplots(len(dims), 1, figsize=(7, 1.3 * len(dims) + 0.6), sharex=True,
                             squeeze=False, layout="constrained")
    for ax, dim in zip(axes[:, 0], dims):
        ax.plot(positions, table[:, dim], color="tab:blue" if dim % 2 == 0 else "tab:orange")
        ax.scatter(positions, table[:, dim], s=8, color="black", zorder=3)
        ax.set_ylim(-1.15, 1.15)
        ax.set_ylabel(f"dim {dim}\n({'sin' if dim % 2 == 0 else 'cos'})")
    axes[-1, 0].set_xlabel("position")
    _integer_ticks(axes[-1, 0].xaxis)  # the panels share the x axis
    axes[0, 0].set_title("each dimension is a wave over the positions")
    return fig


def encoding_heatmap(table):
    """The whole table as a heatmap: rows are positions, columns are dimensions. Returns the Figure."""
    table = _as_table(table)
    max_len, d_model = table.shape
    fig, ax = plt.subplots(figsize=(2.5 + 0.35 * d_model, 1.5 + 0.12 * max_len), layout="constrained")
    image = ax.imshow(table, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(d_model))
    _integer_ticks(ax.yaxis)
    ax.set_xlabel("dimension")
    ax.set_ylabel("position")
    ax.set_title("positional encoding")
    fig.colorbar(image, ax=ax, label="value (red +, blue -)")
    return fig


def relative_shift(table, pairs=(0, 1), shift=1, starts=(0, 3, 6)):
    """Each (sin, cos) dimension pair traces a circle; moving ``shift`` positions ahead is the
    same rotation wherever you start.

    One panel per index in ``pairs`` (pair ``i`` is dimensions ``2i`` and ``2i + 1``): every
    position is a point ``(sin, cos)``, numbered, and an arrow goes from each position in
    ``starts`` to the position ``shift`` further on. Returns the Figure.
    """
    table = _as_table(table)
    max_len, d_model = table.shape
    pairs = list(pairs)
    _check_dims([2 * p + 1 for p in pairs], d_model)
    check_positive_int("shift", shift)
    bad = [t for t in starts if not 0 <= t < max_len - shift]
    if bad:
        raise ValueError(f"starts must be in 0..{max_len - shift - 1} so that start + shift is a position, got {bad}")
    fig, axes = plt.subplots(1, len(pairs), figsize=(3.6 * len(pairs), 3.8), squeeze=False, layout="constrained")
    circle = np.linspace(0, 2 * np.pi, 200)
    for ax, pair in zip(axes[0], pairs):
        sines, cosines = table[:, 2 * pair], table[:, 2 * pair + 1]
        ax.plot(np.sin(circle), np.cos(circle), color="lightgray", lw=1, zorder=0)
        ax.scatter(sines, cosines, s=14, color="tab:blue")
        for position, (x, y) in enumerate(zip(sines, cosines)):
            ax.annotate(str(position), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
        for start in starts:
            ax.annotate("", xy=(sines[start + shift], cosines[start + shift]), xytext=(sines[start], cosines[start]),
                        arrowprops=dict(arrowstyle="->", color="tab:red", lw=1.5))
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
        ax.set_aspect("equal")
        ax.set_xlabel(f"dim {2 * pair} (sin)")
        ax.set_ylabel(f"dim {2 * pair + 1} (cos)")
        ax.set_title(f"pair {pair}: +{shift} position{'' if shift == 1 else 's'} = same rotation", fontsize=10)
    return fig


def position_distances(table, references=(0, 5, 10)):
    """Euclidean distances between the encodings of every two positions (left) and from a few
    reference positions to all the others (right).

    The distance between positions ``s`` and ``t`` depends only on ``t - s`` (every diagonal of
    the heatmap is constant): the encoding tells the model how far apart two elements are. It
    does not grow steadily with the offset, though: the fastest (sin, cos) pair turns one
    radian per position and comes back near its start every 2π ≈ 6.3 positions.
    Returns the Figure."""
    table = _as_table(table)
    max_len = table.shape[0]
    bad = [r for r in references if not 0 <= r < max_len]
    if bad:
        raise ValueError(f"references must be in 0..{max_len - 1}, got {bad}")
    distances = np.linalg.norm(table[:, None, :] - table[None, :, :], axis=-1)  # (max_len, max_len)
    fig, (heat_ax, line_ax) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    image = heat_ax.imshow(distances, cmap="magma")
    _integer_ticks(heat_ax.xaxis)
    _integer_ticks(heat_ax.yaxis)
    heat_ax.set_xlabel("position")
    heat_ax.set_ylabel("position")
    heat_ax.set_title("distance between two positions")
    fig.colorbar(image, ax=heat_ax, label="distance")
    for reference in references:
        line_ax.plot(range(max_len), distances[reference], marker=".", label=f"from position {reference}")
    _integer_ticks(line_ax.xaxis)
    line_ax.set_xlabel("position")
    line_ax.set_ylabel("distance")
    line_ax.set_title("distance from a few positions")
    line_ax.legend(fontsize=8)
    return fig
