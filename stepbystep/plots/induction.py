"""Chapter 13's figures: the phase change, the two heads' maps, the scores over seeds, the
ablations, and a diagram of the two-layer circuit."""
import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ..checks import check_instance
from ._arrays import _as_numpy
from ._heatmaps import WEIGHTS

__all__ = ["phase_change", "induction_maps", "head_score_dots", "ablation_effects", "k_composition",
           "position_losses", "induction_circuit"]


def _moving_average(values, window):
    """The mean of the last ``window`` values at each step from ``window - 1`` on: ``(steps - window + 1,)``."""
    return np.convolve(values, np.ones(window) / window, mode="valid")


def phase_change(histories, drops, log_v, window=10):
    """Left: each seed's loss on the first half and on the repeat (mean of the last ``window`` steps),
    ln V dashed. Middle: its best layer-0 previous-token score on the probe set. Right: its best
    layer-1 induction score, and, dashed, the same with all of layer 0 switched off where the history
    has it (``"induction_layer0_off"``). Each seed's drop is a dot on each of its curves.
    ``histories``: ``train_on_repeats`` dicts (with probes); ``drops``: each seed's drop step
    (``None``: none). Returns the Figure."""
    check_instance("histories", histories, (list, tuple), "a list of train_on_repeats histories")
    fig, (ax_loss, ax_previous, ax_induction) = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")

    def curve(ax, steps, values, drop, label, **style):
        line, = ax.plot(steps, values, lw=1, alpha=0.8, label=label, **style)
        if drop is not None and steps[0] <= drop <= steps[-1]:
            ax.plot([drop], [np.interp(drop, steps, values)], "o", ms=4, color=line.get_color())

    for seed, (history, drop) in enumerate(zip(histories, drops)):
        first, repeat = (_as_numpy(history[key], float) for key in ("first", "repeat"))  # (steps,) each
        steps = np.arange(window - 1, first.size)
        curve(ax_loss, steps, _moving_average(first, window), drop, "first half" if seed == 0 else None, color="C0")
        curve(ax_loss, steps, _moving_average(repeat, window), drop, "repeat" if seed == 0 else None, color="C1")
        probe_steps = _as_numpy(history["probe_steps"], float)
        curve(ax_previous, probe_steps, _as_numpy(history["previous"], float)[:, 0].max(axis=1), drop,
              "best previous-token score, layer 0" if seed == 0 else None, color="C2")
        curve(ax_induction, probe_steps, _as_numpy(history["induction"], float)[:, 1].max(axis=1), drop,
              "best induction score, layer 1" if seed == 0 else None, color="C3")
        if "induction_layer0_off" in history:
            curve(ax_induction, probe_steps, _as_numpy(history["induction_layer0_off"], float), drop,
                  "the same, layer 0 switched off" if seed == 0 else None, color="C3", ls="--")
    ax_loss.axhline(log_v, color="grey", ls="--", lw=1)
    ax_loss.annotate("ln V", (1, log_v), xycoords=("axes fraction", "data"), xytext=(-4, -4),
                     textcoords="offset points", ha="right", va="top", fontsize=8, color="grey")
    ax_loss.set(xlabel="training step", ylabel=f"loss (mean of {window} steps)", ylim=(0, None),
                title="loss on each half, one line per seed")
    for ax, title in ((ax_previous, "layer 0: the previous token"), (ax_induction, "layer 1: induction")):
        ax.set(xlabel="training step", ylabel="score on the probe sequences", ylim=(0, 1.02), title=title)
    for ax in (ax_loss, ax_previous, ax_induction):
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1 if ax is ax_induction else 2, fontsize=8,
                  frameon=False)
    fig.suptitle("dots: each seed's drop (its repeat loss below ln V / 2)", fontsize=9)
    return fig


