"""The book's pictures of convolutional layers: their filters, and what hooked layers output."""
import matplotlib.pyplot as plt
import numpy as np

from ._arrays import _as_numpy

__all__ = ["filter_grid", "output_grid"]


def _bare(ax):
    ax.set_xticks([])
    ax.set_yticks([])


def filter_grid(weights, layer_name="", **imshow_kwargs):
    """A Conv2d weight ``(n_filters, n_channels, kh, kw)`` as a grid of small grey images.

    One row per filter, one column per input channel, all on the same colour scale so
    filters compare at a glance; ``imshow_kwargs`` override it (``cmap``, ``vmin``, ...).
    Returns the Figure.
    """
    weights = _as_numpy(weights)
    if weights.ndim != 4:
        raise ValueError(f"weights must be (n_filters, n_channels, kh, kw), got shape {weights.shape}")
    n_filters, n_channels = weights.shape[:2]
    options = {"cmap": "gray", "vmin": weights.min(), "vmax": weights.max(), **imshow_kwargs}
    fig, axes = plt.subplots(n_filters, n_channels, figsize=(1.5 * n_channels + 1, 1.5 * n_filters),
                             squeeze=False, layout="constrained")
    for i in range(n_filters):
        for j in range(n_channels):
            ax = axes[i, j]
            ax.imshow(weights[i, j], **options)  # (kh, kw)
            _bare(ax)
            if i == 0:
                ax.set_title(f"channel #{j}")
            if j == 0:
                ax.set_ylabel(f"{layer_name}\nfilter #{i}".strip())
    return fig


def _label(values, index):
    """``values[index]`` as a short string: an int as it is, other numbers with 2 digits."""
    value = _as_numpy(values)[index].squeeze()
    value = value.item() if value.size == 1 else value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:.2g}" if isinstance(value, float) else str(value)


def _rows(name, output):
    """One recorded output -> ``[(row label, images)]``, images ``(N, H, W)`` or ``(N, 1, F)``."""
    if output.ndim == 2:  # (N, F): each vector drawn as a strip
        return [(name, output[:, None, :])]
    if output.ndim == 3:  # (N, H, W)
        return [(name, output)]
    if output.ndim == 4:  # (N, C, H, W): a row per channel
        return [(f"{name}\nchannel #{c}", output[:, c]) for c in range(output.shape[1])]
    raise ValueError(f"the output of {name!r} must be (N, F), (N, H, W) or (N, C, H, W), got shape {output.shape}")


def output_grid(outputs, n_images=10, y=None, yhat=None):
    """What hooked layers output, image by image: one column per image, one row per channel.

    ``outputs`` maps layer names to recorded arrays (``StepByStep.visualization``). Each row
    shares one grey scale. The first row's titles number the images and, when given, show
    their label ``y`` and prediction ``yhat``. Returns the Figure.
    """
    rows = [row for name, output in outputs.items() for row in _rows(name, _as_numpy(output))]
    if not rows:
        raise ValueError("outputs must name at least one recorded layer, got none")
    n_images = min(n_images, *(len(images) for _, images in rows))
    fig, axes = plt.subplots(len(rows), n_images, figsize=(1.5 * n_images + 1, 1.5 * len(rows)),
                             squeeze=False, layout="constrained")
    for r, (label, images) in enumerate(rows):
        shown = images[:n_images]  # (n_images, H, W)
        for j in range(n_images):
            ax = axes[r, j]
            ax.imshow(shown[j], cmap="gray", vmin=shown.min(), vmax=shown.max(), aspect="auto")
            _bare(ax)
            if j == 0:
                ax.set_ylabel(label)
            if r == 0:
                title = f"image #{j}"
                if y is not None:
                    title += f"\nlabel {_label(y, j)}"
                if yhat is not None:
                    title += f"\npred {_label(yhat, j)}"
                ax.set_title(title, fontsize=9)
    return fig
