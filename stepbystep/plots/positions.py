"""Chapter 10's figures: four ways to tell positions apart, and how far each one carries."""
import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import MaxNLocator, NullLocator

from ._arrays import _as_numpy
from .positional import _as_table

__all__ = [
    "position_tables",
    "alibi_heads",
    "rope_rotation",
    "rope_scores",
    "length_generalization",
    "accuracy_by_position",
    "position_explorer_figure",
]

SCHEME_COLOURS = {"sinusoidal": "tab:blue", "learned": "tab:orange", "alibi": "tab:green", "rope": "tab:red",
                  "none": "tab:gray"}


def _cosine_similarity(table):
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    unit = table / np.maximum(norms, 1e-12)
    return unit @ unit.T  # (max_len, max_len)


def position_tables(learned, sinusoidal, trained_rows):
    """A trained learned table against the sinusoidal one: the tables (top) and the cosine
    similarity between every two positions' vectors (bottom).

    ``learned`` and ``sinusoidal`` ``(max_len, d_model)``; ``trained_rows``: how many rows
    training reached (a dashed line marks where the untrained rows start). Returns the Figure.
    """
    learned, sinusoidal = _as_table(learned, "learned"), _as_table(sinusoidal, "sinusoidal")
    if learned.shape != sinusoidal.shape:
        raise ValueError(f"learned and sinusoidal must have the same shape, got {learned.shape} and {sinusoidal.shape}")
    max_len = learned.shape[0]
    if isinstance(trained_rows, bool) or not isinstance(trained_rows, int) or not 0 < trained_rows <= max_len:
        raise ValueError(f"trained_rows must be an int in 1..{max_len}, got {trained_rows!r}")
    fig, axes = plt.subplots(2, 2, figsize=(10, 8), layout="constrained")
    for column, (name, table) in enumerate((("learned, after training", learned), ("sinusoidal", sinusoidal))):
        limit = np.abs(table).max()
        image = axes[0, column].imshow(table, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto",
                                       interpolation="nearest")
        axes[0, column].set_title(f"{name}: one row per position", fontsize=10)
        axes[0, column].set_xlabel("dimension")
        axes[0, column].set_ylabel("position")
        fig.colorbar(image, ax=axes[0, column], shrink=0.8, label="entry (red +, blue -)")
        similarity = axes[1, column].imshow(_cosine_similarity(table), cmap="viridis", vmin=-1, vmax=1,
                                            interpolation="nearest")
        axes[1, column].set_title("cosine similarity of two positions' vectors", fontsize=10)
        axes[1, column].set_xlabel("position")
        axes[1, column].set_ylabel("position")
        fig.colorbar(similarity, ax=axes[1, column], shrink=0.8, label="cosine similarity")
        if column == 0 and trained_rows < max_len:
            edge = trained_rows - 0.5
            axes[0, 0].axhline(edge, color="black", ls="--", lw=1)
            axes[0, 0].text(0, edge + 0.5, " never trained below", va="top", fontsize=8)
            axes[1, 0].axhline(edge, color="white", ls="--", lw=1)
            axes[1, 0].axvline(edge, color="white", ls="--", lw=1)
        for ax in axes[:, column]:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


def alibi_heads(bias, slopes=None, fig=None):
    """ALiBi's bias matrix per head: ``bias`` ``(n_heads, L, L)`` (``alibi_bias``), future masked.

    One heatmap per head, query rows and key columns, with the future (above the diagonal)
    grey because a causal model never reads it; ticks every 4 positions. ``slopes`` ``(n_heads,)`` label the panels.
    Returns the Figure.
    """
    bias = _as_numpy(bias, float)
    if bias.ndim != 3 or bias.shape[1] != bias.shape[2]:
        raise ValueError(f"bias must have shape (n_heads, L, L), got {bias.shape}")
    n_heads, length = bias.shape[0], bias.shape[1]
    columns = min(n_heads, 4)
    rows = math.ceil(n_heads / columns)
    if fig is None:
        fig = plt.figure(figsize=(2.6 * columns + 1, 2.5 * rows + 0.3), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).ravel()
    future = np.triu(np.ones((length, length), dtype=bool), k=1)
    lowest = bias[:, ~future].min()
    for head, ax in enumerate(axes):
        if head >= n_heads:
            ax.axis("off")
            continue
        ax.imshow(np.where(future, 1.0, np.nan), cmap="Greys", vmin=0, vmax=4, interpolation="nearest")  # grey future
        image = ax.imshow(np.ma.masked_array(bias[head], future), cmap="Greens_r", vmin=lowest, vmax=0,
                          interpolation="nearest")
        slope = "" if slopes is None else f": slope 1/{1 / float(slopes[head]):g}"
        ax.set_title(f"head {head}{slope}", fontsize=9)
        ticks = np.arange(0, length, 4)
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("query position")
    axes[0].set_xlabel("key position")
    fig.colorbar(image, ax=list(axes[:n_heads]), shrink=0.8, label="bias added to the score")
    return fig


