"""Kernel regression (chapter 01): fits for several widths, the kernel, the weights, the LOO curve."""
import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
import torch

from ..models.kernel_regression import gaussian_kernel, nadaraya_watson
from ._arrays import _as_numpy

__all__ = ["kernel_shapes", "kernel_fits", "kernel_weights", "loo_curve", "loo_zoom", "kernel_dashboard",
           "dot_product_weights", "query_attention"]


def _new_axes(ax, figsize):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        return fig, ax
    return ax.figure, ax


def _edges(centres):
    """Cell edges around sorted centres ``(n,)``: midpoints inside, half a gap beyond the ends."""
    if len(centres) == 1:
        return np.array([centres[0] - 0.5, centres[0] + 0.5])
    mids = (centres[1:] + centres[:-1]) / 2  # (n - 1,)
    return np.concatenate([[2 * centres[0] - mids[0]], mids, [2 * centres[-1] - mids[-1]]])  # (n + 1,)


def _draw_fit(ax, x_train, y_train, x_grid, predictions, y_true, title):
    ax.scatter(x_train, y_train, s=12, color="tab:gray", alpha=0.7, label="training points")
    if y_true is not None:
        ax.plot(x_grid, y_true, color="tab:green", ls="--", lw=1, label="true function")
    ax.plot(x_grid, predictions, color="tab:blue", lw=2, label="prediction")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title)


def _draw_kernel(ax, sigmas, max_distance):
    distance = torch.linspace(-max_distance, max_distance, 201)  # (201,)
    for sigma in sigmas:
        ax.plot(distance.numpy(), gaussian_kernel(distance, float(sigma)).numpy(), label=f"σ = {float(sigma):.3g}")
    ax.set_xlabel("distance x − xⱼ")
    ax.set_ylabel("kernel K(x − xⱼ)")
    ax.set_title("Gaussian kernel")


def _draw_weights(ax, weights, queries, keys, title):
    """Weights ``(n_q, n_k)`` as a heatmap over positions: a row per query, a column per key."""
    weights, queries, keys = _as_numpy(weights, float), _as_numpy(queries, float), _as_numpy(keys, float)
    if weights.ndim != 2 or weights.shape != (len(queries), len(keys)):
        raise ValueError(f"weights must have shape (n_queries, n_keys) = ({len(queries)}, {len(keys)}), "
                         f"got {weights.shape}")
    q_order, k_order = np.argsort(queries), np.argsort(keys)
    sorted_weights = weights[q_order][:, k_order]  # (n_q, n_k)
    key_edges, query_edges = _edges(keys[k_order]), _edges(queries[q_order])  # (n_k + 1,), (n_q + 1,)
    mesh = ax.pcolormesh(key_edges, query_edges, sorted_weights,
                         cmap="viridis", vmin=0.0, vmax=max(sorted_weights.max(), 1e-12))
    low, high = max(key_edges[0], query_edges[0]), min(key_edges[-1], query_edges[-1])
    ax.plot([low, high], [low, high], color="white", lw=0.8, ls=":", label="query = key (x = xⱼ)")
    ax.set_xlabel("key: training input xⱼ")
    ax.set_ylabel("query: input x")
    ax.set_title(title)
    ax.invert_yaxis()
    return mesh


def kernel_shapes(sigmas, max_distance=None, ax=None):
    """The Gaussian kernel ``exp(-u²/(2σ²))`` against the distance ``u``, one curve per width.

    ``max_distance`` defaults to three times the largest σ. Returns the Figure.
    """
    sigmas = [float(s) for s in np.atleast_1d(_as_numpy(sigmas, float))]
    if not sigmas or min(sigmas) <= 0:
        raise ValueError(f"sigmas must be positive widths, got {sigmas}")
    fig, ax = _new_axes(ax, (5, 3.2))
    _draw_kernel(ax, sigmas, max_distance or 3 * max(sigmas))
    ax.legend(fontsize=8)
    return fig


