"""Chapter 07's figures: a padded batch and its masks, a warm-up schedule, reversal attention, a beam."""
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from ..models.seq2seq.toy_decoding import markov_beam_steps, markov_greedy
from ._arrays import _as_numpy
from ._heatmaps import WEIGHTS, heatmap

__all__ = ["padded_batch", "learning_rate_schedule", "reversal_attention", "beam_tree", "embedding_runs"]

# This chapter's batch figure keeps its own two colours, which its text names: False (padding,
# blocked): grey; True: blue. Dark text reads on both, which the symbols need.
_KEEP = {"cmap": ListedColormap(["#d9d9d9", "#9ecae1"]), "vmin": 0, "vmax": 1}


def _token_grid(ax, ids, vocab, keep, title):
    """Draw a grid of token ids, each cell labelled with its symbol, coloured by ``keep``."""
    symbols = np.array([[vocab.itos[int(i)] for i in row] for row in ids])  # (rows, cols)
    heatmap(ax, keep, _KEEP, annot=symbols, fmt="", fontsize=9)
    for text in ax.texts:  # special tokens ("<pad>") in a smaller font, to fit their cells
        if len(text.get_text()) > 1:
            text.set_fontsize(7)
    ax.set_xlabel("position")
    ax.set_ylabel("sequence")
    ax.set_title(title)


def padded_batch(source, target_in, target_out, vocab, source_mask, target_mask, index=0):
    """A padded batch and its masks, side by side; returns the Figure.

    Args:
        source, target_in, target_out: id tensors ``(N, L_s)``, ``(N, L_t)``, ``(N, L_t)``
            from ``pad_collate``.
        vocab: the ``Vocab`` whose symbols label the cells (one for source and target).
        source_mask: ``(N, 1, L_s)`` keep-mask; its row colours the source grid (grey = masked).
        target_mask: ``(N, L_t, L_t)`` (or ``(1, L_t, L_t)``) keep-mask; the map of sequence
            ``index`` is drawn on the right.
    """
    source, target_in, target_out = (_as_numpy(t) for t in (source, target_in, target_out))
    source_keep = _as_numpy(source_mask)[:, 0].astype(float)  # (N, L_s)
    target_keep = _as_numpy(target_mask).astype(float)  # (N or 1, L_t, L_t)
    if source_keep.shape != source.shape:
        raise ValueError(f"source_mask must be (N, 1, L_s) = {(source.shape[0], 1, source.shape[1])}, "
                         f"got {tuple(_as_numpy(source_mask).shape)}")
    one_mask = target_keep[index if target_keep.shape[0] > 1 else 0]  # (L_t, L_t)
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6), layout="constrained",
                             gridspec_kw={"width_ratios": [source.shape[1], target_in.shape[1],
                                                           target_out.shape[1], 0.9 * target_in.shape[1]]})
    pad_id = vocab.pad_id
    _token_grid(axes[0], source, vocab, source_keep, f"source {source.shape} and its mask")
    _token_grid(axes[1], target_in, vocab, (target_in != pad_id).astype(float), f"target_in {target_in.shape}")
    _token_grid(axes[2], target_out, vocab, (target_out != pad_id).astype(float),
                f"target_out {target_out.shape}")
    labels = [vocab.itos[int(i)] for i in target_in[index]]
    heatmap(axes[3], one_mask, _KEEP, xticklabels=labels, yticklabels=labels, square=True)
    axes[3].tick_params(axis="x", labelrotation=90)
    axes[3].set_xlabel("key (decoder input)")
    axes[3].set_ylabel("query (decoder input)")
    axes[3].set_title(f"target mask of sequence {index}")
    fig.suptitle("blue: may attend / counts; grey: padding or blocked")
    return fig


def learning_rate_schedule(learning_rates, steps_per_epoch=None, warmup_steps=None):
    """The learning rate of every optimizer step (e.g. ``sbs.learning_rates``); returns the Figure.

    ``steps_per_epoch`` draws a dotted line at each epoch's end; ``warmup_steps`` shades the
    warm-up.
    """
    rates = _as_numpy(learning_rates, float)
    if rates.ndim != 1 or rates.size == 0:
        raise ValueError("learning_rates must be a non-empty list of numbers, one per step")
    fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
    ax.plot(np.arange(1, rates.size + 1), rates, color="tab:blue")
    if warmup_steps:
        ax.axvspan(0, warmup_steps, color="tab:orange", alpha=0.2, label=f"warm-up ({warmup_steps} steps)")
        ax.legend()
    if steps_per_epoch:
        for boundary in range(steps_per_epoch, rates.size, steps_per_epoch):
            ax.axvline(boundary, color="grey", ls=":", lw=1)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("learning rate")
    ax.set_title("learning rate of every step")
    return fig


