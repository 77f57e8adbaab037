"""Chapter 11's figures: line images, patches, token counts, a confusion matrix, CLS attention."""
import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import patheffects
from matplotlib.patches import Rectangle

from ..checks import check_positive_int
from ._arrays import _as_2d, _as_numpy

__all__ = [
    "line_samples",
    "patch_grid",
    "tokens_by_patch_size",
    "confusion_heatmap",
    "cls_attention_overlay",
    "cls_attention_maps",
]


def _one_image(image):
    """A grey image as ``(H, W)`` from ``(H, W)`` or ``(1, H, W)``."""
    return _as_2d(image, "image", "(H, W)")


def _show_image(ax, image, vmax=1.0):
    ax.imshow(image, cmap="gray", vmin=0.0, vmax=vmax, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])


def line_samples(images, labels, class_names, n_per_class=4):
    """A few images of every class, one row per class; returns the Figure.

    ``images`` ``(N, 1, H, W)`` or ``(N, H, W)`` in [0, 1], ``labels`` ``(N,)``; the first
    ``n_per_class`` images of each class are shown, the row titled with the class's name.
    """
    images, labels = _as_numpy(images, float), _as_numpy(labels).astype(int)
    if images.ndim == 4:
        images = images[:, 0]
    n_classes = len(class_names)
    fig, axes = plt.subplots(n_classes, n_per_class, figsize=(1.6 * n_per_class, 1.8 * n_classes),
                             squeeze=False, layout="constrained")
    for label, row in enumerate(axes):
        chosen = np.flatnonzero(labels == label)[:n_per_class]
        for ax, index in zip(row, chosen):
            _show_image(ax, images[index])
            ax.set_title(f"image {index}", fontsize=8)
        for ax in row[len(chosen):]:
            ax.axis("off")
        row[0].set_ylabel(f"{label}: {class_names[label]}", fontsize=9)
    return fig


def patch_grid(image, patch_size):
    """One image cut into patches: the image with its patch grid, and the patches as a sequence.

    Left: the image, the patch borders drawn over it and each patch numbered row by row. Right:
    the same patches side by side in that order, the sequence of tokens the Transformer reads.
    Returns the Figure.
    """
    image = _one_image(image)
    height, width = image.shape
    check_positive_int("patch_size", patch_size)
    if height % patch_size or width % patch_size:
        raise ValueError(f"patch_size must be a positive int dividing the image's {height}x{width} pixels, "
                         f"got {patch_size!r}")
    rows, cols = height // patch_size, width // patch_size
    n_patches = rows * cols
    fig = plt.figure(figsize=(3.0 + 0.8 * n_patches, 3.0), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=[3.0, 0.8 * n_patches])
    ax = left.subplots()
    _show_image(ax, image)
    for number in range(n_patches):
        row, col = divmod(number, cols)
        ax.add_patch(Rectangle((col * patch_size - 0.5, row * patch_size - 0.5), patch_size, patch_size,
                               fill=False, edgecolor="tab:orange", lw=2))
        ax.text(col * patch_size, row * patch_size, str(number), color="tab:orange", fontsize=9,
                ha="left", va="top", fontweight="bold")
    ax.set_title(f"{height}x{width} image, {patch_size}x{patch_size} patches", fontsize=9)
    axes = np.atleast_1d(right.subplots(1, n_patches))
    for number, patch_ax in enumerate(axes):
        row, col = divmod(number, cols)
        _show_image(patch_ax, image[row * patch_size:(row + 1) * patch_size, col * patch_size:(col + 1) * patch_size])
        patch_ax.set_title(str(number), fontsize=9, color="tab:orange")
    right.suptitle(f"the sequence: {n_patches} patches of {patch_size * patch_size} pixels", fontsize=9)
    return fig


