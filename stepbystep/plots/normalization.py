"""Normalisation figures: layer norm step by step, batch norm vs layer norm, and d_model = 2."""
import matplotlib.pyplot as plt
import numpy as np

from ._arrays import _as_numpy

__all__ = ["layer_norm_by_hand", "batch_vs_layer_norm", "layer_norm_collapse"]

_GROUP_COLORS = ("tab:blue", "tab:orange", "tab:gray", "tab:green", "tab:purple")


def _token_rows(ax, values, title):
    """Each token a row: its features as dots, its mean as a bar and ±1 std as a line."""
    for row, features in enumerate(values):
        mean, std = features.mean(), features.std()
        ax.plot([mean - std, mean + std], [row, row], color="tab:gray", lw=6, alpha=0.35,
                solid_capstyle="butt", label="mean ± std" if row == 0 else None)
        ax.plot(features, np.full_like(features, row), "o", color="tab:blue", ms=5,
                label="features" if row == 0 else None)
        ax.plot([mean, mean], [row - 0.3, row + 0.3], color="black", lw=2)
    ax.set_yticks(range(len(values)))
    ax.invert_yaxis()
    ax.set_xlabel("feature value")
    ax.set_ylabel("token")
    ax.set_title(title)


def layer_norm_by_hand(x, normalised, reference):
    """Layer norm on a few tokens: before, after (by hand), and by hand vs ``nn.LayerNorm``.

    ``x``, ``normalised`` and ``reference`` are ``(n_tokens, d_model)``: the tokens, the
    learner's layer norm of them and PyTorch's. Left: each token's features with its mean and
    standard deviation; middle: the same after normalising (mean 0, std 1 per token); right:
    the two results against each other, with their largest difference. The legend sits below
    the left panel. Returns the Figure.
    """
    x, normalised, reference = _as_numpy(x, float), _as_numpy(normalised, float), _as_numpy(reference, float)
    if x.ndim != 2 or normalised.shape != x.shape or reference.shape != x.shape:
        raise ValueError(f"expected three (n_tokens, d_model) arrays of one shape, got "
                         f"{x.shape}, {normalised.shape} and {reference.shape}")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.2), layout="constrained",
                             gridspec_kw={"width_ratios": [1.2, 1.2, 1]})
    _token_rows(axes[0], x, "before: each token has its own mean and spread")
    _token_rows(axes[1], normalised, "after: mean 0, std 1 within each token")
    axes[0].legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2)  # below, off the data
    gap = float(np.abs(normalised - reference).max())
    axes[2].plot(reference.ravel(), normalised.ravel(), "o", ms=4)
    low, high = reference.min(), reference.max()
    axes[2].plot([low, high], [low, high], color="black", lw=0.8)
    axes[2].set_xlabel("PyTorch's layer norm")
    axes[2].set_ylabel("by hand")
    axes[2].set_title(f"same numbers: largest difference {gap:.1e}")
    return fig


def _group_summary(values):
    mean = round(float(values.mean()), 2) + 0.0  # + 0.0 turns a rounded -0.0 into 0.0
    return f"mean {mean:+.2f}, std {values.std():.2f}"


def batch_vs_layer_norm(raw, batch_normed, layer_normed, groups):
    """Histograms of a padded batch before and after batch norm and layer norm.

    ``raw``, ``batch_normed`` and ``layer_normed`` are ``(N, L, d_model)``; ``groups`` maps a
    label to a bool mask ``(N, L)`` choosing tokens (e.g. quiet sequences, loud sequences,
    padding). Each panel overlays one histogram per group, every feature of every chosen token;
    the legend gives each group's mean and standard deviation. Returns the Figure.
    """
    arrays = [_as_numpy(a, float) for a in (raw, batch_normed, layer_normed)]
    if arrays[0].ndim != 3 or any(a.shape != arrays[0].shape for a in arrays):
        raise ValueError(f"expected three (N, L, d_model) arrays of one shape, got {[a.shape for a in arrays]}")
    masks = {label: _as_numpy(mask, bool) for label, mask in groups.items()}
    for label, mask in masks.items():
        if mask.shape != arrays[0].shape[:2]:
            raise ValueError(f"group {label!r}: expected a mask of shape {arrays[0].shape[:2]}, got {mask.shape}")
    titles = ("before", "batch norm: statistics shared by the batch", "layer norm: statistics of each token")
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.4), layout="constrained")
    for ax, values, title in zip(axes, arrays, titles):
        bins = np.linspace(values.min(), values.max() + 1e-6, 41)
        for (label, mask), color in zip(masks.items(), _GROUP_COLORS):
            chosen = values[mask].ravel()  # (tokens in the group * d_model,)
            ax.hist(chosen, bins=bins, color=color, alpha=0.55, histtype="stepfilled",  # one patch, not one a bar
                    label=f"{label}: {_group_summary(chosen)}")
        ax.set_xlabel("value")
        ax.set_ylabel("count")
        ax.set_title(title)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22))  # below the panel, off the bars
    return fig


