"""Chapter 01 exercises: the worked solutions pass, typical mistakes get a helpful message."""
import pytest
import torch

from stepbystep.data import make_regression_data
from stepbystep.exercises import ch01
from stepbystep.models import best_sigma, leave_one_out_error, nadaraya_watson


def test_laplace_scores_solution_and_any_row_shift_pass():
    assert ch01.laplace_scores.check(ch01._laplace_scores_solution)

    def shifted(queries, keys, sigma):  # softmax ignores a constant per query: still right
        return ch01._laplace_scores_solution(queries, keys, sigma) + queries[:, None] ** 2

    assert ch01.laplace_scores.check(shifted)


@pytest.mark.parametrize("wrong, message", [
    (lambda q, k, s: (q[:, None] - k[None, :]).abs() / s, "minus sign is missing"),
    (lambda q, k, s: -((q[:, None] - k[None, :]) ** 2) / (2 * s**2), "Gaussian kernel's scores"),
    (lambda q, k, s: -(q[:, None] - k[None, :]) / s, "not its sign"),
    (lambda q, k, s: (q[:, None] - k[None, :]) / s, "not its sign"),
    (lambda q, k, s: -(q[:, None] - k[None, :]).abs() / s**2, "divides by σ"),
    (lambda q, k, s: -(q[:, None] - k[None, :]).abs(), "do not depend on σ"),
    (lambda q, k, s: q[:, None] * k[None, :], "not the Laplace kernel weights"),
    (lambda q, k, s: torch.exp(-(q[:, None] - k[None, :]).abs() / s), "kernel values K themselves"),
    (lambda q, k, s: torch.softmax(-(q[:, None] - k[None, :]).abs() / s, dim=-1), "already sum to 1"),
    (lambda q, k, s: torch.softmax(-((q[:, None] - k[None, :]) ** 2) / (2 * s**2), dim=-1), "already sum to 1"),
    (lambda q, k, s: torch.zeros(len(k), len(q)), "should have shape (7, 9)"),
])
def test_laplace_scores_typical_mistakes(fails_with, wrong, message):
    text = fails_with(ch01.laplace_scores, wrong, message)
    assert "Hint:" not in text and "abs()" not in text  # the hint comes only on request


def test_loo_error_solution_passes():
    assert ch01.loo_error.check(ch01._loo_error_solution)


def test_loo_error_that_keeps_the_point_itself_is_named():
    def in_sample(x, y, sigma):
        return ((nadaraya_watson(x, x, y, sigma)[0] - y) ** 2).mean()

    result = ch01.loo_error.check(in_sample)
    assert not result and "each point still attends to itself" in repr(result)
    x, y = make_regression_data(n=30, seed=7)
    assert f"{leave_one_out_error(x, y, 0.1).item():.4f}" not in repr(result)  # the answer is not given away


@pytest.mark.parametrize("slip, words", [
    (lambda right: lambda x, y, sigma: right(x, y, sigma) * len(x), "sum of the squared errors"),
    (lambda right: lambda x, y, sigma: right(x, y, sigma).sqrt(), "root of the mean squared error"),
])
def test_loo_error_sum_and_root_are_named(fails_with, slip, words):
    fails_with(ch01.loo_error, slip(ch01._loo_error_solution), words)


def test_loo_error_zeroing_the_weights_after_the_softmax_is_named(fails_with):
    def zeroed(x, y, sigma):
        weights = nadaraya_watson(x, x, y, sigma)[1] * (1 - torch.eye(len(x)))  # not renormalised
        return ((weights @ y - y) ** 2).mean()

    fails_with(ch01.loo_error, zeroed, "rows no longer sum to 1")


def test_loo_error_other_mistakes():
    result = ch01.loo_error.check(lambda x, y, sigma: torch.tensor(1.0))
    assert not result and "not the leave-one-out MSE" in repr(result) and "returned 1.0000" in repr(result)
    x, y = make_regression_data(n=30, seed=7)
    assert f"{leave_one_out_error(x, y, 0.1).item():.4f}" not in repr(result)  # no expected value
    result = ch01.loo_error.check(lambda x, y, sigma: (x - y) ** 2)
    assert not result and "expected one number" in repr(result)
    assert not ch01.loo_error.check("not a function")


def test_loo_sigma_solution_passes_and_the_noisier_set_needs_the_wider_kernel():
    answer = ch01._loo_sigma_solution()
    assert ch01.loo_sigma.check(answer)
    assert answer[1.0] > answer[0.5] > answer[0.1]


def test_loo_sigma_mistakes():
    answer = ch01._loo_sigma_solution()
    reversed_order = {0.1: answer[1.0], 0.5: answer[0.5] * 0.9, 1.0: answer[0.1]}
    result = ch01.loo_sigma.check(reversed_order)
    assert not result and "shrink as the noise grows" in repr(result)
    result = ch01.loo_sigma.check({0.1: answer[0.1], 0.5: answer[0.5], 1.0: 5.0})
    assert not result and "for noise 1.0" in repr(result) and "for noise 0.1" not in repr(result)
    assert f"{answer[1.0]:.3f}" not in repr(result) and f"{answer[1.0]:.2f}" not in repr(result)
    result = ch01.loo_sigma.check([answer[0.1], answer[1.0]])
    assert not result and "expected a dict" in repr(result)
    result = ch01.loo_sigma.check({0.1: answer[0.1], 1.0: answer[1.0]})  # the middle level left out
    assert not result and "expected a dict with the keys [0.1, 0.5, 1.0]" in repr(result)


def test_loo_sigma_accepts_a_finer_search():
    fine = torch.logspace(-2, 1, 1001)
    answer = {noise: best_sigma(*make_regression_data(noise=noise), fine)[0] for noise in (0.1, 0.5, 1.0)}
    assert ch01.loo_sigma.check(answer)


def test_solutions_print_their_source(capsys):
    for exercise in (ch01.laplace_scores, ch01.loo_error, ch01.loo_sigma):
        exercise.solution()
    printed = capsys.readouterr().out
    assert "def _laplace_scores_solution" in printed and "masked_fill" in printed and "best_sigma" in printed


def test_the_notebooks_placeholders_fail_without_revealing_the_answers():
    answer = ch01._loo_sigma_solution()
    result = ch01.loo_sigma.check({0.1: 1.0, 0.5: 1.0, 1.0: 1.0})  # the placeholder of the notebook
    assert not result
    for noise in (0.1, 0.5, 1.0):
        assert f"{answer[noise]:.3f}" not in repr(result) and f"{answer[noise]:.2f}" not in repr(result)
    scores = ch01.laplace_scores.check(lambda q, k, s: torch.zeros(len(q), len(k)))
    assert not scores and "0." not in repr(scores)  # no machine-dependent number in the message


def test_hints_come_on_request(capsys):
    for exercise in (ch01.laplace_scores, ch01.loo_error, ch01.loo_sigma):
        exercise.hint()
    printed = capsys.readouterr().out
    assert "log K" in printed and "exactly zero weight" in printed and "lowest leave-one-out error" in printed
