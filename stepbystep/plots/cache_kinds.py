"""Chapter 17: the KV cache's memory for each kind of attention, windows included."""
import matplotlib.pyplot as plt
import numpy as np

from ..checks import check_instance

__all__ = ["cache_kinds_memory"]


def _gib(n_bytes):
    return np.asarray(n_bytes, dtype=float) / 2 ** 30


def cache_kinds_memory(state, fig=None):
    """The cache's memory against the context, from ``memory_state``: the chosen configuration's
    curve (flat past its window where every layer has one), the same model with a key-value head per
    query head and no window (dashed; its value at the context in the legend, below the axes), and
    each published configuration a labelled point at its context, in the same dtype. Returns the
    Figure (``fig`` is cleared and reused)."""
    check_instance("state", state, dict, "a dict from memory_state")
    if fig is None:
        fig = plt.figure(figsize=(8, 3.8), layout="constrained")
    fig.clear()
    ax = fig.add_subplot()
    contexts = np.asarray(state["contexts"], dtype=float) / 1024
    ax.plot(contexts, _gib(state["curve"]), color="C0", label=f"your configuration ({state['kind']})")
    ax.plot(contexts, _gib(state["mha_curve"]), color="grey", ls="--", lw=1,
            label=f"the same with a KV head per query head, no window: {_gib(state['mha_bytes']):,.1f} GiB at "
                  f"{state['context']:,} tokens")
    ax.plot([state["context"] / 1024], [_gib(state["context_bytes"])], "o", color="C0")
    for name, (context, n_bytes) in state["published"].items():
        ax.plot([context / 1024], [_gib(n_bytes)], "D", color="C3", ms=5)
        ax.annotate(name, (context / 1024, _gib(n_bytes)), xytext=(6, 4), textcoords="offset points", fontsize=7.5,
                    color="C3", bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=0.5))
    right = max([state["context"]] + [context for context, _ in state["published"].values()]) / 1024
    top = max(_gib(state["curve"]).max(), max(_gib(b) for _, b in state["published"].values()))
    ax.set(xlabel="context length (K tokens, 1K = 1,024)", ylabel="KV cache, one sequence (GiB)",
           xlim=(0, 1.15 * right), ylim=(0, 1.15 * top if top > 0 else 1),
           title=f"your configuration: {state['per_token_bytes'] / 1024:,.1f} KiB per token in {state['dtype']} "
                 "(the first tokens'; a window caps the total)\nred: published configurations at their context, "
                 "same dtype")
    ax.title.set_fontsize(10)
    fig.legend(fontsize=8, loc="outside lower center")  # below the axes: no curve runs under it
    return fig
