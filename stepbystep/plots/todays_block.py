"""Chapter 12: the block study over seeds, prefill against decode, and the KV cache's memory."""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from ..checks import check_instance
from .seed_study import _check_results, _draw_seed_dots

__all__ = ["block_study", "prefill_decode", "kv_cache_memory"]


def block_study(results, metrics=("validation loss", "token accuracy"), groups=None, seeds=None):
    """One panel per measure, one above the other: each variant's seeds as dots, the median as a bar. ``results``
    ``{variant: tensor (seeds, len(metrics))}``, as ``experiments.block_study`` returns; ``groups``
    ``{label: variants}`` gives each group one colour, named in a legend (a variant in no group is grey).
    ``seeds``, a phrase such as
    ``"the ten stored seeds (0 to 9)"``, opens the title. Returns the Figure."""
    _check_results(results)
    groups = groups or {}
    palette = {variant: f"C{index}" for index, members in enumerate(groups.values()) for variant in members}
    colors = [palette.get(name, "grey") for name in results]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(max(5.6, 0.75 * len(results)), 2.6 * len(metrics) + 1.4),
                             layout="constrained", sharex=True)
    for column, (ax, label) in enumerate(zip(np.atleast_1d(axes), metrics)):
        _draw_seed_dots(ax, {name: np.asarray(values)[:, column] for name, values in results.items()}, label,
                        colors=colors)
        ax.tick_params(axis="x", labelrotation=35)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
        ax.set_title(label, fontsize=10)
        ax.grid(axis="y", lw=0.4, alpha=0.5)
    handles = [Patch(color=f"C{index}", alpha=0.6, label=label) for index, label in enumerate(groups)]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9, frameon=False)
    what = "each seed (dots), the median (bar); the same recipe for every variant"
    fig.suptitle(f"{seeds}: {what}" if seeds else what, fontsize=10)
    return fig


def prefill_decode(lengths, prefill_ms, decode_ms):
    """Time to read a prompt at once (prefill) against the time of one new token (decode), by the
    prompt's length: ``lengths`` ``(n,)``, ``prefill_ms`` ``(n,)``; ``decode_ms`` ``(n,)``, one step after
    a prompt of that length. Left: milliseconds; right: milliseconds per token. Returns the Figure."""
    lengths, prefill_ms, decode_ms = (np.asarray(a, dtype=float) for a in (lengths, prefill_ms, decode_ms))
    if not lengths.shape == prefill_ms.shape == decode_ms.shape or lengths.ndim != 1:
        raise ValueError("lengths, prefill_ms and decode_ms must be 1-D and of one length, got shapes "
                         f"{lengths.shape}, {prefill_ms.shape} and {decode_ms.shape}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.4), layout="constrained")
    left.plot(lengths, prefill_ms, "o-", label="prefill: the whole prompt, one pass")
    left.plot(lengths, decode_ms, "s-", label="decode: one new token")
    left.set(xlabel="prompt length (tokens)", ylabel="time (ms)", title="one forward pass", ylim=(0, None))
    left.legend(fontsize=8, loc="upper left")
    right.plot(lengths, prefill_ms / lengths, "o-", label="prefill, per prompt token")
    right.plot(lengths, decode_ms, "s-", label="decode, per new token")
    right.set(xlabel="prompt length (tokens)", ylabel="time per token (ms)", title="per token", ylim=(0, None))
    right.legend(fontsize=8, loc="center right")
    return fig


def _gib(n_bytes):
    return np.asarray(n_bytes, dtype=float) / 2 ** 30


def kv_cache_memory(state, fig=None):
    """The KV cache's memory against the context length, from ``kv_cache_state``: the chosen
    configuration's curve for one sequence and for the batch, each published configuration a
    point for one sequence at its context length (same dtype), labelled on a white ground so
    that a curve under a label does not hide it. Returns the Figure (``fig`` is cleared and reused)."""
    check_instance("state", state, dict, "a dict from kv_cache_state")
    if fig is None:
        fig = plt.figure(figsize=(8, 3.8), layout="constrained")
    fig.clear()
    ax = fig.add_subplot()
    contexts = np.asarray(state["contexts"], dtype=float) / 1024
    ax.plot(contexts, _gib(state["per_sequence_curve"]), color="C0", label="your configuration, one sequence")
    if state["batch_size"] > 1:
        ax.plot(contexts, _gib(state["batch_curve"]), color="C1", ls="--",
                label=f"your configuration, batch of {state['batch_size']}")
    ax.plot([state["context"] / 1024], [_gib(state["per_sequence_bytes"])], "o", color="C0")
    for name, (context, n_bytes) in state["published"].items():
        ax.plot([context / 1024], [_gib(n_bytes)], "D", color="dimgray", ms=5)
        ax.annotate(name, (context / 1024, _gib(n_bytes)), xytext=(6, 4), textcoords="offset points", fontsize=7.5,
                    color="dimgray", bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=0.5))
    right = max([state["context"]] + [context for context, _ in state["published"].values()]) / 1024
    ax.title.set_fontsize(10)
    ax.set(xlabel="context length (thousands of tokens)", ylabel="KV cache (GiB)", xlim=(0, 1.2 * right),
           ylim=(0, None),
           title=f"your configuration: {state['per_token_bytes'] / 1024:,.1f} KiB per token in {state['dtype']}\n"
                 f"grey: published models, one sequence each at its context, in the same dtype")
    ax.legend(fontsize=8, loc="upper left")
    return fig
