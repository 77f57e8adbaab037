"""Chapter 01 "Your turn": attention as kernel regression.

- ``laplace_scores``: extend the softmax form to another kernel, the Laplace kernel.
- ``loo_error``: write the leave-one-out error for one width σ.
- ``loo_sigma``: find the width leave-one-out picks at three noise levels.
"""
import functools
import math

import torch

from ..checks import check_tensor
from ..data.regression import make_regression_data
from ..models.kernel_regression import leave_one_out_error, nadaraya_watson
from .exercise import Exercise, expects_function

__all__ = ["laplace_scores", "loo_error", "loo_sigma", "LOO_SIGMA_GRID"]

LOO_SIGMA_GRID = torch.logspace(-2, 1, 61)  # the widths ``loo_sigma`` searches: 0.01 .. 10
_NOISE_LEVELS = (0.1, 0.5, 1.0)


def _sample_points(seed=0):
    generator = torch.Generator().manual_seed(seed)
    queries = 10 * torch.rand(7, generator=generator)  # (7,)
    keys = 10 * torch.rand(9, generator=generator)  # (9,)
    return queries, keys


# ---------------------------------------------------------------------------------- exercise 1
def _laplace_scores_solution(queries, keys, sigma):
    distance = queries[:, None] - keys[None, :]  # (n_q, n_k)
    # log K(x - xⱼ) for K(u) = exp(-|u| / σ); any constant added to a whole row is also right
    return -distance.abs() / sigma  # (n_q, n_k)


def _softmax_matches(scores, reference):
    return torch.allclose(torch.softmax(scores, dim=-1), torch.softmax(reference, dim=-1), atol=1e-5)


@expects_function("scores(queries, keys, sigma)")
def _check_laplace_scores(answer):
    queries, keys = _sample_points()
    sigma = 1.5
    scores = check_tensor("what your function returns", answer(queries, keys, sigma)).detach().float()
    if scores.shape != (7, 9):
        return f"for 7 queries and 9 keys the scores should have shape (7, 9), got {tuple(scores.shape)}"
    distance = queries[:, None] - keys[None, :]  # (7, 9)
    if _softmax_matches(scores, -distance.abs() / sigma):
        return None
    kernel = torch.exp(-distance.abs() / sigma)  # (7, 9): K itself
    if torch.allclose(scores, kernel, atol=1e-5) or _softmax_matches(scores, kernel):
        return ("you return the kernel values K themselves: the softmax exponentiates its input, so the scores must "
                "be log K")
    if torch.allclose(scores.sum(dim=-1), torch.ones(7), atol=1e-4) and (scores >= 0).all():
        return "you return weights that already sum to 1: the checker wants the scores, before the softmax"
    if _softmax_matches(scores, distance.abs() / sigma):
        return "your weights grow with the distance: far keys win. A minus sign is missing."
    if _softmax_matches(scores, -(distance**2) / (2 * sigma**2)):
        return "these are the Gaussian kernel's scores: the Laplace kernel uses the distance itself, not its square."
    if _softmax_matches(scores, -distance / sigma) or _softmax_matches(scores, distance / sigma):
        return ("your weights favour keys on one side of the query, whatever their distance: the kernel needs the "
                "size of the distance, |x − xⱼ|, not its sign.")
    if _softmax_matches(scores, -distance.abs() / sigma**2):
        return "you divide by σ², which makes the kernel's width depend on σ squared: the Laplace kernel divides by σ."
    if _softmax_matches(scores, -distance.abs()):
        return "your weights do not depend on σ: the width has to enter the scores."
    if _softmax_matches(scores, -(distance**2) / sigma**2) or _softmax_matches(scores, -(distance**2) / sigma):
        return "you square the distance, as the Gaussian does: the Laplace kernel uses |x − xⱼ| itself."
    laplace = -distance.abs() / sigma  # (7, 9)
    laplace = laplace - laplace.mean(dim=-1, keepdim=True)  # rows centred: the softmax ignores a shift per row
    centred = scores - scores.mean(dim=-1, keepdim=True)
    factor = (centred * laplace).sum() / (laplace * laplace).sum()
    if factor > 0 and torch.allclose(centred, factor * laplace, atol=1e-4):
        return ("your scores are the Laplace kernel's times a constant, so the kernel has the wrong width: "
                "check how σ enters")
    return "the softmax of your scores is not the Laplace kernel weights"


