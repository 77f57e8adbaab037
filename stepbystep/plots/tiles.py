"""Chapter 14's figures: the online softmax block by block, the grid of tiles, and the memory."""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, NullLocator

from ._arrays import _as_numpy

__all__ = ["online_softmax_blocks", "plan_states", "tile_grid", "memory_by_length", "tiles_explorer_figure",
           "TILE_STATES"]

TILE_STATES = ("to do", "done", "current", "skipped")  # the codes 0-3 of a tile grid
_TILE_COLOURS = ListedColormap(["white", "tab:blue", "tab:orange", "lightgrey"])
_BLOCK_SHADES = ("#f2f2f2", "white")


def _shade_blocks(ax, length, block):
    for start in range(0, length, block):
        ax.axvspan(start - 0.5, min(start + block, length) - 0.5, color=_BLOCK_SHADES[(start // block) % 2], zorder=0)


def online_softmax_blocks(x, block, m, l):
    """A vector ``x`` ``(L,)`` read in blocks of ``block``, with the running max ``m`` and sum ``l``
    ``(n_blocks,)`` after each block (``online_softmax_steps``). Left: the values, one shaded band
    per block, and the running max drawn over the blocks read so far. Right: the running sum
    after each block, with the exact ``Σ exp(x - max)`` dashed. Returns the Figure.
    """
    x, m, l = _as_numpy(x, float), _as_numpy(m, float), _as_numpy(l, float)
    n_blocks = -(-len(x) // block)
    if x.ndim != 1 or m.shape != (n_blocks,) or l.shape != (n_blocks,):
        raise ValueError(f"x must be (L,) and m, l ({n_blocks},) for blocks of {block}, got {x.shape}, {m.shape}, {l.shape}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained", width_ratios=(1.6, 1))
    _shade_blocks(left, len(x), block)
    left.bar(np.arange(len(x)), x, color="tab:blue", width=0.7, label="x")
    for j, value in enumerate(m):
        end = min((j + 1) * block, len(x)) - 0.5
        left.hlines(value, -0.5, end, color="tab:red", lw=1.5, alpha=0.35 + 0.65 * (j + 1) / n_blocks,
                    label="running max after each block (its number)" if j == 0 else None)
        left.text(end, value, f" {j + 1}", color="tab:red", fontsize=11, fontweight="bold", va="bottom", ha="right")
    left.set_xlabel("position in x (shaded bands: blocks)")
    left.set_ylabel("value")
    left.set_title("the vector, block by block, and the running max", fontsize=10)
    left.set_xlim(-0.5, len(x) - 0.5)
    left.set_ylim(min(0.0, x.min()) - 0.5, max(x.max(), m.max()) * 1.25 + 0.5)
    left.legend(loc="upper left", fontsize=8, frameon=False, ncols=2)
    steps = np.arange(1, n_blocks + 1)
    right.plot(steps, l, "o-", color="tab:green", label="running sum l")
    right.axhline(np.exp(x - x.max()).sum(), color="black", ls="--", lw=1, label="Σ exp(x - max x) over the whole vector (two passes)")
    right.set_xlabel("blocks read")
    right.set_ylabel("running sum l")
    right.xaxis.set_major_locator(FixedLocator(steps))
    right.set_ylim(0, max(l.max(), np.exp(x - x.max()).sum()) * 1.35)
    right.set_title("the running sum, rescaled when the max grows", fontsize=10)
    right.legend(loc="upper left", fontsize=8, frameon=False)
    return fig


def plan_states(plan, l_k, block_k):
    """The codes of ``tile_grid`` for a ``tile_plan``: ``(n_q_blocks, n_k_blocks)``, 1 where the plan
    computes a tile, 3 where it skips one."""
    states = np.full((len(plan), -(-l_k // block_k)), 3)
    for row, (_, key_blocks) in enumerate(plan):
        for start, _ in key_blocks:
            states[row, start // block_k] = 1
    return states


def _draw_grid(ax, states, block_q, block_k, title):
    ax.imshow(states, cmap=_TILE_COLOURS, vmin=-0.5, vmax=3.5, interpolation="nearest", aspect="equal")
    n_q, n_k = states.shape
    ax.set_xticks(np.arange(n_k), [f"{j * block_k}" for j in range(n_k)], fontsize=7)
    ax.set_yticks(np.arange(n_q), [f"{i * block_q}" for i in range(n_q)], fontsize=7)
    ax.set_xticks(np.arange(n_k + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(n_q + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="black", lw=0.6)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("key block (first key)")
    ax.set_ylabel("query block (first query)")
    ax.set_title(title, fontsize=10)


def tile_grid(grids, block_q, block_k, fig=None):
    """Grids of tiles side by side: ``grids`` maps a title to an ``(n_q_blocks, n_k_blocks)`` array of
    codes, 0 to do, 1 done (computed), 2 current, 3 skipped (``TILE_STATES``). Returns the Figure."""
    if not grids:
        raise ValueError("grids must hold at least one grid")
    arrays = {title: _as_numpy(states, int) for title, states in grids.items()}
    for title, states in arrays.items():
        if states.ndim != 2 or states.min() < 0 or states.max() > 3:
            raise ValueError(f"grid {title!r} must be 2-D with codes 0-3, got shape {states.shape}")
    fig = fig or plt.figure(figsize=(4.2 * len(arrays), 4.8), layout="constrained")
    axes = fig.subplots(1, len(arrays), squeeze=False)[0]
    for ax, (title, states) in zip(axes, arrays.items()):
        _draw_grid(ax, states, block_q, block_k, title)
    used = sorted({int(code) for states in arrays.values() for code in np.unique(states)})
    fig.legend(handles=[Patch(facecolor=_TILE_COLOURS(code), edgecolor="black", label=TILE_STATES[code])
                        for code in used], loc="outside lower center", ncols=len(used), fontsize=8, frameon=False)
    return fig


def memory_by_length(lengths, peaks, output_bytes):
    """Peak memory against the length on log-log axes: ``peaks`` maps a method to its bytes
    ``(len(lengths),)``; ``output_bytes`` ``(len(lengths),)`` (dotted) is the output alone.
    Ticks are labelled with the lengths and with powers of two in MiB. Returns the Figure."""
    lengths = _as_numpy(lengths, float)
    fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
    colours = {"naive": "tab:red", "tiled": "tab:blue", "fused": "tab:green"}
    for name, values in peaks.items():
        values = _as_numpy(values, float)
        if values.shape != lengths.shape:
            raise ValueError(f"peaks[{name!r}] must have one value per length {lengths.shape}, got {values.shape}")
        ax.plot(lengths, values, "o-", color=colours.get(name), label=name)
    ax.plot(lengths, _as_numpy(output_bytes, float), ":", color="black", label="the output alone")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(lengths))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{int(length):,}" for length in lengths])
    low = min(np.min(_as_numpy(v, float)) for v in [*peaks.values(), output_bytes])
    high = max(np.max(_as_numpy(v, float)) for v in peaks.values())
    ticks = 2.0 ** np.arange(np.floor(np.log2(low)), np.ceil(np.log2(high)) + 1, 2)
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{t / 2 ** 20:g} MiB" if t >= 2 ** 20 else f"{t / 2 ** 10:g} KiB" for t in ticks])
    ax.set_xlabel("sequence length L (queries = keys)")
    ax.set_ylabel("peak memory during the call")
    ax.set_title("memory allocated by one attention call", fontsize=10)
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    return fig


def tiles_explorer_figure(state, fig=None):
    """The tiles widget's figure from ``tiles_explorer_state``: the grid with the current tile,
    the chosen row's scores and running max, its running sum, and its partial output against
    the exact one. Returns the Figure (``fig`` is cleared and drawn again when given)."""
    if fig is None:
        fig = plt.figure(figsize=(12, 6.5), layout="constrained")
    else:
        fig.clear()
    axes = fig.subplot_mosaic([["grid", "scores", "scores"], ["grid", "sum", "output"]], width_ratios=(1.1, 1, 1))
    grid, scores, values, out = axes["grid"], axes["scores"], axes["sum"], axes["output"]
    block_q, block_k, step = state["block_q"], state["block_k"], state["step"]
    _draw_grid(grid, state["grid"], block_q, block_k,
               f"tile {step} of {state['n_steps']} for query block {state['q_block']}")
    grid.axhline(state["row"] // block_q - 0.5 + (state["row"] % block_q + 0.5) / block_q, color="black", lw=1.5)
    used = sorted({int(code) for code in np.unique(state["grid"])})
    grid.legend(handles=[Patch(facecolor=_TILE_COLOURS(code), edgecolor="black", label=TILE_STATES[code])
                         for code in used], loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=len(used),
                fontsize=8, frameon=False)
    s = _as_numpy(state["scores"], float)
    readable = int(np.isfinite(s).sum())  # a causal row may not read the keys after it
    s = np.where(np.isfinite(s), s, 0.0)  # keys a causal row may not read: no bar
    read = state["keys_read"]
    _shade_blocks(scores, len(s), block_k)
    scores.bar(np.arange(len(s)), s, color=np.where(np.arange(len(s)) < read, "tab:blue", "lightgrey"), width=0.8)
    m = _as_numpy(state["m"], float)
    scores.axhline(m[-1], color="tab:red", lw=1.2, label=f"running max {m[-1]:.2f}")
    scores.set_xlim(-0.5, len(s) - 0.5)
    scores.set_xlabel(f"key (blue: read so far, {read} of {len(s)})" if readable == len(s) else
                      f"key (blue: read so far, {read} of the {readable} this row may read; no bar: a future key)")
    scores.set_ylabel("score")
    scores.set_title(f"query row {state['row']}: its scores", fontsize=10)
    scores.legend(loc="lower right", fontsize=8)
    l = _as_numpy(state["l"], float)
    steps = np.arange(1, len(l) + 1)
    values.plot(steps, l, "o-", color="tab:green")
    values.set_xlim(0.5, state["n_steps"] + 0.5)
    values.set_ylim(0, _as_numpy(state["l_final"], float) * 1.3 + 0.1)
    values.xaxis.set_major_locator(FixedLocator(np.arange(1, state["n_steps"] + 1)))
    values.set_xlabel("tiles read")
    values.set_ylabel("running sum l (green)")
    values.set_title("its running sum and max", fontsize=10)
    maxima = values.twinx()
    maxima.plot(steps, m, "s--", color="tab:red", ms=4)
    finite = np.isfinite(_as_numpy(state["scores"], float))
    maxima.set_ylim(s[finite].min() - 0.5, s[finite].max() + 0.5)
    maxima.set_ylabel("running max m (red)")
    partial, exact = _as_numpy(state["partial"], float), _as_numpy(state["exact"], float)
    dims = np.arange(len(exact))
    out.scatter(dims, exact, marker="x", color="black", s=40, label="exact", zorder=3)
    out.scatter(dims, partial, color="tab:orange", s=25, label="partial: acc / l", zorder=2)
    out.set_xlabel("output dimension")
    out.set_ylabel("value")
    out.set_title(f"output so far, max error {state['error']:.1e}", fontsize=10)
    out.xaxis.set_major_locator(FixedLocator(dims))
    lim = max(np.abs(exact).max(), np.abs(partial).max()) * 1.5 + 0.05
    out.set_ylim(-lim, lim)
    out.legend(loc="lower right", fontsize=8, ncols=2)
    return fig
