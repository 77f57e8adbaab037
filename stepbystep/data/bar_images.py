"""Bar images: where a short bar lies, chapter 11's task that needs positions.

Each ``img_size × img_size`` image has a grey noisy background (uniform integers ``0 .. noise``,
as the line images) and one horizontal bar of ``bar_length`` white pixels (255) at a random
row and a random column. The label says which half of the image holds the bar: 0 for the top
half (row < ``img_size // 2``), 1 for the bottom half. Every patch that shows the bar looks
the same wherever the patch sits, so a model that does not know where its patches are cannot
get every image right.

No download: drawn from a private ``np.random.RandomState``.
"""
import numpy as np
import torch
from torch.utils.data import TensorDataset

from ..checks import check_int_range, check_non_negative_int, check_positive_int

__all__ = ["BAR_CLASSES", "bar_datasets", "generate_bars"]

BAR_CLASSES = ("top half", "bottom half")
BAR_VALUE = 255


def generate_bars(n_images, img_size=12, bar_length=4, noise=64, seed=0):
    """``n_images`` bar images: uint8 ``(n, 1, img_size, img_size)``, labels int64 ``(n,)``
    (0: the bar is in the top half, 1: in the bottom half), and the bars' rows ``(n,)``."""
    check_positive_int("n_images", n_images)
    check_int_range("img_size", img_size, 2)
    check_int_range("bar_length", bar_length, 1, img_size)
    check_int_range("noise", noise, 0, BAR_VALUE - 1)
    check_non_negative_int("seed", seed)
    rng = np.random.RandomState(seed)
    rows = rng.randint(0, img_size, size=n_images)  # (n,)
    columns = rng.randint(0, img_size - bar_length + 1, size=n_images)  # (n,)
    images = rng.randint(0, noise + 1, size=(n_images, img_size, img_size)).astype(np.uint8)  # (n, s, s)
    for image, row, column in zip(images, rows, columns):
        image[row, column:column + bar_length] = BAR_VALUE
    labels = (rows >= img_size // 2).astype(np.int64)  # (n,)
    return images[:, None], labels, rows.astype(np.int64)


def bar_datasets(n_train=800, n_val=500, img_size=12, bar_length=4, noise=64, seed=0):
    """Training and held-out ``TensorDataset``s of bar images in ``[0, 1]`` ``(N, 1, s, s)`` and
    labels ``(N,)``: the first ``n_train`` of ``generate_bars(n_train + n_val, ...)``, then the rest."""
    check_positive_int("n_train", n_train)
    check_positive_int("n_val", n_val)
    images, labels, _ = generate_bars(n_train + n_val, img_size, bar_length, noise, seed)
    x = torch.as_tensor(images, dtype=torch.float32) / BAR_VALUE  # (n, 1, s, s)
    y = torch.as_tensor(labels)  # (n,)
    return TensorDataset(x[:n_train], y[:n_train]), TensorDataset(x[n_train:], y[n_train:])