def kernel_fits(x_train, y_train, x_grid, sigmas, y_true=None, n_cols=3):
    """Nadaraya-Watson fits on ``x_grid`` for each width in ``sigmas``, one panel per width.

    Small widths chase the noise (under-smoothing); large ones flatten the curve towards the
    mean of ``y_train`` (over-smoothing). ``y_true`` (on ``x_grid``) adds the noise-free curve.
    Returns the Figure.
    """
    sigmas = [float(s) for s in np.atleast_1d(_as_numpy(sigmas, float))]
    n_cols = min(n_cols, len(sigmas))
    n_rows = math.ceil(len(sigmas) / n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(3.4 * n_cols, 2.6 * n_rows), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    with torch.no_grad():
        fits = [nadaraya_watson(x_grid, x_train, y_train, sigma)[0] for sigma in sigmas]
    truth = None if y_true is None else _as_numpy(y_true, float)
    for ax, sigma, predictions in zip(axes.flat, sigmas, fits):
        _draw_fit(ax, _as_numpy(x_train, float), _as_numpy(y_train, float), _as_numpy(x_grid, float),
                  _as_numpy(predictions, float), truth, f"σ = {sigma:.3g}")
    for ax in axes.flat[len(sigmas):]:
        ax.remove()
    axes.flat[0].legend(fontsize=7, loc="upper left")
    return fig


def kernel_weights(weights, queries, keys, title="which training points each query attends to", ax=None):
    """Heatmap of the weights ``(n_queries, n_keys)`` placed at the actual positions.

    Row = a query position, column = a training input (key); the colour is how much of the
    prediction at that query comes from that key. A narrow kernel gives a thin bright band
    along the dotted diagonal (attend to near neighbours only), a wide one a broad haze.
    Returns the Figure.
    """
    fig, ax = _new_axes(ax, (4.6, 4.2))
    mesh = _draw_weights(ax, weights, queries, keys, title)
    fig.colorbar(mesh, ax=ax, label="weight α")
    _diagonal_legend(ax)
    return fig


def _diagonal_legend(ax):
    """The dotted query = key line's legend, below the axes (never over the weights)."""
    legend = ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8, frameon=False)
    legend.get_lines()[0].set_color("black")  # the line is white on the weights, the legend sits on white


def loo_curve(sigmas, errors, learned_sigma=None, ax=None):
    """Leave-one-out error against σ (log-log scales), with the minimum marked.

    ``learned_sigma`` (optional) adds a vertical line for the width found by gradient descent.
    Returns the Figure.
    """
    sigmas, errors = _as_numpy(sigmas, float), _as_numpy(errors, float)
    if sigmas.ndim != 1 or sigmas.shape != errors.shape:
        raise ValueError(f"sigmas and errors must be 1-D of the same length, got {sigmas.shape} and {errors.shape}")
    fig, ax = _new_axes(ax, (5, 3.2))
    ax.plot(sigmas, errors, color="tab:blue", label="leave-one-out MSE")
    best = int(np.argmin(errors))
    ax.scatter([sigmas[best]], [errors[best]], color="tab:red", zorder=3,
               label=f"grid minimum: σ = {sigmas[best]:.3g}")
    if learned_sigma is not None:
        ax.axvline(float(learned_sigma), color="tab:orange", ls="--",
                   label=f"learned: σ = {float(learned_sigma):.3g}")
    ax.set_xscale("log")
    if errors.min() > 0:
        ax.set_yscale("log")  # the minimum is a dip of a few tenths next to errors in the tens
        ax.yaxis.set_minor_locator(ticker.LogLocator(base=10, subs=(0.2, 0.3, 0.5)))
        ax.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))  # label 0.2, 0.3, 0.5, 2, 3, 5 too
        ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.set_xlabel("kernel width σ")
    ax.set_ylabel("leave-one-out MSE")
    ax.set_title("choosing σ by leave-one-out error")
    ax.legend(fontsize=8)
    return fig