def rope_rotation(rotary, vector, positions, pairs=(0, 1)):
    """How RoPE turns one vector as its position moves: one panel per pair of dimensions.

    ``rotary`` a ``RotaryEmbedding``; ``vector`` ``(d_head,)``; ``positions`` the positions to
    place it at. In each panel, the pair's two numbers at every position, numbered: the points
    lie on one circle (a rotation keeps the length), each turning by the pair's angle per step
    (pair 0 fastest). Returns the Figure.
    """
    vector = torch.as_tensor(vector, dtype=torch.float32)
    if vector.shape != (rotary.d_head,):
        raise ValueError(f"vector must have shape ({rotary.d_head},), got {tuple(vector.shape)}")
    pairs = list(pairs)
    bad = [p for p in pairs if not 0 <= p < rotary.d_head // 2]
    if bad:
        raise ValueError(f"pairs must be in 0..{rotary.d_head // 2 - 1}, got {bad}")
    positions = torch.as_tensor(list(positions), dtype=torch.long)
    rotated = rotary(vector.expand(len(positions), -1), positions).numpy()  # (P, d_head)
    fig, axes = plt.subplots(1, len(pairs), figsize=(3.7 * len(pairs), 3.8), squeeze=False, layout="constrained")
    circle = np.linspace(0, 2 * np.pi, 200)
    for ax, pair in zip(axes[0], pairs):
        a, b = rotated[:, 2 * pair], rotated[:, 2 * pair + 1]
        radius = float(np.hypot(a[0], b[0]))
        ax.plot(radius * np.cos(circle), radius * np.sin(circle), color="lightgray", lw=1, zorder=0)
        ax.plot(a, b, color="tab:red", lw=0.8, alpha=0.5)
        ax.scatter(a, b, s=16, color="tab:red", zorder=3)
        for position, x, y in zip(positions.tolist(), a, b):  # each number just outside its point
            angle = math.atan2(y, x)
            ax.annotate(str(position), (x, y), textcoords="offset points", fontsize=7, ha="center", va="center",
                        xytext=(9 * math.cos(angle), 9 * math.sin(angle)))
        ax.annotate("", xy=(a[0], b[0]), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="black"))
        theta = float(rotary.angles(torch.tensor(1))[pair])
        ax.set_title(f"pair {pair} (dims {2 * pair}, {2 * pair + 1}): {theta:.3g} rad per position", fontsize=9)
        limit = 1.3 * radius
        ax.set_xlim(-limit, limit)
        ax.set_ylim(-limit, limit)
        ax.set_aspect("equal")
        ax.set_xlabel(f"dim {2 * pair}")
        ax.set_ylabel(f"dim {2 * pair + 1}")
    return fig


def rope_scores(scores_by_start, distances, fig=None):
    """The RoPE score of one query and one key against their distance, from several starts.

    ``scores_by_start`` maps a label (e.g. "query at 0") to ``(D,)`` scores for ``distances``
    ``(D,)``. The curves lie on top of each other: the score depends on the distance only.
    Returns the Figure.
    """
    distances = _as_numpy(distances, float)
    if fig is None:
        fig = plt.figure(figsize=(7, 3.2), layout="constrained")
    ax = fig.add_subplot()
    styles = ["-", "--", ":", "-."]
    for index, (label, scores) in enumerate(scores_by_start.items()):
        scores = _as_numpy(scores, float)
        if scores.shape != distances.shape:
            raise ValueError(f"the scores for {label!r} must have the distances' shape {distances.shape}, "
                             f"got {scores.shape}")
        ax.plot(distances, scores, styles[index % len(styles)], lw=2.5 - 0.5 * index, label=label)
    ax.axhline(0, color="lightgray", lw=1, zorder=0)
    ax.set_xlabel("distance from query to key (positions)")
    ax.set_ylabel("score q·k after rotation")
    ax.set_title("RoPE: the same query and key, placed further and further apart", fontsize=10)
    ax.legend(fontsize=8)
    return fig


def _seed_values(accuracies):
    values = _as_numpy(accuracies, float)  # (seeds, lengths)
    if values.ndim != 2:
        raise ValueError(f"each scheme's accuracies must be (seeds, lengths), got shape {values.shape}")
    return values


