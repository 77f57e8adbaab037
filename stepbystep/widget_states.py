"""What a widget computes, kept apart from its controls and its drawing.

Plain functions with no widget or plotting library, so the tests call them directly and the
generic models stay free of chapter glue. Chapter 01's σ widget (``widgets.sigma_explorer``)
draws ``kernel_fit`` with ``plots.kernel_dashboard``.
"""
from collections import namedtuple

import torch

from .models.kernel_regression import leave_one_out_error, nadaraya_watson

__all__ = ["KernelFit", "kernel_fit"]

KernelFit = namedtuple("KernelFit", ["sigma", "predictions", "weights", "loo_error"])
KernelFit.__doc__ = """One width's fit: predictions ``(n_q,)`` and weights ``(n_q, n_k)`` at the
queries, and the leave-one-out error on the training points (a float)."""


def kernel_fit(x_train, y_train, queries, sigma):
    """Everything the σ widget shows for one width: predictions, weights and leave-one-out error."""
    with torch.no_grad():
        predictions, weights = nadaraya_watson(queries, x_train, y_train, sigma)
        loo = leave_one_out_error(x_train, y_train, float(sigma))
    return KernelFit(float(sigma), predictions, weights, float(loo))