def loo_zoom(sigmas, errors, fine_sigmas, fine_errors, learned):
    """The leave-one-out curve (left), a zoom on its minimum (right) and, under the zoom, the learned widths.

    ``sigmas``, ``errors``: the grid's curve, drawn as ``loo_curve`` does, with the zoomed range
    shaded. ``fine_sigmas``, ``fine_errors``: a fine grid over that range; the zoom marks its
    minimum σ* and the coarse grid's best (if inside the range). Each list of widths in
    ``learned`` ``{label: [σ, ...]}`` is a row of ticks in a strip under the zoom, on the same σ
    axis, named by its row label: a tick's height means nothing, only its position in σ.
    Returns the Figure; its axes are the curve, the zoom and the strip.
    """
    fine_sigmas, fine_errors = _as_numpy(fine_sigmas, float), _as_numpy(fine_errors, float)
    if fine_sigmas.ndim != 1 or fine_sigmas.shape != fine_errors.shape:
        raise ValueError(f"fine_sigmas and fine_errors must be 1-D of the same length, "
                         f"got {fine_sigmas.shape} and {fine_errors.shape}")
    if not isinstance(learned, dict) or not learned:
        raise ValueError(f"learned must be a non-empty dict {{label: [sigma, ...]}}, got {type(learned).__name__}")
    fig = plt.figure(figsize=(10, 3.8), layout="constrained")
    grid = fig.add_gridspec(2, 2, height_ratios=(4, 0.25 + 0.35 * len(learned)))
    ax_all = fig.add_subplot(grid[:, 0])
    ax_zoom = fig.add_subplot(grid[0, 1])
    ax_rug = fig.add_subplot(grid[1, 1], sharex=ax_zoom)
    loo_curve(sigmas, errors, ax=ax_all)
    low, high = fine_sigmas.min(), fine_sigmas.max()
    ax_all.axvspan(low, high, color="tab:gray", alpha=0.2, label="zoomed on the right")
    ax_all.legend(fontsize=8)
    ax_zoom.plot(fine_sigmas, fine_errors, color="tab:blue")
    star = fine_sigmas[np.argmin(fine_errors)]
    sigmas, errors = _as_numpy(sigmas, float), _as_numpy(errors, float)
    best = int(np.argmin(errors))
    if low <= sigmas[best] <= high:
        ax_zoom.scatter([sigmas[best]], [errors[best]], color="tab:red", zorder=3,
                        label=f"grid minimum: σ = {sigmas[best]:.4f}")
    colours = ("tab:orange", "tab:purple", "tab:green", "tab:brown")
    for row, ((label, widths), colour) in enumerate(zip(learned.items(), colours)):
        widths = _as_numpy(widths, float)
        ax_rug.vlines(widths, row - 0.35, row + 0.35, color=colour, lw=1.5)  # row `row` of the strip, in data units
    ax_rug.axvline(star, color="black", ls="--", lw=1)
    ax_zoom.axvline(star, color="black", ls="--", lw=1, label=f"σ* (fine grid) = {star:.4f}")
    ax_rug.set_yticks(range(len(learned)), [f"{label} ({len(widths)} runs)" for label, widths in learned.items()],
                      fontsize=8)
    ax_rug.set_ylim(len(learned) - 0.5, -0.5)  # the first list on top
    for tick, colour in zip(ax_rug.get_yticklabels(), colours):
        tick.set_color(colour)
    ax_zoom.set_xlim(low, high)
    ax_zoom.tick_params(labelbottom=False)
    spread = fine_errors.max() - fine_errors.min()
    ax_zoom.set_ylim(fine_errors.min() - 0.05 * spread, fine_errors.max() + 0.05 * spread)
    ax_rug.set_xlabel("kernel width σ")
    ax_zoom.set_ylabel("leave-one-out MSE")
    ax_zoom.set_title(f"zoom: σ from {low:.3f} to {high:.3f}; below it, the learned widths")
    ax_zoom.legend(fontsize=8, loc="upper center")
    return fig


def kernel_dashboard(x_train, y_train, x_grid, fit, y_true=None, fig=None, best=None):
    """The σ widget's figure: the fit, the kernel and the weights for one ``KernelFit``.

    Draws on ``fig`` after clearing it (so a widget can redraw one figure in place), or on a
    new figure. The title carries σ and the leave-one-out error, and with ``best`` ``(σ,
    error)`` the lowest leave-one-out error to compare with. Returns the Figure.
    """
    if fig is None:
        fig = plt.figure(figsize=(12, 3.6), layout="constrained")
    fig.clear()
    ax_fit, ax_kernel, ax_weights = fig.subplots(1, 3)
    _draw_fit(ax_fit, _as_numpy(x_train, float), _as_numpy(y_train, float), _as_numpy(x_grid, float),
              _as_numpy(fit.predictions, float), None if y_true is None else _as_numpy(y_true, float), "fit")
    ax_fit.legend(fontsize=7, loc="upper left")
    _draw_kernel(ax_kernel, [fit.sigma], max_distance=5.0)
    ax_kernel.set_ylim(-0.05, 1.05)
    mesh = _draw_weights(ax_weights, fit.weights, x_grid, x_train, "weights α (query × key)")
    fig.colorbar(mesh, ax=ax_weights, label="weight α")
    title = f"σ = {fit.sigma:.3g}   leave-one-out MSE = {fit.loo_error:.3f}"
    if best is not None:
        title += f"   (lowest: {float(best[1]):.3f} at σ = {float(best[0]):.3g})"
    fig.suptitle(title)
    return fig