def reversal_attention(alphas, source_tokens, output_tokens, title=None):
    """Cross-attention of one sequence, one map per head, with the reversal's anti-diagonal.

    ``alphas`` ``(n_heads, L_t, L_s)`` (e.g. ``cross_attn_heads.alphas[i]``); ``source_tokens``
    and ``output_tokens`` label the keys (columns) and the queries (rows). A dashed line marks
    where output ``t`` would read source ``L_s - 1 - t``, the symbol it has to write. Returns
    the Figure.
    """
    alphas = _as_numpy(alphas, float)
    if alphas.ndim == 2:
        alphas = alphas[None]
    if alphas.ndim != 3:
        raise ValueError(f"alphas must be (n_heads, L_t, L_s), got {alphas.shape}")
    n_heads, n_out, n_src = alphas.shape
    if len(source_tokens) != n_src or len(output_tokens) != n_out:
        raise ValueError(f"got {len(source_tokens)} source and {len(output_tokens)} output labels "
                         f"for maps of shape ({n_out}, {n_src})")
    fig, axes = plt.subplots(1, n_heads, figsize=(0.6 + 0.3 * n_src * n_heads, 0.9 + 0.3 * n_out),
                             squeeze=False, layout="constrained")
    for head, ax in enumerate(axes[0]):
        image = ax.imshow(alphas[head], **WEIGHTS)
        rows = np.arange(min(n_out, n_src))
        ax.plot(n_src - 1 - rows, rows, color="white", ls="--", lw=1, alpha=0.7)
        ax.set_xticks(range(n_src), list(source_tokens), fontsize=9)
        ax.set_yticks(range(n_out), list(output_tokens), fontsize=9)
        ax.set_xlabel("source (key)")
        if head == 0:
            ax.set_ylabel("output (query)")
        ax.set_title(f"head {head}")
    fig.colorbar(image, ax=axes[0].tolist(), fraction=0.03, label="attention weight")
    if title:
        fig.suptitle(title)
    return fig


def beam_tree(next_probs, beam_width=2, n_steps=3, start="<sos>", show_greedy=False):
    """Beam search drawn as a tree, on a toy model whose next token depends on the last one.

    ``next_probs`` maps a token (``start`` included) to a dict ``{token: probability}`` over the
    same tokens. At every step each kept output is extended by every token; the
    ``beam_width`` candidates with the highest total log-probability (written beside each
    node) are kept (blue), the others dropped (grey). ``show_greedy``: greedy decoding's
    prefixes ringed in orange, and its output and total written under the tree. Returns the
    Figure; its axes hold one text per candidate. The edges leave a node after its label and
    the labels of its step, so that no edge crosses a label.
    """
    steps = markov_beam_steps(next_probs, beam_width, n_steps, start)
    greedy, greedy_score = markov_greedy(next_probs, n_steps, start)
    n_candidates = max(len(candidates) for candidates in steps)
    fig, ax = plt.subplots(figsize=(2.6 * n_steps + 1.2, 0.42 * n_candidates + 1.2), layout="constrained")
    labels = [[ax.text(0, 0, start, ha="right", va="center", fontsize=9)]]  # one list of texts per step
    node_ys = [[0.0]]
    for step, candidates in enumerate(steps, start=1):
        ys = np.linspace(-(len(candidates) - 1) / 2, (len(candidates) - 1) / 2, len(candidates))[::-1]
        node_ys.append(list(ys))
        labels.append([])
        for (tokens, score, _, keep), y in zip(candidates, ys):
            color = "tab:blue" if keep else "0.6"
            ax.plot(step, y, "o", color=color, ms=5, zorder=3)
            if show_greedy and tokens == greedy[:step]:
                ax.plot(step, y, "o", mfc="none", mec="tab:orange", mew=2, ms=11, zorder=3)
            labels[-1].append(ax.text(step + 0.06, y, f"{''.join(tokens)}  {score:.2f}", va="center", fontsize=9,
                                      color="black" if keep else "0.5", fontweight="bold" if keep else "normal"))
    ax.set_xticks(range(n_steps + 1), ["start"] + [f"step {step}" for step in range(1, n_steps + 1)])
    ax.set_xlim(-0.6, n_steps + 0.9)
    ax.set_ylim(-(n_candidates + 1) / 2, (n_candidates + 1) / 2)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"beam search, B = {beam_width}: total log-probability beside each output "
                 "(blue: kept, grey: dropped)", fontsize=10)
    if show_greedy:
        ax.set_xlabel(f"orange rings: greedy decoding's path; it writes {''.join(greedy)}, total "
                      f"log-probability {greedy_score:.2f}", fontsize=9)
    fig.canvas.draw()  # lays the figure out, so that the labels' widths are known in data units
    to_data = ax.transData.inverted()
    ends = [[to_data.transform(text.get_window_extent().get_points())[1, 0] for text in texts] for texts in labels]
    kept_parents = [[0]] + [[i for i, (*_, keep) in enumerate(candidates) if keep] for candidates in steps]
    for step, candidates in enumerate(steps, start=1):
        parents = kept_parents[step - 1]  # the candidates of the previous step that this step extends
        fork = max(ends[step - 1]) + 0.04  # right of every label of the previous step
        for (_, _, parent, keep), y in zip(candidates, node_ys[step]):
            index = parents[parent]
            x0, y0 = ends[step - 1][index] + 0.02, node_ys[step - 1][index]
            ax.plot([x0, fork, step], [y0, y0, y], color="tab:blue" if keep else "0.6", lw=1.6 if keep else 0.8,
                    zorder=2 if keep else 1, solid_joinstyle="round")
    return fig


