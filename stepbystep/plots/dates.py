"""Chapter 08's figures: the alignment of a translated date, and what the model still gets wrong."""
import math
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

from ..data.dates import ERROR_KINDS, wrong_fields

__all__ = ["alignment_map", "alignment_maps", "date_errors"]

_SPACE = "␣"  # a visible space, so the reader sees where the model looks between words


def _shown(tokens):
    return [_SPACE if token == " " else token for token in tokens]


def _weights(translation, head):
    """The ``(L_out, L_s)`` map to draw: one head, or the mean over heads."""
    weights = translation.weights.detach().cpu().numpy()  # (h, L_out, L_s)
    if head is None:
        return weights.mean(axis=0)  # (L_out, L_s)
    if not -weights.shape[0] <= head < weights.shape[0]:
        raise ValueError(f"head must be None (the mean) or one of the {weights.shape[0]} heads, got {head}")
    return weights[head]  # (L_out, L_s)


def _draw_alignment(ax, translation, head):
    weights = _weights(translation, head)  # (L_out, L_s)
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(weights.shape[1]), _shown(translation.source_tokens))
    ax.set_yticks(range(weights.shape[0]), _shown(translation.output_tokens))
    ax.set_xlabel("source character (what the decoder reads)")
    ax.set_ylabel("output character")
    which = "mean over heads" if head is None else f"head {head}"
    ax.set_title(f"{translation.text!r} → {translation.translation!r}\n({which})", fontsize=10)
    return image


def alignment_map(translation, head=None, fig=None):
    """The cross-attention of one translation: output characters (rows) by source characters.

    ``translation`` is a ``Translation`` (from ``translate_with_alignment``); ``head`` picks
    one head, ``None`` averages them. Each row shows where the decoder looked while writing
    that output character, on a fixed 0-1 colour scale. ``fig``: an existing Figure to clear
    and draw on (a widget redraws in place). Returns the Figure.
    """
    n_out, n_source = translation.weights.shape[-2:]
    if fig is None:
        fig = plt.figure(figsize=(1.5 + 0.32 * n_source, 1.6 + 0.32 * n_out), layout="constrained")
    else:
        fig.clear()
    ax = fig.add_subplot()
    image = _draw_alignment(ax, translation, head)
    fig.colorbar(image, ax=ax, label="attention weight")
    return fig


def alignment_maps(translations, head=None, n_cols=2):
    """A grid of ``alignment_map``s, one per translation; returns the Figure."""
    translations = list(translations)
    if not translations:
        raise ValueError("alignment_maps needs at least one translation")
    n_cols = min(n_cols, len(translations))
    n_rows = math.ceil(len(translations) / n_cols)
    n_source = max(t.weights.shape[-1] for t in translations)
    n_out = max(t.weights.shape[-2] for t in translations)
    fig, axes = plt.subplots(n_rows, n_cols, squeeze=False, layout="constrained",
                             figsize=((1.2 + 0.3 * n_source) * n_cols, (1.4 + 0.3 * n_out) * n_rows))
    used = list(axes.flat[:len(translations)])
    for ax, translation in zip(used, translations):
        image = _draw_alignment(ax, translation, head)
    for ax in axes.flat[len(translations):]:
        ax.remove()
    fig.colorbar(image, ax=used, label="attention weight", shrink=0.6)
    return fig


def date_errors(texts, targets, predictions):
    """What a date model gets wrong: its error rate by source length, and which fields are wrong.

    ``texts``, ``targets`` (ISO dates) and ``predictions`` are equally long lists of strings.
    Left: for every source length, the share of wrong translations (the number of examples of
    that length written above each bar). Right: the wrong translations counted by the field
    they get wrong (``wrong_fields``: one translation may count for several fields).
    Returns the Figure.
    """
    texts, targets, predictions = list(texts), list(targets), list(predictions)
    if not len(texts) == len(targets) == len(predictions) or not texts:
        raise ValueError(f"texts, targets and predictions must be non-empty and equally long, got "
                         f"{len(texts)}, {len(targets)} and {len(predictions)}")
    lengths = np.array([len(text) for text in texts])  # (n,)
    wrong = np.array([target != predicted for target, predicted in zip(targets, predictions)])  # (n,)
    fields = Counter(field for target, predicted, bad in zip(targets, predictions, wrong) if bad
                     for field in wrong_fields(target, predicted))

    fig, (by_length, by_field) = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained",
                                              gridspec_kw={"width_ratios": [3, 1]})
    observed = np.unique(lengths)  # (n_lengths,)
    counts = np.array([(lengths == length).sum() for length in observed])  # (n_lengths,)
    error_rate = np.array([wrong[lengths == length].mean() for length in observed]) * 100  # (n_lengths,)
    bars = by_length.bar(observed, error_rate, color="tab:red")
    by_length.bar_label(bars, labels=[str(count) for count in counts], fontsize=7, color="gray")
    by_length.set_xlabel("source length (characters); gray: number of examples")
    by_length.set_ylabel("wrong translations (%)")
    by_length.set_title(f"{wrong.sum()} wrong of {len(wrong)} ({100 * wrong.mean():.2f}%)")
    by_length.set_ylim(0, max(1.0, error_rate.max() * 1.25))

    by_field.bar(ERROR_KINDS, [fields[kind] for kind in ERROR_KINDS], color="tab:red")
    by_field.set_xlabel("wrong field")
    by_field.set_ylabel("wrong translations")
    by_field.set_title("which part is wrong")
    by_field.yaxis.get_major_locator().set_params(integer=True)
    return fig

