"""Nadaraya-Watson kernel regression (chapter 01): attention before it had the name.

``f(x) = Σ_j α(x, x_j) y_j`` with ``α = softmax_j(-(x - x_j)² / (2σ²))``, the normalised
Gaussian kernel, computed as a softmax: stable far from the data, and chapter 02's form."""
import math

import numpy as np
import torch
from torch import nn

from ..checks import check_indices, check_instance, check_tensor
from .attention.scaled_dot_product import masked_softmax

__all__ = ["gaussian_kernel", "nadaraya_watson", "leave_one_out_error", "best_sigma", "KernelRegression"]


def _check_sigma(sigma):
    """``sigma`` as a float tensor (kept differentiable), after checking that every value is > 0."""
    check_instance("sigma", sigma, (torch.Tensor, np.ndarray, int, float), "a positive number, array or tensor")
    if isinstance(sigma, bool):
        raise TypeError(f"sigma must be a positive number, array or tensor, got bool {sigma}")
    sigma = torch.as_tensor(sigma)
    if not torch.is_floating_point(sigma):
        sigma = sigma.to(torch.get_default_dtype())
    if not bool(torch.all(sigma > 0)):
        raise ValueError(f"sigma must be a width > 0, got {sigma.detach().cpu().tolist()}")
    return sigma


def _check_points(name, t):
    """``t`` must be a 1-D floating-point tensor: one scalar per point."""
    check_tensor(name, t, ndim=1)
    if not torch.is_floating_point(t):
        raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")


def _check_values(keys, values):
    if values.shape != keys.shape:
        raise ValueError(f"values must hold one value per key, shape {tuple(keys.shape)}, got {tuple(values.shape)}")


def gaussian_kernel(distance, sigma):
    """The (unnormalised) Gaussian kernel ``exp(-distance² / (2σ²))``, elementwise.
    Its constant factor ``1/(σ√(2π))`` is left out on purpose: it cancels when the weights are
    normalised to sum to 1. ``distance`` is a tensor of any shape; ``sigma > 0``."""
    check_tensor("distance", distance)
    sigma = _check_sigma(sigma)
    return torch.exp(-(distance**2) / (2 * sigma**2))


def nadaraya_watson(queries, keys, values, sigma, mask=None):
    """Predict at ``queries`` ``(n_q,)`` the Gaussian-weighted average of ``values`` at ``keys`` ``(n_k,)``.
    ``sigma``: one width (gradients flow through it); ``mask`` ``(n_q, n_k)`` bool, ``True`` = may
    attend. Returns predictions ``(n_q,)`` and weights ``(n_q, n_k)`` (rows sum to 1, or are all 0)."""
    for name, t in (("queries", queries), ("keys", keys), ("values", values)):
        _check_points(name, t)
    _check_values(keys, values)
    sigma = _check_sigma(sigma)
    if sigma.dim() != 0:
        raise ValueError(f"sigma must be a single width, got shape {tuple(sigma.shape)}; "
                         "use leave_one_out_error for a grid of widths")
    if mask is not None:
        expected = (queries.shape[0], keys.shape[0])
        check_tensor("mask", mask, dtype=torch.bool)
        if tuple(mask.shape) != expected:
            raise ValueError(f"mask must have shape {expected} (queries, keys), got {tuple(mask.shape)}")
    distance = queries[:, None] - keys[None, :]  # (n_q, n_k)
    scores = -(distance**2) / (2 * sigma**2)  # (n_q, n_k)
    weights = masked_softmax(scores, mask)  # (n_q, n_k)
    predictions = weights @ values  # (n_q,)
    return predictions, weights