def tokens_by_patch_size(img_size, patch_sizes):
    """Tokens (patches + CLS) and attention-map entries (tokens²) for each patch size; a Figure.

    Only patch sizes that divide ``img_size`` are allowed. Both counts are drawn on a log scale.
    """
    patch_sizes = list(patch_sizes)
    for size in patch_sizes:
        check_positive_int("every patch size", size)
    bad = [p for p in patch_sizes if img_size % p]
    if bad or not patch_sizes:
        raise ValueError(f"patch sizes must be positive ints dividing img_size={img_size}, got {patch_sizes}")
    tokens = np.array([(img_size // p) ** 2 + 1 for p in patch_sizes])
    fig, ax = plt.subplots(figsize=(1.5 + 0.8 * len(patch_sizes), 3.4), layout="constrained")
    positions = np.arange(len(patch_sizes))
    for offset, counts, label, color in ((-0.2, tokens, "tokens (patches + CLS)", "tab:blue"),
                                         (0.2, tokens ** 2, "attention weights per head (tokens²)", "tab:orange")):
        bars = ax.bar(positions + offset, counts, width=0.4, label=label, color=color)
        ax.bar_label(bars, fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(positions, [str(p) for p in patch_sizes])
    ax.set_xlabel("patch size (pixels per side)")
    ax.set_ylabel("count (log scale)")
    ax.set_title(f"a {img_size}x{img_size} image")
    ax.legend(fontsize=8)
    return fig


def confusion_heatmap(confusion, class_names, title="confusion matrix"):
    """A confusion matrix drawn with ``seaborn.heatmap``: rows true classes, columns predictions.

    ``confusion`` ``(n_classes, n_classes)`` counts (``models.confusion_matrix``). Each cell
    shows its count; the colour is the share of its row, so a perfect classifier is a bright
    diagonal whatever the class sizes. Returns the Figure.
    """
    import seaborn as sns  # imported here: importing the plots stays light

    counts = _as_numpy(confusion, float)
    n_classes = len(class_names)
    if counts.shape != (n_classes, n_classes):
        raise ValueError(f"expected a ({n_classes}, {n_classes}) matrix for {n_classes} classes, got {counts.shape}")
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    fig, ax = plt.subplots(figsize=(2.0 + 1.3 * n_classes, 1.2 + 1.0 * n_classes), layout="constrained")
    sns.heatmap(shares, annot=counts.astype(int), fmt="d", cmap="Blues", vmin=0.0, vmax=1.0,
                xticklabels=[textwrap.fill(name, 12) for name in class_names],  # long names on two lines
                yticklabels=class_names, cbar_kws={"label": "share of the true class"},
                linewidths=0.5, linecolor="white", square=True, ax=ax)
    ax.set_xlabel("predicted class", labelpad=8)
    ax.set_ylabel("true class")
    ax.tick_params(axis="y", rotation=0)
    ax.set_title(title)
    return fig


def cls_attention_overlay(image, attention, ax, title=None, alpha=0.45):
    """Draw a grey image with the CLS token's attention over its patches laid on top, on ``ax``.

    ``attention`` ``(grid, grid)``: one weight per patch; each patch is coloured by its weight
    on a fixed 0-1 scale (a weight of 1 is the whole head's attention on that patch) and
    labelled with it in white outlined in black, readable on any colour. Returns the overlay's
    image (for a colour bar).
    """
    image = _one_image(image)
    attention = _as_numpy(attention, float)
    if attention.ndim != 2:
        raise ValueError(f"expected one head's attention over the patch grid (grid, grid), got {attention.shape}")
    height, width = image.shape
    if height % attention.shape[0] or width % attention.shape[1]:
        raise ValueError(f"a {attention.shape[0]}x{attention.shape[1]} patch grid does not tile a "
                         f"{height}x{width} image")
    _show_image(ax, image)
    overlay = ax.imshow(attention, cmap="inferno", vmin=0.0, vmax=1.0, alpha=alpha, interpolation="nearest",
                        extent=(-0.5, width - 0.5, height - 0.5, -0.5))
    patch_h, patch_w = height // attention.shape[0], width // attention.shape[1]
    for row in range(1, attention.shape[0]):  # the patch borders
        ax.axhline(row * patch_h - 0.5, color="white", lw=0.6, alpha=0.6)
    for col in range(1, attention.shape[1]):
        ax.axvline(col * patch_w - 0.5, color="white", lw=0.6, alpha=0.6)
    for row in range(attention.shape[0]):
        for col in range(attention.shape[1]):
            ax.text((col + 0.5) * patch_w - 0.5, (row + 0.5) * patch_h - 0.5, f"{attention[row, col]:.2f}",
                    ha="center", va="center", fontsize=7, color="white",
                    path_effects=[patheffects.withStroke(linewidth=2, foreground="black")])
    if title:
        ax.set_title(title, fontsize=9)
    return overlay


def cls_attention_maps(images, attention, titles=None):
    """The CLS token's attention, per head, over a few images; returns the Figure.

    ``images`` ``(n, 1, H, W)``; ``attention`` ``(n, n_heads, grid, grid)`` (``models.cls_attention``).
    One row per image: the image itself, then one overlay per head. ``titles``: one line per
    image (e.g. its true and predicted class), shown above its first panel.
    """
    images, attention = _as_numpy(images, float), _as_numpy(attention, float)
    if attention.ndim != 4 or len(images) != len(attention):
        raise ValueError(f"expected images (n, 1, H, W) and attention (n, n_heads, grid, grid) for the same n, "
                         f"got {images.shape} and {attention.shape}")
    n_images, n_heads = attention.shape[:2]
    fig, axes = plt.subplots(n_images, n_heads + 1, figsize=(1.9 * (n_heads + 1) + 0.8, 2.0 * n_images),
                             squeeze=False, layout="constrained")
    for index, row in enumerate(axes):
        _show_image(row[0], _one_image(images[index]))
        row[0].set_title(titles[index] if titles is not None else f"image {index}", fontsize=8)
        for head in range(n_heads):
            overlay = cls_attention_overlay(images[index], attention[index, head], row[head + 1],
                                            title=f"head {head}" if index == 0 else None)
    fig.colorbar(overlay, ax=axes[:, 1:].ravel().tolist(), label="CLS attention weight", shrink=0.7)
    return fig
