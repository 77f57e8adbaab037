"""Chapter 11's figures: line images, patches, token counts, confusion matrices (one run or over seeds),
errors by line length, the learned position table's similarities, CLS attention."""
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
    "confusion_over_seeds",
    "error_by_length",
    "position_similarity_grid",
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
    """One image cut into patches: the patches pulled apart in place, and the patches as a sequence.

    Left: the image's patches, each framed and moved apart from its neighbours, numbered row by
    row in the gap above it (no number hides a pixel). Right: the same patches side by side in
    that order, the sequence of tokens the Transformer reads. Returns the Figure.
    """
    image = _one_image(image)
    height, width = image.shape
    check_positive_int("patch_size", patch_size)
    if height % patch_size or width % patch_size:
        raise ValueError(f"patch_size must be a positive int dividing the image's {height}x{width} pixels, "
                         f"got {patch_size!r}")
    rows, cols = height // patch_size, width // patch_size
    n_patches = rows * cols
    gap = max(1.5, 0.4 * patch_size)  # pixels between two patches, room for a number
    fig = plt.figure(figsize=(3.0 + 0.8 * n_patches, 3.0), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=[3.0, 0.8 * n_patches])
    ax = left.subplots()
    for number in range(n_patches):
        row, col = divmod(number, cols)
        x0, y0 = col * (patch_size + gap), gap + row * (patch_size + gap)  # the patch's top-left corner
        pixels = image[row * patch_size:(row + 1) * patch_size, col * patch_size:(col + 1) * patch_size]
        ax.imshow(pixels, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest",
                  extent=(x0, x0 + patch_size, y0 + patch_size, y0))
        ax.add_patch(Rectangle((x0 - 0.2, y0 - 0.2), patch_size + 0.4, patch_size + 0.4, fill=False,
                               edgecolor="tab:orange", lw=2))  # just outside the pixels
        ax.text(x0 + patch_size / 2, y0 - gap / 2, str(number), color="tab:orange", fontsize=9,
                ha="center", va="center", fontweight="bold")
    ax.set_xlim(-gap / 2, cols * (patch_size + gap) - gap / 2)
    ax.set_ylim(rows * (patch_size + gap) + gap / 2, 0)
    ax.set_aspect("equal")
    ax.axis("off")
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


def confusion_over_seeds(confusions, class_names):
    """One confusion matrix per model, summarised over seeds; returns the Figure.

    ``confusions`` ``{model name: (seeds, n_classes, n_classes) counts}``. Each cell shows the
    median count over the seeds and, below it, the smallest and largest; its colour is the
    median of the row shares, so a perfect classifier is a bright diagonal.
    """
    import seaborn as sns  # imported here: importing the plots stays light

    n_classes = len(class_names)
    if not confusions:
        raise ValueError("confusions must hold at least one model")
    fig, axes = plt.subplots(1, len(confusions), figsize=(0.6 + (1.3 * n_classes + 0.9) * len(confusions),
                                                          1.6 + 1.0 * n_classes), squeeze=False, layout="constrained")
    for ax, (name, counts) in zip(axes[0], confusions.items()):
        counts = _as_numpy(counts, float)
        if counts.ndim != 3 or counts.shape[1:] != (n_classes, n_classes):
            raise ValueError(f"{name}: expected (seeds, {n_classes}, {n_classes}) counts, got {counts.shape}")
        totals = counts.sum(axis=2, keepdims=True)  # (seeds, n, 1)
        shares = np.median(np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0), axis=0)  # (n, n)
        low, middle, high = counts.min(axis=0), np.median(counts, axis=0), counts.max(axis=0)  # (n, n) each
        labels = np.array([[f"{middle[i, j]:g}\n({low[i, j]:g}-{high[i, j]:g})" for j in range(n_classes)]
                           for i in range(n_classes)])
        sns.heatmap(shares, annot=labels, fmt="", annot_kws={"fontsize": 8}, cmap="Blues", vmin=0.0, vmax=1.0,
                    xticklabels=[textwrap.fill(name, 12) for name in class_names],
                    yticklabels=class_names if ax is axes[0, 0] else False, cbar=ax is axes[0, -1],
                    cbar_kws={"label": "share of the true class (median)"}, linewidths=0.5, linecolor="white",
                    square=True, ax=ax)
        ax.set_xlabel("predicted class", labelpad=8)
        ax.tick_params(axis="y", rotation=0)
        ax.set_title(f"{name}: median of {counts.shape[0]} seeds\n(smallest-largest)", fontsize=9)
    axes[0, 0].set_ylabel("true class")
    return fig


