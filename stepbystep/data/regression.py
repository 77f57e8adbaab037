"""A noisy 1-D regression set for chapter 01: y = 2 sin x + x + Gaussian noise on [0, 10].

The points are returned sorted by x, so that neighbouring indices are neighbouring positions:
a weights matrix drawn as a heatmap then reads left to right along the x axis.
"""
import numbers

import numpy as np
import torch

from ..checks import check_instance, check_int_range, check_positive_int

__all__ = ["make_regression_data", "true_function", "regression_grid"]

X_RANGE = (0.0, 10.0)


def true_function(x):
    """The noise-free curve ``2 sin x + x``, for a tensor, an array or a number (same type back)."""
    if isinstance(x, torch.Tensor):
        return 2 * torch.sin(x) + x
    return 2 * np.sin(x) + x


def make_regression_data(n=50, noise=0.5, seed=42):
    """``n`` points with ``x ~ Uniform[0, 10]`` (sorted) and ``y = 2 sin x + x + noise · ε``.

    ``ε`` is standard Gaussian; ``noise`` is its standard deviation. The draw uses its own
    generator seeded with ``seed``, so the global RNGs are untouched.

    Returns ``(x_train, y_train)``: float32 tensors of shape ``(n,)``.
    """
    check_positive_int("n", n)
    check_instance("noise", noise, numbers.Real, "a standard deviation (a number >= 0)")
    if not noise >= 0:
        raise ValueError(f"noise must be a standard deviation (a number >= 0), got {noise!r}")
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(*X_RANGE, size=n))  # (n,)
    y = true_function(x) + noise * rng.standard_normal(n)  # (n,)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)


def regression_grid(n_points=200):
    """An evenly spaced grid over [0, 10] and the true curve on it, for plots and queries.

    Returns ``(x_grid, y_true)``: float32 tensors of shape ``(n_points,)``.
    """
    check_int_range("n_points", n_points, 2)
    x_grid = torch.linspace(*X_RANGE, n_points)  # (n_points,)
    return x_grid, true_function(x_grid)
