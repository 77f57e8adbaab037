"""Chapter 09's figures: one stream and its loss, attention inside a stream, sampling, the KV cache."""
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Patch

from ._arrays import _as_numpy
from ._heatmaps import WEIGHTS

__all__ = [
    "completion_stream",
    "stream_attention",
    "token_distribution",
    "temperature_effect",
    "filtering_effect",
    "smoothed_targets",
    "token_times",
    "run_comparison",
]

_SPACE = "␣"
_PROMPT, _COMPLETION, _IGNORED, _KEPT, _DROPPED = "#c6dbef", "#fdae6b", "#eeeeee", "tab:orange", "#bdbdbd"
_MASKED = "#d9d9d9"


def _symbol(vocab, index):
    symbol = vocab.itos[int(index)]
    return _SPACE if symbol == " " else symbol


def _fit(symbol):
    """Text placement for one box: a special token ("<sos>", "<eos>") upright would overflow its
    box, so it is written smaller and turned to run up the box."""
    if len(symbol) > 1:
        return dict(ha="center", va="center", fontsize=7, rotation=90)
    return dict(ha="center", va="center", fontsize=9)


def completion_stream(inputs, targets, vocab, ignore_index=-100, fig=None):
    """One training stream: the model's inputs above, the targets below, ignored targets greyed.

    ``inputs`` and ``targets`` are ``(L,)`` ids (a ``CompletionDataset`` item): target ``i``
    is the token that follows input ``i``. Targets equal to ``ignore_index`` (the prompt's,
    with a completion-only loss) are drawn as "—" on grey: they add nothing to the loss.
    Returns the Figure.
    """
    inputs, targets = _as_numpy(inputs), _as_numpy(targets)
    if inputs.ndim != 1 or inputs.shape != targets.shape:
        raise ValueError(f"expected inputs and targets of one shape (L,), got {inputs.shape} and {targets.shape}")
    length = inputs.shape[0]
    if fig is None:
        fig = plt.figure(figsize=(0.42 * length + 1.5, 2.2), layout="constrained")
    ax = fig.add_subplot()
    for position in range(length):
        counted = targets[position] != ignore_index
        ax.add_patch(plt.Rectangle((position - 0.45, 0.55), 0.9, 0.9, color=_PROMPT if not counted else _COMPLETION))
        ax.text(position, 1.0, _symbol(vocab, inputs[position]), **_fit(_symbol(vocab, inputs[position])))
        ax.add_patch(plt.Rectangle((position - 0.45, -0.45), 0.9, 0.9, color=_COMPLETION if counted else _IGNORED))
        target = _symbol(vocab, targets[position]) if counted else "—"
        ax.text(position, 0.0, target, color="black" if counted else "grey", **_fit(target))
    ax.set_xlim(-0.6, length - 0.4)
    ax.set_ylim(-0.6, 1.6)
    ax.set_yticks([0, 1], ["target", "input"])
    ax.set_xticks(range(length))
    ax.set_xlabel("position")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=[Patch(color=_PROMPT, label="input whose target is ignored"),
                       Patch(color=_COMPLETION, label="in the loss (input: its target counts)"),
                       Patch(color=_IGNORED, label="ignored target")],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_title("one stream: each input position predicts the next token; only the completion counts")
    return fig


def stream_attention(weights, tokens, first_row=0, head=None, fig=None, layer_name=None):
    """Self-attention inside one stream: rows ``first_row..`` (the writers) by every column.

    ``weights`` ``(n_heads, L, L)`` (a layer's ``alphas`` for one stream), ``tokens`` the ``L``
    symbols; ``head`` picks one head, ``None`` averages them. The causal mask leaves the upper
    triangle empty. ``layer_name`` (e.g. "layer 2 of 2") starts the title. Returns the Figure.
    """
    weights = _as_numpy(weights)
    if weights.ndim != 3 or weights.shape[1:] != (len(tokens), len(tokens)):
        raise ValueError(f"expected weights (n_heads, {len(tokens)}, {len(tokens)}), got {weights.shape}")
    shown = weights.mean(axis=0) if head is None else weights[head]  # (L, L)
    future = np.triu(np.ones(shown.shape, dtype=bool), k=1)  # (L, L): the keys the causal mask hides
    shown = np.ma.masked_array(shown, future)[first_row:]  # masked cells drawn in _MASKED, not as a weight
    labels = [_SPACE if token == " " else token for token in tokens]
    if fig is None:
        fig = plt.figure(figsize=(1.5 + 0.3 * len(tokens), 1.5 + 0.3 * shown.shape[0]), layout="constrained")
    ax = fig.add_subplot()
    cmap = plt.get_cmap(WEIGHTS["cmap"]).with_extremes(bad=_MASKED)
    image = ax.imshow(shown, aspect="auto", **{**WEIGHTS, "cmap": cmap})
    ax.set_xticks(range(len(labels)), labels)
    for tick in ax.get_xticklabels():
        if len(tick.get_text()) > 1:  # e.g. "<sos>": upright it would touch its neighbours
            tick.set_rotation(90)
    ax.set_yticks(range(shown.shape[0]), labels[first_row:])
    ax.set_xlabel("token read (key)")
    ax.set_ylabel("position writing the next token")
    which = f"mean of {weights.shape[0]} heads" if head is None else f"head {head}"
    ax.set_title(which if layer_name is None else f"{layer_name}, {which}")
    fig.colorbar(image, ax=ax, label="attention weight")
    fig.legend(handles=[Patch(color=_MASKED, label="masked: a later token")], loc="outside lower right",
               frameon=False, fontsize=8)
    return fig