def induction_maps(maps, titles, length, tokens=None):
    """Attention maps ``[(L, L)]`` side by side, one colour scale (labelled), with the offsets 1
    and ``length - 1`` named in the titles' second line; ``tokens`` ``(L,)`` label the axes. Returns the Figure."""
    check_instance("maps", maps, (list, tuple), "a list of (L, L) attention maps")
    if len(maps) != len(titles) or not maps:
        raise ValueError(f"maps and titles must be non-empty and of one length, got {len(maps)} and {len(titles)}")
    fig, axes = plt.subplots(1, len(maps), figsize=(4.6 * len(maps) + 0.8, 4.6), layout="constrained",
                             squeeze=False)
    for ax, weights, title in zip(axes[0], maps, titles):
        weights = _as_numpy(weights, float)
        image = ax.imshow(weights, **WEIGHTS)
        ticks = np.arange(weights.shape[0])
        labels = ticks if tokens is None else [str(t) for t in _as_numpy(tokens, int)]
        ax.set_xticks(ticks, labels, fontsize=6, rotation=90)
        ax.set_yticks(ticks, labels, fontsize=6)
        ax.axhline(length - 0.5, color="white", lw=0.6, ls="--")  # where the repeat starts
        ax.axvline(length - 0.5, color="white", lw=0.6, ls="--")
        ax.set(xlabel="key (token id)", ylabel="query (token id)", title=title)
    fig.colorbar(image, ax=axes[0].tolist(), label="attention weight", shrink=0.8)
    return fig


def head_score_dots(panels, threshold=None, marked=None):
    """Each panel ``{title: scores (seeds, H)}``: a column per seed, each head drawn as its index,
    the seed's best head in bold; ``threshold`` dashed. In red: the heads ``marked`` ``{title: bool
    (seeds, H)}`` marks in that panel, or, in a panel it leaves out, each seed's best head. Returns the Figure."""
    check_instance("panels", panels, dict, "a dict of title -> scores (seeds, H)")
    marked = marked or {}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.8), layout="constrained",
                             squeeze=False, sharey=True)
    for ax, (title, scores) in zip(axes[0], panels.items()):
        scores = _as_numpy(scores, float)  # (seeds, H)
        red = _as_numpy(marked[title], bool) if title in marked else scores == scores.max(axis=1, keepdims=True)
        for seed, row in enumerate(scores):
            best = row.argmax()
            for head, value in enumerate(row):
                ax.text(seed + (head - (row.size - 1) / 2) * 0.8 / row.size, value, str(head), ha="center",
                        va="center", fontsize=11 if head == best else 9, fontweight="bold" if head == best else "normal",
                        color="C3" if red[seed, head] else "grey")
        ax.scatter(np.arange(len(scores)), np.full(len(scores), np.nan))  # sets the data limits' x range
        if threshold is not None:
            ax.axhline(threshold, color="grey", ls="--", lw=1)
            ax.annotate(f"threshold {threshold:g}", (0, threshold), xycoords=("axes fraction", "data"),
                        xytext=(4, 2), textcoords="offset points", ha="left", va="bottom", fontsize=7,
                        color="grey")
        ax.set(xlim=(-0.6, len(scores) - 0.4), ylim=(-0.03, 1.03), xlabel="seed", title=title)
        ax.set_xticks(range(len(scores)))
    axes[0][0].set_ylabel("score (each head drawn as its index)")
    return fig