def error_by_length(bins, errors):
    """The share of images each model gets wrong, by the length of their line; returns the Figure.

    ``bins``: one label per length range; ``errors`` ``{model name: (seeds, len(bins)) shares}``.
    Each seed is a dot, the median a line.
    """
    bins = list(bins)
    if not errors:
        raise ValueError("errors must hold at least one model")
    fig, ax = plt.subplots(figsize=(1.2 * len(bins) + 2.6, 3.4), layout="constrained")
    positions = np.arange(len(bins))
    for column, (name, shares) in enumerate(errors.items()):
        shares = _as_numpy(shares, float)
        if shares.ndim != 2 or shares.shape[1] != len(bins):
            raise ValueError(f"{name}: expected (seeds, {len(bins)}) shares, got {shares.shape}")
        offset = (column - (len(errors) - 1) / 2) * 0.12
        for seed_shares in shares:
            ax.scatter(positions + offset, seed_shares, color=f"C{column}", s=16, alpha=0.6)
        ax.plot(positions + offset, np.median(shares, axis=0), color=f"C{column}", marker="_", markersize=14,
                label=f"{name} ({shares.shape[0]} seeds; line: median)")
    ax.set_xticks(positions, bins)
    ax.set_xlabel("pixels in the line")
    ax.set_ylabel("share of the images wrong")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, frameon=False)
    ax.set_title("where the mistakes are: each seed a dot", fontsize=10)
    return fig


def position_similarity_grid(similarities):
    """What learned position tables hold, as in Dosovitskiy et al.'s Figure 7; returns the Figure.

    ``similarities`` ``{title: (n_patches, n_patches)}`` cosine similarities (a square grid of
    patches). For each table, the cell of patch (row, column) is a small map of that patch's
    similarity to every patch, laid out as the image's grid.
    """
    if not similarities:
        raise ValueError("similarities must hold at least one table")
    tables = {title: _as_numpy(table, float) for title, table in similarities.items()}
    for title, table in tables.items():
        grid = round(table.shape[0] ** 0.5) if table.ndim == 2 else 0
        if table.ndim != 2 or table.shape[0] != table.shape[1] or grid * grid != table.shape[0]:
            raise ValueError(f"{title}: expected (n_patches, n_patches) for a square grid, got {table.shape}")
    grid = round(next(iter(tables.values())).shape[0] ** 0.5)
    fig = plt.figure(figsize=(3.3 * len(tables) + 1.2, 3.6), layout="constrained")
    *panels, bar_panel = fig.subfigures(1, len(tables) + 1, width_ratios=[3.3] * len(tables) + [1.2])
    for panel, (title, table) in zip(panels, tables.items()):  # every table gets the same room, laid out alike
        axes = panel.subplots(grid, grid, squeeze=False)
        for patch, ax in enumerate(axes.ravel()):
            image = ax.imshow(table[patch].reshape(grid, grid), cmap="RdBu_r", vmin=-1, vmax=1,
                              interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
        for row in range(grid):
            axes[row, 0].set_ylabel(f"row {row}", fontsize=8)
        for column in range(grid):
            axes[-1, column].set_xlabel(f"column {column}", fontsize=8)
        panel.suptitle(title, fontsize=9)
    bar_panel.colorbar(image, cax=bar_panel.add_axes((0.08, 0.15, 0.15, 0.7)), label="cosine similarity")
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