def leave_one_out_error(x, y, sigmas):
    """Mean squared leave-one-out error for each width in ``sigmas`` (a number, or ``(S,)``).
    Each point ``x`` ``(n,)`` is predicted from the *other* points, so a tiny σ cannot win by
    copying its own noisy target. Returns the shape of ``sigmas``."""
    _check_points("x", x)
    _check_points("y", y)
    if y.shape != x.shape:
        raise ValueError(f"y must have the shape of x {tuple(x.shape)}, got {tuple(y.shape)}")
    if x.shape[0] < 2:
        raise ValueError(f"x must hold at least 2 points for leave-one-out, got {x.shape[0]}")
    sigmas = _check_sigma(sigmas).to(x.device, x.dtype)
    if sigmas.dim() > 1:
        raise ValueError(f"sigmas must be a number or a 1-D tensor, got shape {tuple(sigmas.shape)}")
    widths = sigmas.reshape(-1, 1, 1)  # (S, 1, 1)
    distance = x[:, None] - x[None, :]  # (n, n)
    scores = -(distance**2) / (2 * widths**2)  # (S, n, n)
    not_self = ~torch.eye(x.shape[0], dtype=torch.bool, device=x.device)  # (n, n)
    weights = masked_softmax(scores, not_self)  # (S, n, n)
    predictions = weights @ y  # (S, n)
    errors = ((predictions - y) ** 2).mean(dim=-1)  # (S,)
    return errors.reshape(sigmas.shape)


def best_sigma(x, y, sigmas):
    """The width in ``sigmas`` (1-D) with the smallest leave-one-out error: ``(sigma, error)`` floats."""
    errors = leave_one_out_error(x, y, sigmas)  # (S,)
    if errors.dim() != 1:
        raise ValueError("sigmas must be a 1-D tensor of candidate widths, got a single width")
    best = int(torch.argmin(errors))
    return float(torch.as_tensor(sigmas)[best]), float(errors[best])


class KernelRegression(nn.Module):
    """Nadaraya-Watson regression with a learnable width ``sigma = exp(log_sigma)`` (never <= 0).

    Keys and values are buffers. In training mode each query is a training point that does not
    attend to itself (by index, ``key_index``, or query ``i`` = key ``i``): the leave-one-out
    objective, without which σ would shrink to nothing. Eval mode uses every key.
    ``forward(queries, key_index=None)``: ``(n_q,)`` -> ``(n_q,)``; ``alphas`` ``(n_q, n_k)``."""

    def __init__(self, keys, values, sigma=1.0):
        super().__init__()
        _check_points("keys", keys)
        _check_points("values", values)
        _check_values(keys, values)
        sigma = float(_check_sigma(sigma))
        self.register_buffer("keys", keys.detach().clone())  # (n_k,)
        self.register_buffer("values", values.detach().clone().to(keys.dtype))  # (n_k,)
        self.log_sigma = nn.Parameter(torch.tensor(math.log(sigma), dtype=keys.dtype))
        self.alphas = None

    @property
    def sigma(self):
        """The current width ``exp(log_sigma)`` (a 0-d tensor, differentiable)."""
        return self.log_sigma.exp()

    def _own_index(self, queries, key_index):
        """The index among the keys of each query in training mode: ``(n_q,)`` long."""
        n_keys = self.keys.shape[0]
        if key_index is None:
            if queries.shape != self.keys.shape or not torch.equal(queries, self.keys):
                raise ValueError(f"in training mode the queries must be the {n_keys} training inputs in order (query i "
                                 f"is key i), or come with key_index, the index of each query among the keys; got "
                                 f"{queries.shape[0]} queries without key_index")
            return torch.arange(n_keys, device=queries.device)  # (n_k,)
        check_indices("key_index", key_index, n_keys, "key indices")
        if key_index.shape != queries.shape:
            raise ValueError(f"key_index must hold one index per query, shape {tuple(queries.shape)}, "
                             f"got {tuple(key_index.shape)}")
        if not torch.equal(queries, self.keys[key_index]):
            raise ValueError("each query must be the training input at its key_index (query i = keys[key_index[i]])")
        return key_index.long()  # (n_q,)

    def forward(self, queries, key_index=None):
        _check_points("queries", queries)
        mask = None
        if self.training:
            own = self._own_index(queries, key_index)  # (n_q,)
            keys = torch.arange(self.keys.shape[0], device=queries.device)  # (n_k,)
            mask = own[:, None] != keys[None, :]  # (n_q, n_k): leave the point itself out, by index
        predictions, weights = nadaraya_watson(queries, self.keys, self.values, self.sigma, mask)
        self.alphas = weights.detach()  # (n_q, n_k)
        return predictions  # (n_q,)

    def extra_repr(self):
        return f"n_keys={self.keys.shape[0]}, sigma={float(self.sigma):.4f}"