def ablation_effects(single, in_circuit, groups, log_v):
    """Left: the rise of the repeat's loss with each head switched off, ``single`` ``(seeds, n_layers, H)``,
    filled where ``in_circuit`` (same shape, bool), hollow elsewhere. Right: ``groups``
    ``{name: repeat loss (seeds,)}``, dots per seed and a bar at the median (NaN: a seed without that
    group, left out), ln V dashed. Returns the Figure."""
    single, in_circuit = _as_numpy(single, float), _as_numpy(in_circuit, bool)
    if single.shape != in_circuit.shape or single.ndim != 3:
        raise ValueError(f"single and in_circuit must have one shape (seeds, n_layers, H), got {single.shape} "
                         f"and {in_circuit.shape}")
    seeds, n_layers, n_heads = single.shape
    fig, (ax_one, ax_groups) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained",
                                            gridspec_kw={"width_ratios": [1.3, 1]})
    columns = np.arange(n_layers * n_heads)
    offsets = np.linspace(-0.25, 0.25, seeds) if seeds > 1 else np.zeros(1)
    for seed in range(seeds):
        rises, circuit = single[seed].ravel(), in_circuit[seed].ravel()
        ax_one.scatter(columns[circuit] + offsets[seed], rises[circuit], color="C3", s=22, zorder=3,
                       label="a head of the circuit" if seed == 0 else None)
        ax_one.scatter(columns[~circuit] + offsets[seed], rises[~circuit], facecolors="none", edgecolors="grey",
                       s=22, zorder=3, label="another head" if seed == 0 else None)
    ax_one.axhline(0, color="black", lw=0.8)
    ax_one.set_xticks(columns, [f"L{layer}H{head}" for layer in range(n_layers) for head in range(n_heads)])
    ax_one.set(xlabel="head switched off (layer, head)", ylabel="rise of the repeat's loss",
               title="one head off at a time (dots: seeds)")
    ax_one.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8, frameon=False)
    for column, (name, values) in enumerate(groups.items()):
        values = _as_numpy(values, float)
        spread = np.linspace(-0.15, 0.15, values.size) if values.size > 1 else np.zeros(1)
        ax_groups.bar(column, np.nanmedian(values), color=f"C{column}", alpha=0.35, width=0.6)
        ax_groups.scatter(column + spread, values, color=f"C{column}", s=22, zorder=3)
    ax_groups.axhline(log_v, color="grey", ls="--", lw=1)
    ax_groups.annotate("ln V", (0, log_v), xycoords=("axes fraction", "data"), xytext=(4, 2),
                       textcoords="offset points", ha="left", va="bottom", fontsize=8, color="grey")
    ax_groups.set_xticks(range(len(groups)), [textwrap.fill(name, 14) for name in groups], fontsize=8)
    ax_groups.set(ylabel="loss on the repeat", ylim=(0, None), title="groups of heads off (bar: median)")
    return fig


def k_composition(scores, in_previous, circuit, random_level, title="QK circuit"):
    """Left: how much layer 1's queries, keys and values read of each layer-0 head's output, ``scores``
    ``(seeds, 3, H0, H1)`` from ``composition_scores``, averaged over layer 1's heads: a dot per seed
    and layer-0 head, filled where ``in_previous`` ``(seeds, H0)`` marks a previous-token head, with a
    bar at their median; ``random_level`` dashed. Right: one ``qk_circuit`` ``(V, V)`` as a heatmap,
    titled ``title``. Returns the Figure."""
    scores, in_previous, circuit = (_as_numpy(scores, float), _as_numpy(in_previous, bool),
                                    _as_numpy(circuit, float))
    if scores.ndim != 4 or scores.shape[1] != 3 or in_previous.shape != scores.shape[::2][:1] + scores.shape[2:3]:
        raise ValueError(f"scores must be (seeds, 3, H0, H1) and in_previous (seeds, H0), got {scores.shape} and "
                         f"{in_previous.shape}")
    fig, (ax_scores, ax_circuit) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained",
                                                gridspec_kw={"width_ratios": [1, 1.1]})
    read = scores.mean(axis=3)  # (seeds, 3, H0): averaged over layer 1's heads
    seeds = read.shape[0]
    offsets = np.linspace(-0.25, 0.25, seeds) if seeds > 1 else np.zeros(1)
    for column in range(3):
        ax_scores.bar(column, np.median(read[:, column][in_previous]), color="C3", alpha=0.3, width=0.6)
        for seed in range(seeds):
            mine = in_previous[seed]
            ax_scores.scatter(np.full(mine.sum(), column + offsets[seed]), read[seed, column][mine], color="C3",
                              s=20, zorder=3, label="a previous-token head" if column == seed == 0 else None)
            ax_scores.scatter(np.full((~mine).sum(), column + offsets[seed]), read[seed, column][~mine],
                              facecolors="none", edgecolors="grey", s=20, zorder=3,
                              label="another layer-0 head" if column == seed == 0 else None)
    ax_scores.axhline(random_level, color="grey", ls="--", lw=1, label="two random matrices")
    ax_scores.set_xticks(range(3), ["queries", "keys", "values"])
    ax_scores.set(xlabel="what layer 1 reads it with", ylabel="composition score", ylim=(0, None),
                  title="how much layer 1 reads of each layer-0 head\n(a dot per head and seed; bar: median of the "
                        "previous-token heads)")
    ax_scores.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=9, frameon=False)
    limit = np.abs(circuit).max()
    image = ax_circuit.imshow(circuit, cmap="RdBu_r", vmin=-limit, vmax=limit)
    fig.colorbar(image, ax=ax_circuit, label="score (query · key)", shrink=0.85)
    ax_circuit.set(xlabel="the token before the key (what the layer-0 head wrote)", ylabel="the query's token",
                   title=title)
    return fig