def dot_product_weights(x_train, y_train, x_grid, sigma, y_true=None):
    """Gaussian-kernel weights next to the weights of the product scores ``q·k/σ²`` alone.

    Left: the kernel's weights (``softmax(-(q - k)²/2σ²)``); middle: the weights of
    ``softmax(q·k/σ²)``, the per-key term ``-k²/2σ²`` dropped; right: both fits. With keys of
    different sizes the product favours the largest key, so its weights pile up in one column.
    Returns the Figure.
    """
    x_train, y_train, x_grid = (torch.as_tensor(_as_numpy(t, float), dtype=torch.float32)
                                for t in (x_train, y_train, x_grid))
    if x_train.ndim != 1 or x_train.shape != y_train.shape or x_grid.ndim != 1:
        raise ValueError(f"x_train and y_train must be 1-D of one length and x_grid 1-D, got "
                         f"{tuple(x_train.shape)}, {tuple(y_train.shape)} and {tuple(x_grid.shape)}")
    if not float(sigma) > 0:
        raise ValueError(f"sigma must be a positive width, got {sigma}")
    kernel_weights_ = nadaraya_watson(x_grid, x_train, y_train, float(sigma))[1]  # (n_q, n_k)
    product_weights = torch.softmax(x_grid[:, None] * x_train[None, :] / float(sigma) ** 2, dim=-1)  # (n_q, n_k)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), layout="constrained")
    for ax, weights, title in ((axes[0], kernel_weights_, "kernel: −(q − k)²/2σ²"),
                               (axes[1], product_weights, "product only: q·k/σ²")):
        mesh = _draw_weights(ax, weights, x_grid, x_train, f"scores {title}")
        fig.colorbar(mesh, ax=ax, label="weight α")
        _diagonal_legend(ax)
    truth = None if y_true is None else _as_numpy(y_true, float)
    _draw_fit(axes[2], x_train.numpy(), y_train.numpy(), x_grid.numpy(), (kernel_weights_ @ y_train).numpy(),
              truth, f"fits, σ = {float(sigma):.3g}")
    axes[2].lines[-1].set_label("kernel fit")
    axes[2].plot(x_grid.numpy(), (product_weights @ y_train).numpy(), color="tab:red", lw=2, label="product-only fit")
    axes[2].legend(fontsize=7, loc="lower right")
    return fig


def query_attention(x_train, y_train, query, sigma, x_grid=None, y_true=None):
    """What one query attends to: the training points sized by their weight, and the weights.

    Top: the data, each training point's area growing with its weight for the query at
    ``query``, and the prediction there. Bottom: the weights ``α(query, xⱼ)`` as stems, on
    the curve ``K(x − query) / Σⱼ K(xⱼ − query)``, which every weight lies on. Returns the Figure.
    """
    x_train = torch.as_tensor(_as_numpy(x_train, float), dtype=torch.float32)
    y_train = torch.as_tensor(_as_numpy(y_train, float), dtype=torch.float32)
    if x_train.ndim != 1 or x_train.shape != y_train.shape:
        raise ValueError(f"x_train and y_train must be 1-D of one length, got {tuple(x_train.shape)} and "
                         f"{tuple(y_train.shape)}")
    if not float(sigma) > 0:
        raise ValueError(f"sigma must be a positive width, got {sigma}")
    query_t = torch.tensor([float(query)])  # (1,)
    prediction, weights = nadaraya_watson(query_t, x_train, y_train, float(sigma))  # (1,), (1, n)
    weights = weights[0].numpy()  # (n,)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.5, 5), sharex=True, height_ratios=(3, 2), layout="constrained")
    if x_grid is not None and y_true is not None:
        top.plot(_as_numpy(x_grid, float), _as_numpy(y_true, float), color="tab:green", ls="--", lw=1,
                 label="true function")
    top.scatter(x_train.numpy(), y_train.numpy(), s=5 + 400 * weights, color="tab:blue", alpha=0.6,
                label="training point (area grows with weight)")
    top.scatter([float(query)], [float(prediction)], marker="*", s=200, color="tab:red", zorder=3,
                label=f"prediction at x = {float(query):.3g}")
    top.axvline(float(query), color="tab:red", lw=0.8, ls=":")
    top.set_ylabel("y")
    top.set_title(f"what the query at x = {float(query):.3g} attends to (σ = {float(sigma):.3g})")
    top.legend(fontsize=7, loc="upper left")
    bottom.vlines(x_train.numpy(), 0, weights, color="tab:blue", lw=1.5)
    bottom.scatter(x_train.numpy(), weights, color="tab:blue", s=10, label="weight α of each training point")
    curve_x = torch.linspace(float(x_train.min()), float(x_train.max()), 400)  # (400,)
    curve = gaussian_kernel(curve_x - float(query), float(sigma)).numpy()  # (400,)
    total = float(gaussian_kernel(x_train - float(query), float(sigma)).sum())  # Σⱼ K(xⱼ − query)
    curve = curve / total  # (400,) the weight a training point at curve_x would get
    bottom.plot(curve_x.numpy(), curve, color="tab:gray", lw=1,
                label="K(x − query) / Σ K: every weight lies on it")
    bottom.axvline(float(query), color="tab:red", lw=0.8, ls=":")
    bottom.set_xlabel("x")
    bottom.set_ylabel("weight α")
    bottom.set_ylim(0, max(weights.max(), curve.max()) * 1.5)
    bottom.legend(fontsize=7, loc="upper left")
    return fig