def length_generalization(results, lengths, train_length, title=None):
    """Accuracy against the test length, one colour per scheme: a dot per seed, and a line
    through the medians.

    ``results`` maps a scheme to ``(seeds, lengths)`` accuracies; ``lengths`` the test lengths;
    a dotted line marks ``train_length``. Returns the Figure.
    """
    lengths = list(lengths)
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    offsets = np.linspace(-0.06, 0.06, max(len(results), 1))
    for offset, (scheme, accuracies) in zip(offsets, results.items()):
        values = _seed_values(accuracies)
        if values.shape[1] != len(lengths):
            raise ValueError(f"{scheme}: expected accuracies for {len(lengths)} lengths, got {values.shape[1]}")
        x = np.array(lengths, dtype=float) * (1 + offset)  # a small shift, so the schemes do not hide each other
        colour = SCHEME_COLOURS.get(scheme)
        ax.plot(x, np.median(values, axis=0), color=colour, lw=1.5, label=scheme)
        ax.scatter(np.tile(x, len(values)), values.ravel(), color=colour, s=16, alpha=0.8, zorder=3)
    ax.axvline(train_length, color="black", ls=":", lw=1)
    ax.text(train_length, 0.02, " training length", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(length) for length in lengths])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(0, 1.04)
    ax.set_xlabel("test length (tokens)")
    ax.set_ylabel("accuracy (all positions)")
    ax.set_title(title or "Trained on one length, tested on longer ones (dots: seeds; line: median)", fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def accuracy_by_position(by_position, train_length, chance=None):
    """Accuracy at each position of long test sequences, one line per scheme.

    ``by_position`` maps a scheme to ``(L,)`` accuracies (``NaN`` where nothing is counted);
    a dotted line marks ``train_length`` and a grey one the ``chance`` level. Returns the Figure.
    """
    fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
    for scheme, accuracy in by_position.items():
        accuracy = _as_numpy(accuracy, float)
        if accuracy.ndim != 1:
            raise ValueError(f"{scheme}: expected one accuracy per position (L,), got shape {accuracy.shape}")
        ax.plot(np.arange(len(accuracy)), accuracy, color=SCHEME_COLOURS.get(scheme), label=scheme, lw=1.5)
    ax.axvspan(-0.5, train_length - 0.5, color="lightgray", alpha=0.4, lw=0)
    ax.text(train_length / 2, 1.06, "trained positions", ha="center", fontsize=8)
    if chance is not None:
        ax.axhline(chance, color="gray", ls="--", lw=1)
        ax.text(-0.5, chance, " chance", ha="left", va="bottom", fontsize=8, color="gray")  # inside the
        # trained positions, where every line runs far above chance
    ax.set_ylim(0, 1.12)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("position in the test sequence")
    ax.set_ylabel("accuracy")
    ax.set_title("Where each scheme stops working", fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def position_explorer_figure(state, fig):
    """Draw ``position_explorer_state``'s dict on ``fig`` (cleared first): ALiBi's bias against
    the distance and the attention it gives (top), RoPE's score against the distance and its
    attention (bottom). Returns the Figure."""
    fig.clear()
    axes = fig.subplots(2, 2, width_ratios=[1.6, 1])
    distances = _as_numpy(state["distances"], float)
    bias_ax, alibi_map, score_ax, rope_map = axes[0, 0], axes[0, 1], axes[1, 0], axes[1, 1]
    bias_ax.plot(distances, _as_numpy(state["alibi_bias"], float), marker=".", color="tab:green")
    bias_ax.set_title(f"ALiBi head {state['head']}: slope {state['slope']:.4g}, bias = -slope × distance",
                      fontsize=9)
    bias_ax.set_ylabel("bias")
    bias_ax.set_xlabel("distance (positions)")
    score_ax.plot(distances, _as_numpy(state["rope_scores"], float), marker=".", color="tab:red")
    score_ax.set_title(f"RoPE, base {state['base']:.4g}: score of one vector with itself, moved", fontsize=9)
    score_ax.set_ylabel("score")
    score_ax.set_xlabel("distance (positions)")
    for ax, key, cmap, title in ((alibi_map, "alibi_attention", "Greens", "ALiBi attention (no content)"),
                                 (rope_map, "rope_attention", "Reds", "RoPE attention (one repeated vector)")):
        image = ax.imshow(_as_numpy(state[key], float), cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
        fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
        ax.set_title(title, fontsize=9)
        ticks = list(range(0, len(state[key]), 5))  # every 5th position: 0, 5, 10, ...
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        ax.set_ylabel("query position")
        ax.set_xlabel("key position")
    return fig