laplace_scores = Exercise(
    "scores whose softmax is the Laplace kernel weights",
    _check_laplace_scores,
    "the Gaussian's scores were log K; what is log K for K(u) = exp(-|u| / σ)?",
    _laplace_scores_solution,
)


# ---------------------------------------------------------------------------------- exercise 2
def _near(value, target):
    return abs(value - target) <= 1e-4 * max(1.0, abs(target))


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
        if _near(error, in_sample):
            return (f"at σ = {sigma} you return the in-sample error: each point still attends to itself. If you did "
                    "mask the diagonal: a point's score against itself is already 0, so filling it with 0 changes "
                    "nothing; which score does a softmax give no weight at all?")
        if _near(error, expected * len(x)):
            return f"at σ = {sigma} you return the sum of the squared errors: the MSE is their mean"
        if _near(error, expected**0.5):
            return f"at σ = {sigma} you return the root of the mean squared error: the exercise asks for the MSE itself"
        weights = nadaraya_watson(x, x, y, sigma)[1]  # (n, n): every point included
        zeroed = weights * (1 - torch.eye(len(x)))  # (n, n): the diagonal zeroed after normalising
        if _near(error, float(((zeroed @ y - y) ** 2).mean())):
            return (f"at σ = {sigma} each point gets no weight on itself, but your weights' rows no longer sum to 1: "
                    "the weight the point had is lost, not shared among the others")
        return f"at σ = {sigma} your function returned {error:.4f}, which is not the leave-one-out MSE"
    return None


loo_error = Exercise(
    "leave-one-out error for one σ",
    _check_loo_error,
    "which entries of the (n, n) scores belong to a point looking at itself, and what score makes a softmax give "
    "such an entry exactly zero weight, while the rest of its row still sums to 1?",
    _loo_error_solution,
)


# ---------------------------------------------------------------------------------- exercise 3
def _loo_sigma_solution():
    from stepbystep.data import make_regression_data
    from stepbystep.exercises.ch01 import LOO_SIGMA_GRID
    from stepbystep.models import best_sigma

    answer = {}
    for noise in (0.1, 0.5, 1.0):
        x, y = make_regression_data(n=50, noise=noise, seed=42)
        answer[noise], _ = best_sigma(x, y, LOO_SIGMA_GRID)
    return answer  # the noisier set needs the wider kernel: it averages more points


_TOLERANCE = 0.03  # LOO_SIGMA_GRID's best lies within 1.5% of the true minimum; a finer grid lands closer
_GRID_STEP = math.log(float(LOO_SIGMA_GRID[1] / LOO_SIGMA_GRID[0]))  # neighbouring widths differ by this log-ratio (12%)


@functools.lru_cache(maxsize=None)
def _loo_minimum(noise):
    """The width with the lowest leave-one-out error for ``noise``, and that error, on a fine grid (float64)."""
    x, y = make_regression_data(n=50, noise=noise, seed=42)
    widths = torch.logspace(-1, 0, 2001, dtype=torch.float64)  # 0.1 .. 1 in steps of 0.12%
    errors = leave_one_out_error(x.double(), y.double(), widths)  # (2001,)
    best = int(errors.argmin())
    return float(widths[best]), float(errors[best])


@functools.lru_cache(maxsize=None)
def _other_draws_minima():
    """The grid widths leave-one-out picks on draws other than the chapter's (seeds 0-9, n of 20 to 200),
    one tuple per draw in the order of ``_NOISE_LEVELS``: what a learner who drew other data finds."""
    draws = [dict(n=50, seed=seed) for seed in range(10)] + [dict(n=n, seed=42) for n in (20, 100, 200)]
    minima = []
    for draw in draws:
        widths = []
        for noise in _NOISE_LEVELS:
            x, y = make_regression_data(noise=noise, **draw)
            widths.append(float(LOO_SIGMA_GRID[int(leave_one_out_error(x, y, LOO_SIGMA_GRID).argmin())]))
        minima.append(tuple(widths))
    return minima


def _as_width(value):
    """``value`` as a float, or None when it is not one number."""
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        return None


