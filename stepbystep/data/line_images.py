"""Line images: small grey pictures of one straight line, the image data of chapter 11.

After the book's chapter 10 (Godoy, *Deep Learning with PyTorch Step-by-Step*): each image is
``img_size × img_size`` pixels, black (0) except for one straight line of white pixels (255)
that runs from one edge of the image to another. The class is the line's direction:

* 0: horizontal or vertical (``─`` or ``│``), the whole width or height of the image;
* 1: the rising diagonal ``/``, going up to the right;
* 2: the falling diagonal ``\\``, going down to the right.

A line starts on the left edge (at a row ``1 .. img_size - 1``) or on the top or bottom edge
(at a column ``0 .. img_size - 1``; a diagonal never starts in column 0, it moves to column 1
as in the book). With ``noise`` the black background is no longer flat: every pixel off the
line gets a random grey level, so the model cannot find the line by looking for any pixel
that is not black.

No download: everything is drawn from a private ``np.random.RandomState``; the global NumPy
and PyTorch streams are never touched. With ``noise=0`` the same seed gives the book's images.
"""
import numpy as np
import torch
from torch.utils.data import TensorDataset

from ..checks import check_instance, check_int_range, check_non_negative_int, check_positive_int

__all__ = ["LINE_CLASSES", "LINE_NOISE", "generate_dataset", "line_datasets", "line_pixels"]

LINE_CLASSES = ("horizontal or vertical", "diagonal /", "diagonal \\")
LINE_VALUE = 255  # the pixels of the line
LINE_NOISE = 64  # by default, background pixels are uniform integers in 0..64, a quarter of the line


def line_pixels(start, direction, img_size=12):
    """The ``(rows, cols)`` of the line that starts at ``start`` in ``direction``.

    ``start`` in ``-(img_size - 1) .. img_size - 1``: a positive value is a row on the left
    edge, zero or a negative value minus a column (on the top edge for ``│`` and ``\\``, on the
    bottom edge for ``/``). ``direction`` 0 draws ``─`` (from a row) or ``│`` (from a column),
    1 the rising diagonal ``/`` and 2 the falling diagonal ``\\``, each until it leaves the image.
    Returns two int arrays of the same length.
    """
    check_int_range("img_size", img_size, 2)
    check_int_range("start", start, -(img_size - 1), img_size - 1)
    check_int_range("direction", direction, 0, 2)
    last = img_size - 1
    if start > 0:  # a row on the left edge; the line goes right
        row = int(start)
        if direction == 0:
            steps = np.arange(img_size)
            return np.full(img_size, row), steps
        steps = np.arange(row + 1) if direction == 1 else np.arange(img_size - row)
        return (row - steps if direction == 1 else row + steps), steps
    column = -int(start)
    if direction == 0:
        return np.arange(img_size), np.full(img_size, column)
    column = max(column, 1)  # as in the book: the corner-to-corner diagonals start from a row
    steps = np.arange(img_size - column)
    rows = last - steps if direction == 1 else steps  # / climbs from the bottom, \ falls from the top
    return rows, column + steps


def generate_dataset(img_size=12, n_images=1000, binary=False, seed=17, noise=LINE_NOISE):
    """Draw ``n_images`` line images and their classes.

    Args:
        img_size: width and height of every image, in pixels.
        n_images: how many images.
        binary: ``False`` gives the three classes (0 ``─``/``│``, 1 ``/``, 2 ``\\``). ``True``
            gives the book's two-class set (its chapter 5): label 1 for a diagonal, 0 for a
            straight line, and, as in the book, every diagonal drawn rising (``/``).
        seed: seed of the private ``np.random.RandomState``; starts and directions are drawn
            first, in the book's order, then the noise.
        noise: the background's largest grey level: every pixel off the line is a uniform
            integer in ``0 .. noise``, drawn independently. ``0`` gives the book's clean images.
            The line itself is always 255.

    Returns:
        ``(images, labels)``: ``images`` uint8 ``(n_images, 1, img_size, img_size)`` with
        values 0-255 and ``labels`` int64 ``(n_images,)``.
    """
    check_int_range("img_size", img_size, 2)
    check_positive_int("n_images", n_images)
    check_non_negative_int("seed", seed)
    check_int_range("noise", noise, 0, LINE_VALUE - 1)
    check_instance("binary", binary, (bool, np.bool_), "True or False")
    rng = np.random.RandomState(seed)
    starts = rng.randint(-(img_size - 1), img_size, size=n_images)  # (n,)
    directions = rng.randint(0, 3, size=n_images)  # (n,)
    if noise:
        images = rng.randint(0, noise + 1, size=(n_images, img_size, img_size)).astype(np.uint8)  # (n, s, s)
    else:
        images = np.zeros((n_images, img_size, img_size), dtype=np.uint8)  # (n, s, s)
    if binary:
        directions = (directions > 0).astype(np.int64)  # before drawing, as the book: 2 becomes 1
    for image, start, direction in zip(images, starts, directions):
        image[line_pixels(int(start), int(direction), img_size)] = LINE_VALUE
    return images[:, None], directions.astype(np.int64)  # (n, 1, s, s), (n,)


def line_datasets(n_train=800, n_val=200, img_size=12, noise=LINE_NOISE, seed=17):
    """Training and held-out sets of line images, ready for a ``DataLoader``.

    Draws ``n_train + n_val`` images with ``generate_dataset`` (three classes) and keeps the
    first ``n_train`` for training and the rest as the held-out set. There are only a few
    dozen distinct lines in a small image, so held-out images show known lines under new
    noise: the test is whether the model reads the line through the noise.

    Returns:
        ``(train_data, val_data)``: ``TensorDataset``s of float32 images in ``[0, 1]``
        ``(N, 1, img_size, img_size)`` and int64 labels ``(N,)``.
    """
    check_positive_int("n_train", n_train)
    check_positive_int("n_val", n_val)
    images, labels = generate_dataset(img_size, n_train + n_val, binary=False, seed=seed, noise=noise)
    x = torch.as_tensor(images, dtype=torch.float32) / LINE_VALUE  # (n, 1, s, s), in [0, 1]
    y = torch.as_tensor(labels)  # (n,), int64
    return TensorDataset(x[:n_train], y[:n_train]), TensorDataset(x[n_train:], y[n_train:])