def _bars(ax, probs, vocab, kept=None, title=None, top=None):
    """Bars of a ``(V,)`` distribution over the symbols, the kept tokens in colour."""
    probs = _as_numpy(probs, float)
    order = np.argsort(-probs, kind="stable")
    if top is not None:
        order = order[:top]
    colours = [_KEPT if kept is None or kept[i] else _DROPPED for i in order]
    ax.bar(range(len(order)), probs[order], color=colours)
    ax.set_xticks(range(len(order)), [_symbol(vocab, i) for i in order], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_xlabel("next token")
    ax.set_ylabel("probability")
    if title:
        ax.set_title(title, fontsize=10)
    if kept is not None and not kept[order].all():
        ax.legend(handles=[Patch(color=_KEPT, label="kept"), Patch(color=_DROPPED, label="filtered out")],
                  loc="upper right", frameon=False, fontsize=8)


def token_distribution(probs, vocab, kept=None, title=None, top=20, fig=None):
    """One next-token distribution ``(V,)`` as bars, most likely first (``top`` of them).

    ``kept`` ``(V,)`` bool marks the tokens a sampler may draw (orange); the others are grey.
    ``fig``: an existing Figure to clear and draw on (a widget redraws in place).
    """
    if fig is None:
        fig = plt.figure(figsize=(8, 3), layout="constrained")
    else:
        fig.clear()
    ax = fig.add_subplot()
    _bars(ax, probs, vocab, None if kept is None else _as_numpy(kept), title, top)
    return fig


def temperature_effect(logits, vocab, temperatures, top=12):
    """The same logits ``(V,)`` turned into probabilities at several temperatures, side by side.

    The ``top`` most likely tokens get a bar each; a last grey bar holds the mass of the other
    ``V - top`` (the tail a high temperature inflates)."""
    logits = torch.as_tensor(_as_numpy(logits), dtype=torch.float32)
    fig, axes = plt.subplots(1, len(temperatures), figsize=(3.2 * len(temperatures), 2.8), layout="constrained",
                             sharey=True)
    axes = np.atleast_1d(axes)
    order = torch.argsort(-logits, stable=True)[:top]
    for ax, temperature in zip(axes, temperatures):
        if temperature == 0:
            probs = torch.zeros_like(logits)
            probs[logits.argmax()] = 1.0
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
        tail = 1.0 - probs[order].sum().item()  # the mass of the tokens not drawn
        ax.bar(range(len(order)), probs[order].numpy(), color=_KEPT)
        ax.bar(len(order), tail, color=_DROPPED)
        ax.set_xticks(range(len(order) + 1), [_symbol(vocab, i) for i in order] + [f"{len(logits) - len(order)}\nothers"],
                      fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_xlabel("next token")
        ax.set_title(f"T = {temperature:g}" + (" (greedy)" if temperature == 0 else "") + f": others {tail:.2f}",
                     fontsize=10)
    axes[0].set_ylabel("probability")
    return fig


def filtering_effect(probs, vocab, kept_by_setting, top=16):
    """One distribution ``(V,)`` under several filters: ``kept_by_setting`` maps a title to a
    ``(V,)`` bool mask of the tokens kept (e.g. top-k 3, top-p 0.9). One panel per setting."""
    fig, axes = plt.subplots(1, len(kept_by_setting), figsize=(3.6 * len(kept_by_setting), 2.8),
                             layout="constrained", sharey=True)
    axes = np.atleast_1d(axes)
    for ax, (title, kept) in zip(axes, kept_by_setting.items()):
        kept = _as_numpy(kept)
        _bars(ax, probs, vocab, kept, f"{title}: {int(kept.sum())} kept", top)
    for ax in axes[1:]:
        ax.set_ylabel("")  # one shared probability axis, labelled once
    return fig


def smoothed_targets(vocab_size, target, epsilon, vocab=None, n_shown=9):
    """What the loss asks for at one position, without and with label smoothing ``epsilon``.

    Without: all the probability on the target. With: ``1 - ε + ε/V`` on it and ``ε/V`` on
    each of the ``V`` tokens (the target included), as ``CrossEntropyLoss(label_smoothing=ε)``.
    ``n_shown`` ids around the target are drawn (labelled with ``vocab``'s symbols when given),
    on a log axis so that the ``ε/V`` bars show; a zero is written "0" on its place.
    """
    if not 0 <= target < vocab_size:
        raise ValueError(f"target must be an id in 0..{vocab_size - 1}, got {target}")
    first = min(max(target - n_shown // 2, 0), max(vocab_size - n_shown, 0))
    shown = np.arange(first, min(first + n_shown, vocab_size))  # ids drawn, the target among them
    plain = np.zeros(vocab_size)
    plain[target] = 1.0
    smooth = np.full(vocab_size, epsilon / vocab_size)
    smooth[target] += 1 - epsilon
    labels = [_symbol(vocab, i) if vocab is not None else str(i) for i in shown]
    fig, axes = plt.subplots(1, 2, figsize=(9, 2.8), layout="constrained", sharey=True)
    for ax, values, title in ((axes[0], plain, "one-hot target"),
                              (axes[1], smooth, f"label smoothing ε = {epsilon:g}")):
        colours = [_KEPT if i == target else "tab:blue" for i in shown]
        ax.bar(range(len(shown)), np.where(values[shown] > 0, values[shown], np.nan), color=colours)
        for x, value in enumerate(values[shown]):
            if value == 0:
                ax.text(x, 2e-4, "0", ha="center", va="bottom", fontsize=8, color="grey")
        ax.set_yscale("log")
        ax.set_ylim(1e-4, 2)
        ax.set_xticks(range(len(shown)), labels)
        ax.set_xlim(-0.8, len(shown) - 0.2)  # the same padding in both panels: no label on a spine
        ax.set_xlabel(f"token ({len(shown)} of {vocab_size} around the target, in orange)")
        ax.set_title(f"{title}: target {values[target]:.3f}, others {values[shown[shown != target][0]]:.4f}",
                     fontsize=10)
    if epsilon:
        axes[1].axhline(epsilon / vocab_size, color="grey", ls="--", lw=1)
        axes[1].annotate(f"ε/V = {epsilon / vocab_size:.4f}", (len(shown) - 0.5, epsilon / vocab_size),
                         xytext=(len(shown) - 0.5, 8 * epsilon / vocab_size), ha="right", va="bottom", fontsize=8,
                         color="grey", arrowprops={"arrowstyle": "->", "color": "grey", "lw": 0.8})  # clear of the bars
    axes[0].set_ylabel("probability asked for")
    return fig


def token_times(cached, uncached, prompt_length=0):
    """Milliseconds per generated token against its position, with and without the KV cache.

    ``cached`` and ``uncached`` are lists of seconds, one per step (``time_per_token``); step
    ``i`` writes the token at position ``prompt_length + i``; the first cached step, which
    reads the whole prompt at once (the prefill), is marked.
    """
    fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
    for times, label, colour in ((uncached, "without cache: the whole stream again", "tab:red"),
                                 (cached, "with the KV cache: one new token", "tab:blue")):
        positions = prompt_length + np.arange(len(times))
        ax.plot(positions, 1000 * _as_numpy(times, float), label=label, color=colour, lw=1)
    if len(cached):
        ax.annotate("prefill", (prompt_length, 1000 * float(cached[0])), xytext=(8, 12), textcoords="offset points",
                    fontsize=8, color="tab:blue", arrowprops=dict(arrowstyle="->", color="tab:blue", lw=0.8))
    ax.set_xlabel("position of the new token")
    ax.set_ylabel("ms per token")
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False, loc="upper left")
    return fig


def run_comparison(results, metrics):
    """Bars comparing runs: ``results`` maps a run's name to a dict of numbers, ``metrics`` maps
    each metric's key to its axis label; one panel per metric."""
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.8 * len(metrics), 2.8), layout="constrained")
    axes = np.atleast_1d(axes)
    names = list(results)
    for ax, (key, label) in zip(axes, metrics.items()):
        values = [results[name][key] for name in names]
        ax.bar(range(len(names)), values, color=["tab:blue", "tab:orange", "tab:green", "tab:red"][:len(names)])
        ax.set_xticks(range(len(names)), names, fontsize=9)
        ax.set_title(label, fontsize=10)
    return fig