def _check_loo_sigma(answer):
    if not isinstance(answer, dict) or set(answer) != set(_NOISE_LEVELS):
        got = sorted(answer, key=str) if isinstance(answer, dict) else type(answer).__name__
        return f"expected a dict with the keys {list(_NOISE_LEVELS)} (the noise levels, as numbers), got {got}"
    given = {noise: _as_width(answer[noise]) for noise in _NOISE_LEVELS}
    if any(width is None for width in given.values()):
        return "each value should be one width σ, a single number: " + ", ".join(
            f"{noise}: {type(answer[noise]).__name__}" for noise in _NOISE_LEVELS if given[noise] is None)
    minima = {noise: _loo_minimum(noise) for noise in _NOISE_LEVELS}  # noise -> (σ, its LOO error)
    off = {noise: abs(given[noise] / minima[noise][0] - 1) for noise in _NOISE_LEVELS}
    if all(off[n] <= _TOLERANCE for n in _NOISE_LEVELS):
        return None
    widths = [given[n] for n in _NOISE_LEVELS]
    low, high = float(LOO_SIGMA_GRID[0]), float(LOO_SIGMA_GRID[-1])
    outside = [width for width in widths if not low * (1 - 1e-6) <= width <= high * (1 + 1e-6)]
    if outside:
        return (f"{outside[0]:g} is not a width on the grid, which runs from {low:g} to {high:g}: give the width σ "
                "itself, not its position in the grid")
    if all(abs(given[n] / minima[n][1] - 1) < 1e-2 for n in _NOISE_LEVELS):
        return "these are the lowest leave-one-out errors themselves: the exercise asks for the widths σ where they occur"
    if all(width <= float(LOO_SIGMA_GRID[1]) for width in widths):
        return ("every width is at the narrow end of the grid, where the in-sample error is lowest: did each point "
                "leave itself out of its own prediction?")
    if all(width >= float(LOO_SIGMA_GRID[-2]) for width in widths):
        return ("every width is at the wide end of the grid, where the leave-one-out error is highest: the width to "
                "pick is the one with the lowest error")
    if all(a > b for a, b in zip(widths, widths[1:])):
        return "your widths shrink as the noise grows: which data set needs more averaging?"
    if max(widths) <= min(widths) * (1 + 1e-6) and any(off[n] <= _TOLERANCE for n in _NOISE_LEVELS):
        return ("all three widths are the same, the best width of one data set: did each data set get its own "
                "noise level? make_regression_data takes it as noise=...")
    if all(abs(a / b - 1) <= _TOLERANCE for a, b in zip(sorted(widths), sorted(m[0] for m in minima.values()))):
        return "these are the three right widths, but not each with its own noise level: check which goes with which"
    wrong = [n for n in _NOISE_LEVELS if off[n] > _TOLERANCE]
    if all(abs(math.log(given[n] / minima[n][0])) <= 1.5 * _GRID_STEP for n in wrong):
        return ("close: for noise " + ", ".join(f"{n}" for n in wrong) + " your width is within a grid step or so of "
                "the best one, but not the grid point with the lowest leave-one-out error: compare the errors of the "
                "neighbouring widths")
    other_data = any(all(abs(w / m - 1) <= _TOLERANCE for w, m in zip(widths, draw)) for draw in _other_draws_minima())
    if all(a < b for a, b in zip(widths, widths[1:])) and len(wrong) == len(_NOISE_LEVELS) and other_data:
        return ("your widths grow with the noise, as they should, but none is the best width for these data sets: "
                "did you draw them as the chapter does, with n=50 and seed=42?")
    return "; ".join(f"for noise {n} your σ = {given[n]:.3f} is too {'narrow' if given[n] < minima[n][0] else 'wide'}: "
                     f"it is not within {_TOLERANCE:.0%} of the width where the leave-one-out error is lowest"
                     for n in wrong)


loo_sigma = Exercise(
    "the width leave-one-out picks at three noise levels",
    _check_loo_sigma,
    "for the prediction: averaging k neighbours whose noise is independent shrinks that noise about √k times, "
    "while a wider kernel also averages across the curve's bends; which of the two costs more as the noise "
    "grows? For the numbers: the chapter took the width with the lowest leave-one-out error on a grid, in one "
    "call; make one such call per data set, on ch01.LOO_SIGMA_GRID.",
    _loo_sigma_solution,
)
