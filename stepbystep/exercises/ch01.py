"""Chapter 01 "Your turn": attention as kernel regression.

- ``gaussian_scores``: write the scores whose softmax gives the Gaussian kernel weights.
- ``loo_error``: write the leave-one-out error for one width σ.
- ``loo_sigma``: find the width leave-one-out picks at two noise levels.
"""
import torch

from ..checks import check_tensor
from ..data.regression import make_regression_data
from ..models.kernel_regression import leave_one_out_error, nadaraya_watson
from .exercise import Exercise, expects_function

__all__ = ["gaussian_scores", "loo_error", "loo_sigma", "LOO_SIGMA_GRID"]

LOO_SIGMA_GRID = torch.logspace(-2, 1, 61)  # the widths ``loo_sigma`` searches: 0.01 .. 10
_NOISE_LEVELS = (0.1, 1.0)


def _sample_points(seed=0):
    generator = torch.Generator().manual_seed(seed)
    queries = 10 * torch.rand(7, generator=generator)  # (7,)
    keys = 10 * torch.rand(9, generator=generator)  # (9,)
    return queries, keys


# ---------------------------------------------------------------------------------- exercise 1
def _gaussian_scores_solution(queries, keys, sigma):
    distance = queries[:, None] - keys[None, :]  # (n_q, n_k)
    # log K(x - xⱼ); adding any constant to a whole row is also right: softmax ignores it
    return -(distance**2) / (2 * sigma**2)  # (n_q, n_k)


@expects_function("scores(queries, keys, sigma)")
def _check_gaussian_scores(answer):
    queries, keys = _sample_points()
    sigma = 1.5
    scores = check_tensor("what your function returns", answer(queries, keys, sigma)).detach().float()
    if scores.shape != (7, 9):
        return f"for 7 queries and 9 keys the scores should have shape (7, 9), got {tuple(scores.shape)}"
    weights = torch.softmax(scores, dim=-1)  # (7, 9)
    expected = nadaraya_watson(queries, keys, torch.zeros(9), sigma)[1]  # (7, 9)
    if torch.allclose(weights, expected, atol=1e-5):
        return None
    distance = queries[:, None] - keys[None, :]  # (7, 9)
    if torch.allclose(weights, torch.softmax(distance**2 / (2 * sigma**2), dim=-1), atol=1e-5):
        return "your weights grow with the distance: far keys win. A minus sign is missing."
    if torch.allclose(weights, torch.softmax(-(distance**2) / sigma**2, dim=-1), atol=1e-5):
        return "your kernel is too narrow by a factor √2: check the 2 in 2σ²."
    if torch.allclose(weights, torch.softmax(-(distance**2) / (2 * sigma), dim=-1), atol=1e-5):
        return "you divide by 2σ, not 2σ²: the width has to be squared."
    return "the softmax of your scores is not the Gaussian kernel weights"


gaussian_scores = Exercise(
    "scores whose softmax is the Gaussian kernel weights",
    _check_gaussian_scores,
    "take the log of K(x - xⱼ) = exp(-(x - xⱼ)² / (2σ²)); the normalising sum becomes the softmax",
    _gaussian_scores_solution,
)


# ---------------------------------------------------------------------------------- exercise 2
def _loo_error_solution(x, y, sigma):
    distance = x[:, None] - x[None, :]  # (n, n)
    scores = -(distance**2) / (2 * sigma**2)  # (n, n)
    scores = scores.masked_fill(torch.eye(len(x), dtype=torch.bool), float("-inf"))  # no self
    weights = torch.softmax(scores, dim=-1)  # (n, n)
    predictions = weights @ y  # (n,)
    return ((predictions - y) ** 2).mean()


@expects_function("loo_error(x, y, sigma)")
def _check_loo_error(answer):
    x, y = make_regression_data(n=30, seed=7)
    for sigma in (0.1, 0.5, 2.0):
        result = torch.as_tensor(answer(x, y, sigma))
        if result.numel() != 1:
            return f"expected one number (the mean squared error), got shape {tuple(result.shape)}"
        error = float(result)
        expected = float(leave_one_out_error(x, y, sigma))
        if abs(error - expected) <= 1e-4 * max(1.0, expected):
            continue
        in_sample = float(((nadaraya_watson(x, x, y, sigma)[0] - y) ** 2).mean())
        if abs(error - in_sample) <= 1e-4 * max(1.0, in_sample):
            return f"at σ = {sigma} you return the in-sample error: each point still attends to itself"
        return f"at σ = {sigma} your function returned {error:.4f}, which is not the leave-one-out MSE"
    return None


loo_error = Exercise(
    "leave-one-out error for one σ",
    _check_loo_error,
    "compute the (n, n) scores, set the diagonal to -inf (masked_fill with torch.eye) before the "
    "softmax, then average the squared errors",
    _loo_error_solution,
)


# ---------------------------------------------------------------------------------- exercise 3
def _loo_sigma_solution():
    from stepbystep.data import make_regression_data
    from stepbystep.exercises.ch01 import LOO_SIGMA_GRID
    from stepbystep.models import best_sigma

    answer = {}
    for noise in (0.1, 1.0):
        x, y = make_regression_data(n=50, noise=noise, seed=42)
        answer[noise], _ = best_sigma(x, y, LOO_SIGMA_GRID)
    return answer  # the noisier set needs the wider kernel: it averages more points


def _close(a, b, ratio=1.2):  # within 20%: a finer or shifted grid of widths also passes
    return a > 0 and b > 0 and max(a / b, b / a) <= ratio


def _check_loo_sigma(answer):
    if not isinstance(answer, dict) or set(answer) != set(_NOISE_LEVELS):
        got = sorted(answer) if isinstance(answer, dict) else type(answer).__name__
        return f"expected a dict with the keys {list(_NOISE_LEVELS)} (the noise levels), got {got}"
    given = {noise: float(answer[noise]) for noise in _NOISE_LEVELS}
    expected = _loo_sigma_solution()
    low, high = _NOISE_LEVELS
    if all(_close(given[n], expected[n]) for n in _NOISE_LEVELS):
        return None
    if _close(given[low], expected[high]) and _close(given[high], expected[low]):
        return "your two widths are swapped: which data set needs more averaging?"
    wrong = [n for n in _NOISE_LEVELS if not _close(given[n], expected[n])]
    return "; ".join(f"for noise {n} your σ = {given[n]:.3f} is not the width leave-one-out picks on LOO_SIGMA_GRID"
                     for n in wrong)


loo_sigma = Exercise(
    "the width leave-one-out picks at two noise levels",
    _check_loo_sigma,
    "make_regression_data(n=50, noise=..., seed=42) for each noise level, then best_sigma over "
    "LOO_SIGMA_GRID",
    _loo_sigma_solution,
)