def _principal_components(values, n_components=2):
    centred = values - values.mean(axis=0)  # (n, d)
    _, _, directions = np.linalg.svd(centred, full_matrices=False)  # (d, d)
    return centred @ directions[:n_components].T  # (n, n_components)


def layer_norm_collapse(points, normed, labels, projected_normed=None, label_names=None):
    """Why layer norm on two features destroys the data, and how projecting first avoids it.

    ``points`` ``(n, 2)``: 2-D inputs (e.g. square corners); ``normed`` ``(n, 2)``: their layer
    norm, which lies on the line ``y = -x`` at ``(-1, 1)`` or ``(1, -1)`` unless the two features
    are nearly equal (the panel counts the points within 0.05 of each, by label); ``labels`` ``(n,)`` ints colour the
    points (e.g. which corner). ``projected_normed`` ``(n, d_model)``, optional: the layer norm
    after projecting the points to ``d_model`` features, drawn by its first two principal
    components. ``label_names``, optional, names each label in a legend. Returns the Figure.
    """
    points, normed, labels = _as_numpy(points, float), _as_numpy(normed, float), _as_numpy(labels).astype(int)
    if points.ndim != 2 or points.shape[1] != 2 or normed.shape != points.shape:
        raise ValueError(f"expected points and normed of shape (n, 2), got {points.shape} and {normed.shape}")
    if labels.shape != (len(points),):
        raise ValueError(f"expected one label per point, ({len(points)},), got {labels.shape}")
    panels = 2 if projected_normed is None else 3
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 4), layout="constrained")
    colors = plt.get_cmap("tab10")(labels % 10)
    for label in np.unique(labels):
        chosen = labels == label  # (n,)
        name = None if label_names is None else label_names[label]
        axes[0].scatter(points[chosen, 0], points[chosen, 1], color=colors[chosen][0], s=14, label=name)
    if label_names is not None:
        axes[0].legend(fontsize=7, loc="center")
    axes[0].set_title("inputs: two features")
    axes[1].scatter(normed[:, 0], normed[:, 1], c=colors, s=40, alpha=0.4)
    # the points at each end hide one another: count them by colour, in the panel's empty corners
    for corner, (x, y), align, step in (((-1.0, 1.0), (0.97, 0.97), ("right", "top"), -1),
                                        ((1.0, -1.0), (0.03, 0.03), ("left", "bottom"), 1)):
        near = (np.abs(normed - corner) < 0.05).all(axis=1)  # (n,)
        lines = [(f"{int(near.sum())} point{'s' if near.sum() != 1 else ''} near ({corner[0]:g}, {corner[1]:g}):",
                  "black")]
        for label in np.unique(labels[near]):
            name = f"label {label}" if label_names is None else label_names[label]
            lines.append((f"{int((near & (labels == label)).sum())} from {name}", plt.get_cmap("tab10")(label % 10)))
        if step > 0:  # stacked upwards from the bottom: the header goes last, on top
            lines = lines[::-1]
        for row, (text, color) in enumerate(lines):
            axes[1].text(x, y + step * 0.075 * row, text, color=color, fontsize=8, ha=align[0], va=align[1],
                         transform=axes[1].transAxes)
    axes[1].set_xlim(-1.6, 1.6)
    axes[1].set_ylim(-1.6, 1.6)
    axes[1].set_title("layer norm on d_model = 2: squeezed onto two points")
    for ax in axes[:2]:
        ax.set_xlabel("feature 0")
        ax.set_ylabel("feature 1")
        ax.set_aspect("equal")
    if projected_normed is not None:
        projected_normed = _as_numpy(projected_normed, float)
        if projected_normed.ndim != 2 or len(projected_normed) != len(points):
            raise ValueError(f"expected projected_normed of shape ({len(points)}, d_model), "
                             f"got {projected_normed.shape}")
        components = _principal_components(projected_normed)  # (n, 2)
        axes[2].scatter(components[:, 0], components[:, 1], c=colors, s=14)
        axes[2].set_xlabel("principal component 1")
        axes[2].set_ylabel("principal component 2")
        axes[2].set_title(f"projected to d_model = {projected_normed.shape[1]}, then layer norm")
    return fig
