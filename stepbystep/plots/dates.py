"""Chapter 08's figures: the alignment of a translated date, and what the model still gets wrong."""
import math
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

from ..data.dates import ERROR_KINDS, wrong_fields
from ..models.metrics import wilson_interval
from ._arrays import _as_numpy
from ._heatmaps import WEIGHTS

__all__ = ["alignment_map", "alignment_maps", "date_errors"]

_SPACE = "␣"  # a visible space, so the reader sees where the model looks between words


def _shown(tokens):
    return [_SPACE if token == " " else token for token in tokens]


def _weights(translation, head):
    """The ``(L_out, L_s)`` map to draw: one head, or the mean over heads."""
    weights = _as_numpy(translation.weights)  # (h, L_out, L_s)
    if head is None:
        return weights.mean(axis=0)  # (L_out, L_s)
    if not -weights.shape[0] <= head < weights.shape[0]:
        raise ValueError(f"head must be None (the mean) or one of the {weights.shape[0]} heads, got {head}")
    return weights[head]  # (L_out, L_s)


def _draw_alignment(ax, translation, head):
    weights = _weights(translation, head)  # (L_out, L_s)
    image = ax.imshow(weights, aspect="auto", **WEIGHTS)
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


def _bin_label(shortest, longest):
    return str(shortest) if shortest == longest else f"{shortest}-{longest}"


def date_errors(texts, targets, predictions, bins=None, sample=None):
    """What a date model gets wrong: its error rate by source length, and which fields are wrong.

    ``texts``, ``targets`` (ISO dates) and ``predictions`` are equally long lists of strings.
    Left: the share of wrong translations in each length bin, with its Wilson 95% interval
    (``wilson_interval``) as an error bar and ``wrong/examples`` written above the bar.
    ``bins`` is a list of inclusive ``(shortest, longest)`` lengths; ``None`` gives every
    observed length its own bin. Texts outside every bin are left out of the left panel.
    Right: the wrong translations counted by the field they get wrong (``wrong_fields``: one
    translation may count for several fields). The title counts the wrong translations, without
    a rate: ``sample`` says how the texts were drawn ("1,000 per length bin"), so that a count
    over a sample that is not the data's mix is not read as the model's error rate. Returns the
    Figure.
    """
    texts, targets, predictions = list(texts), list(targets), list(predictions)
    if not len(texts) == len(targets) == len(predictions) or not texts:
        raise ValueError(f"texts, targets and predictions must be non-empty and equally long, got "
                         f"{len(texts)}, {len(targets)} and {len(predictions)}")
    lengths = np.array([len(text) for text in texts])  # (n,)
    wrong = np.array([target != predicted for target, predicted in zip(targets, predictions)])  # (n,)
    fields = Counter(field for target, predicted, bad in zip(targets, predictions, wrong) if bad
                     for field in wrong_fields(target, predicted))
    if bins is None:
        bins = [(int(length), int(length)) for length in np.unique(lengths)]
    bins = [tuple(bin_) for bin_ in bins]
    if not bins or any(len(bin_) != 2 or bin_[0] > bin_[1] for bin_ in bins):
        raise ValueError(f"bins must be a non-empty list of (shortest, longest) lengths, got {bins!r}")

    fig, (by_length, by_field) = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained",
                                              gridspec_kw={"width_ratios": [3, 1]})
    counts, errors, rates, lows, highs = [], [], [], [], []
    for shortest, longest in bins:
        inside = (lengths >= shortest) & (lengths <= longest)  # (n,)
        n, k = int(inside.sum()), int(wrong[inside].sum())
        low, high = wilson_interval(k, n) if n else (0.0, 0.0)
        counts.append(n)
        errors.append(k)
        rates.append(100 * k / n if n else 0.0)
        lows.append(100 * low)
        highs.append(100 * high)
    rates, lows, highs = np.array(rates), np.array(lows), np.array(highs)
    positions = np.arange(len(bins))
    bars = by_length.bar(positions, rates, color="tab:red",
                         yerr=np.vstack([rates - lows, highs - rates]), capsize=3, ecolor="black")
    by_length.bar_label(bars, labels=[f"{k}/{n}" for k, n in zip(errors, counts)], fontsize=7, color="gray",
                        padding=2)
    by_length.set_xticks(positions, [_bin_label(*bin_) for bin_ in bins], fontsize=8)
    by_length.set_xlabel("source length (characters); gray: wrong/examples; whiskers: Wilson 95% interval")
    by_length.set_ylabel("wrong translations (%)")
    by_length.set_title(f"{wrong.sum()} wrong of {len(wrong):,} texts" + (f", {sample}" if sample else ""))
    by_length.set_ylim(0, max(1.0, highs.max() * 1.2))

    by_field.bar(ERROR_KINDS, [fields[kind] for kind in ERROR_KINDS], color="tab:red")
    by_field.set_xlabel("wrong field")
    by_field.set_ylabel("count of wrong translations")
    by_field.set_title("which part is wrong")
    by_field.yaxis.get_major_locator().set_params(integer=True)
    return fig