def embedding_runs(val_losses, exact, unpaired=()):
    """Each seed's runs in a few settings, joined: the final validation loss (left, log scale) and
    the exact match (right).

    ``val_losses`` maps a setting's name to one sequence of per-epoch validation losses per seed
    (the last one is drawn); ``exact`` maps the same names to the seeds' final exact match (shares,
    0-1). Seed ``i`` of every setting is one start: a grey line joins its points from setting to
    setting, dotted into the settings named in ``unpaired`` (whose runs do not start from the same
    weights), and a black bar marks each setting's median. Returns the Figure.
    """
    if not val_losses or set(val_losses) != set(exact):
        raise ValueError(f"val_losses and exact must name the same settings, got {list(val_losses)} and {list(exact)}")
    counts = {len(val_losses[name]) for name in val_losses} | {len(exact[name]) for name in val_losses}
    if len(counts) != 1 or not counts.pop():
        raise ValueError("val_losses and exact must hold one entry per seed, the same seeds for every setting, "
                         f"got {[(name, len(val_losses[name]), len(exact[name])) for name in val_losses]}")
    if set(unpaired) - set(val_losses):
        raise ValueError(f"unpaired must name settings of val_losses {list(val_losses)}, got {list(unpaired)}")
    names = list(val_losses)
    panels = {"validation loss after the last epoch (log scale)":
              np.array([[_as_numpy(run, float)[-1] for run in val_losses[name]] for name in names]),  # (settings, seeds)
              "exact match (%)": 100 * np.array([_as_numpy(exact[name], float) for name in names])}  # (settings, seeds)
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
    for ax, (ylabel, values) in zip(axes, panels.items()):
        for seed_values in values.T:  # one start, across the settings
            for k in range(len(names) - 1):
                style = ":" if {names[k], names[k + 1]} & set(unpaired) else "-"
                ax.plot(x[k:k + 2], seed_values[k:k + 2], style, color="gray", lw=0.8, alpha=0.7, zorder=1)
        for k, name in enumerate(names):
            ax.scatter(np.full(values.shape[1], x[k]), values[k], color=f"C{k}", s=28, zorder=2)
            ax.plot([x[k] - 0.2, x[k] + 0.2], [np.median(values[k])] * 2, color="black", lw=2, zorder=3)
        ax.set_xticks(x, names, rotation=20, ha="right", fontsize=8)
        ax.set_xlim(-0.5, len(names) - 0.5)
        ax.set_ylabel(ylabel)
    axes[0].set_yscale("log")
    axes[0].yaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:g}"))
    axes[1].set_ylim(-5, 105)
    n_seeds = len(exact[names[0]])
    fig.suptitle(f"{n_seeds} seeds in {len(names)} settings: a grey line joins one seed's runs, a bar marks the median",
                 fontsize=10)
    return fig