def position_losses(curves, length, log_v):
    """The loss at every position of sequences repeated after ``length`` tokens: ``curves``
    ``{name: (seeds, 2 · length - 1)}``, one thin line per seed and the median thick, ln V dashed,
    the start of the repeat dotted. Returns the Figure."""
    check_instance("curves", curves, dict, "a dict of name -> losses (seeds, 2 * length - 1)")
    fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
    for index, (name, losses) in enumerate(curves.items()):
        losses = _as_numpy(losses, float)  # (seeds, 2 · length - 1)
        if losses.ndim != 2 or losses.shape[1] != 2 * length - 1:
            raise ValueError(f"{name}: expected losses of shape (seeds, {2 * length - 1}), got {losses.shape}")
        positions = np.arange(1, 2 * length)  # the predicted token's position
        for seed_losses in losses:
            ax.plot(positions, seed_losses, color=f"C{index}", lw=0.7, alpha=0.5)
        ax.plot(positions, np.median(losses, axis=0), color=f"C{index}", lw=2, label=f"{name} (median)")
    ax.axhline(log_v, color="grey", ls="--", lw=1)
    ax.annotate("ln V", (0, log_v), xycoords=("axes fraction", "data"), xytext=(4, 2), textcoords="offset points",
                ha="left", va="bottom", fontsize=8, color="grey")
    ax.axvline(length, color="grey", ls=":", lw=1)
    ax.set(xlabel="position of the predicted token (dotted: the repeat starts)", ylabel="loss", ylim=(0, None),
           title="loss at each position, one thin line per seed")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=len(curves), fontsize=8, frameon=False)
    return fig


def _box(ax, x, y, text, color):
    half = max(0.32, 0.075 * len(text))  # wide enough for the text
    ax.add_patch(FancyBboxPatch((x - half, y - 0.22), 2 * half, 0.44, boxstyle="round,pad=0.02", fc=color,
                                ec="black", lw=0.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=10)


def _arrow(ax, start, end, color, text=None, rad=0.0):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=color, lw=1.4,
                                 connectionstyle=f"arc3,rad={rad}"))
    if text:
        ax.text((start[0] + end[0]) / 2, max(start[1], end[1]) + 0.55 + abs(rad), text, ha="center", fontsize=8,
                color=color)


def induction_circuit():
    """The two-layer induction circuit on ``… A B … A`` -> ``B``, drawn as boxes and arrows. Returns the Figure."""
    fig, ax = plt.subplots(figsize=(9, 3.6), layout="constrained")
    tokens = ["…", "A", "B", "…", "A"]
    xs = np.arange(len(tokens)) * 1.6
    for x, token in zip(xs, tokens):
        _box(ax, x, 0, token, "#f2f2f2")
    _box(ax, xs[2], 1.4, "B, after A", "#cfe3f5")
    _box(ax, xs[4], 2.8, "copies B", "#f9d3c4")
    _box(ax, xs[4] + 1.9, 2.8, "predicts B", "#e3f1d6")
    _arrow(ax, (xs[1] + 0.1, 0.25), (xs[2] - 0.2, 1.15), "C0", None)
    ax.text(xs[1] - 0.2, 0.95, "layer 0: previous-token head\n(B's query reads the key before it, A)", fontsize=8,
            color="C0", ha="right")
    _arrow(ax, (xs[2], 0.25), (xs[2], 1.15), "grey")
    _arrow(ax, (xs[4], 0.25), (xs[4], 2.55), "grey")
    _arrow(ax, (xs[2] + 0.5, 1.55), (xs[4] - 0.45, 2.75), "C3", None, rad=-0.15)
    ax.text(xs[2] + 0.3, 2.75, "layer 1: induction head (reads B's position)\n"
            "query 'A' matches the key 'after A' (K-composition);\nthe value, B, moves to the second A",
            fontsize=8, color="C3", ha="center", va="center")
    _arrow(ax, (xs[4] + 0.45, 2.8), (xs[4] + 1.3, 2.8), "black")
    ax.text(xs[0], -0.6, "positions →", fontsize=8, color="grey")
    ax.set(xlim=(-1.9, xs[-1] + 2.9), ylim=(-0.8, 3.4))
    ax.axis("off")
    return fig
