"""Nadaraya-Watson kernel regression: the kernel, the weights, leave-one-out and the learnable σ."""
import math

import pytest
import torch

from stepbystep.data import make_regression_data
from stepbystep.models import KernelRegression, best_sigma, gaussian_kernel, leave_one_out_error, nadaraya_watson
from stepbystep.widgets import kernel_fit


@pytest.fixture
def data():
    return make_regression_data(n=30, seed=5)


def test_gaussian_kernel_values():
    distance = torch.tensor([-2.0, 0.0, 2.0])
    assert torch.allclose(gaussian_kernel(distance, 2.0), torch.tensor([math.exp(-0.5), 1.0, math.exp(-0.5)]))


def test_weights_rows_sum_to_one(data):
    x, y = data
    queries = torch.linspace(-1, 11, 17)  # (17,)
    predictions, weights = nadaraya_watson(queries, x, y, 0.7)
    assert predictions.shape == (17,) and weights.shape == (17, 30)
    assert torch.all(weights >= 0)
    assert torch.allclose(weights.sum(dim=-1), torch.ones(17))


def test_matches_a_hand_computation():
    keys, values = torch.tensor([0.0, 1.0, 3.0]), torch.tensor([1.0, 2.0, 4.0])
    sigma = 1.0
    k = [math.exp(-((0.5 - key) ** 2) / 2) for key in (0.0, 1.0, 3.0)]
    expected = (k[0] * 1 + k[1] * 2 + k[2] * 4) / sum(k)
    predictions, weights = nadaraya_watson(torch.tensor([0.5]), keys, values, sigma)
    assert predictions.item() == pytest.approx(expected, rel=1e-6)
    assert weights[0].tolist() == pytest.approx([v / sum(k) for v in k], rel=1e-6)


def test_tiny_sigma_interpolates_and_huge_sigma_gives_the_mean(data):
    x, y = data
    interpolated, weights = nadaraya_watson(x, x, y, 1e-4)
    assert torch.allclose(interpolated, y, atol=1e-5)
    assert torch.allclose(weights, torch.eye(30), atol=1e-5)
    flat, _ = nadaraya_watson(torch.tensor([-5.0, 2.0, 20.0]), x, y, 1e4)
    assert torch.allclose(flat, y.mean().expand(3), atol=1e-4)


def test_far_query_with_narrow_kernel_stays_finite(data):
    x, y = data
    prediction, _ = nadaraya_watson(torch.tensor([100.0]), x, y, 0.01)
    assert torch.isfinite(prediction).all()
    assert prediction.item() == pytest.approx(y[x.argmax()].item(), abs=1e-5)  # the nearest key wins


def test_mask_removes_keys(data):
    x, y = data
    mask = ~torch.eye(30, dtype=torch.bool)  # (30, 30)
    _, weights = nadaraya_watson(x, x, y, 0.5, mask)
    assert torch.all(weights.diagonal() == 0)
    assert torch.allclose(weights.sum(dim=-1), torch.ones(30))


def test_leave_one_out_error_vectorised_equals_one_width_at_a_time(data):
    x, y = data
    sigmas = torch.tensor([0.05, 0.3, 1.0, 4.0])
    errors = leave_one_out_error(x, y, sigmas)
    assert errors.shape == (4,)
    for sigma, error in zip(sigmas, errors):
        predictions, _ = nadaraya_watson(x, x, y, sigma, ~torch.eye(30, dtype=torch.bool))
        assert error.item() == pytest.approx(((predictions - y) ** 2).mean().item(), rel=1e-5)
    assert leave_one_out_error(x, y, 0.3).shape == ()


def test_loo_optimum_is_interior_for_the_default_data():
    x, y = make_regression_data()
    sigmas = torch.logspace(-2, 1, 61)
    errors = leave_one_out_error(x, y, sigmas)
    best = int(errors.argmin())
    assert 0 < best < len(sigmas) - 1
    assert best_sigma(x, y, sigmas) == pytest.approx((sigmas[best].item(), errors[best].item()))
    # the optimum beats both extremes clearly: copying neighbours and predicting the mean
    assert errors[best] < 0.5 * errors[0] and errors[best] < 0.1 * errors[-1]


def test_without_leaving_one_out_the_smallest_sigma_wins(data):
    x, y = data
    in_sample = [((nadaraya_watson(x, x, y, s)[0] - y) ** 2).mean().item() for s in (0.01, 0.1, 1.0)]
    assert in_sample == sorted(in_sample) and in_sample[0] < 1e-3


def test_module_stores_data_as_buffers_and_learns_only_log_sigma(data):
    x, y = data
    model = KernelRegression(x, y, sigma=0.8)
    assert [name for name, _ in model.named_parameters()] == ["log_sigma"]
    assert {name for name, _ in model.named_buffers()} == {"keys", "values"}
    assert model.sigma.item() == pytest.approx(0.8)
    x[0] = 123.0  # the module keeps its own copy
    assert model.keys[0] != 123.0


def test_module_leaves_one_out_in_training_mode_only(data):
    x, y = data
    model = KernelRegression(x, y, sigma=0.5)
    loo_predictions = model.train()(x)
    assert torch.all(model.alphas.diagonal() == 0)
    assert ((loo_predictions - y) ** 2).mean().item() == pytest.approx(leave_one_out_error(x, y, 0.5).item(), rel=1e-5)
    eval_predictions = model.eval()(x)
    assert torch.allclose(eval_predictions, nadaraya_watson(x, x, y, 0.5)[0])


def test_module_leaves_one_out_by_index_so_duplicate_inputs_still_count():
    x = torch.tensor([0.0, 1.0, 1.0, 2.0])  # two training points at x = 1
    y = torch.tensor([0.0, 1.0, 3.0, 2.0])
    model = KernelRegression(x, y, sigma=0.5).train()
    predictions = model(x)  # query i is key i
    assert torch.all(model.alphas.diagonal() == 0)
    assert model.alphas[1, 2] > 0.5 and model.alphas[2, 1] > 0.5  # each duplicate reads the other one
    expected = nadaraya_watson(x, x, y, 0.5, ~torch.eye(4, dtype=torch.bool))[0]
    torch.testing.assert_close(predictions, expected)
    assert ((predictions - y) ** 2).mean().item() == pytest.approx(leave_one_out_error(x, y, 0.5).item(), rel=1e-6)


def test_module_takes_the_index_of_each_query_in_a_mini_batch():
    x = torch.tensor([0.0, 1.0, 1.0, 2.0, 3.5])
    y = torch.tensor([0.0, 1.0, 3.0, 2.0, 1.0])
    model = KernelRegression(x, y, sigma=0.7).train()
    full = model(x)  # (5,)
    full_alphas = model.alphas
    index = torch.tensor([2, 4, 1])
    batch = model(x[index], key_index=index)  # a mini-batch of three training points
    torch.testing.assert_close(batch, full[index])
    torch.testing.assert_close(model.alphas, full_alphas[index])
    assert model.alphas[0, 2] == 0 and model.alphas[0, 1] > 0  # query 0 is key 2: only key 2 is left out


def test_module_trains_from_a_loader_of_indexed_queries():
    from torch.utils.data import DataLoader

    from stepbystep import StepByStep

    x, y = make_regression_data(n=30, seed=5)
    model = KernelRegression(x, y, sigma=2.0)
    examples = [({"queries": x[i], "key_index": i}, y[i]) for i in range(len(x))]
    sbs = StepByStep(model, torch.nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.05))
    sbs.set_loaders(DataLoader(examples, batch_size=10, shuffle=True))
    sbs.train(40, progress=False)
    optimum, _ = best_sigma(x, y, torch.logspace(-2, 1, 301))
    assert abs(model.sigma.item() / optimum - 1) < 0.1  # leave-one-out training finds the LOO optimum


def test_eval_mode_uses_every_key_and_ignores_key_index(data):
    x, y = data
    model = KernelRegression(x, y, sigma=0.5).eval()
    grid = torch.linspace(0, 10, 7)
    torch.testing.assert_close(model(grid), nadaraya_watson(grid, x, y, 0.5)[0])
    torch.testing.assert_close(model(x[:3], key_index=torch.arange(3)), nadaraya_watson(x[:3], x, y, 0.5)[0])


def test_training_mode_rejects_queries_it_cannot_match_to_keys(data):
    x, y = data
    model = KernelRegression(x, y, sigma=0.5).train()
    with pytest.raises(ValueError, match="must be the 30 training inputs in order"):
        model(torch.linspace(0, 10, 7))
    with pytest.raises(ValueError, match="must be the 30 training inputs in order"):
        model(x.flip(0))
    with pytest.raises(TypeError, match="key_index must be an integer tensor"):
        model(x[:2], key_index=torch.tensor([0.0, 1.0]))
    with pytest.raises(TypeError, match="key_index must be a tensor, got list"):
        model(x[:2], key_index=[0, 1])
    with pytest.raises(ValueError, match=r"key_index must hold one index per query, shape \(2,\), got \(3,\)"):
        model(x[:2], key_index=torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match=r"key_index must hold key indices in 0..29, got key indices from 0 to 30"):
        model(x[:2], key_index=torch.tensor([0, 30]))
    with pytest.raises(ValueError, match="training input at its key_index"):
        model(x[:2], key_index=torch.tensor([1, 0]))


def test_sigma_gradient_is_finite_and_descent_moves_towards_the_loo_optimum(data):
    x, y = data
    model = KernelRegression(x, y, sigma=3.0).train()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    grad = model.log_sigma.grad
    assert grad is not None and torch.isfinite(grad) and grad != 0
    optimum, _ = best_sigma(x, y, torch.logspace(-2, 1, 61))
    assert optimum < 3.0 and grad > 0  # σ is too wide: the gradient says shrink it


def test_kernel_fit_bundles_what_the_widget_shows(data):
    x, y = data
    grid = torch.linspace(0, 10, 25)
    fit = kernel_fit(x, y, grid, 0.4)
    assert fit.sigma == pytest.approx(0.4)
    assert fit.predictions.shape == (25,) and fit.weights.shape == (25, 30)
    assert fit.loo_error == pytest.approx(leave_one_out_error(x, y, 0.4).item())


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan"), torch.tensor([0.5, -0.5])])
def test_non_positive_sigma_is_rejected(data, sigma):
    x, y = data
    with pytest.raises(ValueError, match="sigma must be a width > 0, got"):
        leave_one_out_error(x, y, sigma)
    with pytest.raises(ValueError, match="sigma must be a width > 0"):
        KernelRegression(x, y, sigma=sigma if not isinstance(sigma, torch.Tensor) else -1.0)
    with pytest.raises(ValueError, match="sigma must be a width > 0"):
        gaussian_kernel(x, sigma)


def test_sigma_of_the_wrong_type_is_rejected(data):
    x, y = data
    with pytest.raises(TypeError, match="sigma must be a positive number"):
        nadaraya_watson(x, x, y, "wide")


def test_mismatched_shapes_are_rejected(data):
    x, y = data
    with pytest.raises(ValueError, match=r"values must hold one value per key, shape \(30,\), got \(29,\)"):
        nadaraya_watson(x, x, y[:-1], 0.5)
    with pytest.raises(ValueError, match=r"queries must be a 1-D tensor, got shape \(30, 1\)"):
        nadaraya_watson(x[:, None], x, y, 0.5)
    with pytest.raises(ValueError, match=r"mask must have shape \(30, 30\) \(queries, keys\), got \(30, 29\)"):
        nadaraya_watson(x, x, y, 0.5, torch.ones(30, 29, dtype=torch.bool))
    with pytest.raises(TypeError, match="mask must be a tensor of dtype torch.bool, got torch.int64"):
        nadaraya_watson(x, x, y, 0.5, torch.ones(30, 30, dtype=torch.long))
    with pytest.raises(ValueError, match="single width"):
        nadaraya_watson(x, x, y, torch.tensor([0.5, 1.0]))
    with pytest.raises(ValueError, match=r"y must have the shape of x \(30,\), got \(29,\)"):
        leave_one_out_error(x, y[:-1], 0.5)
    with pytest.raises(ValueError, match="x must hold at least 2 points for leave-one-out, got 1"):
        leave_one_out_error(x[:1], y[:1], 0.5)
    with pytest.raises(ValueError, match="values must hold one value per key"):
        KernelRegression(x, y[:-1])
    with pytest.raises(TypeError, match="queries must be a floating-point tensor, got torch.int64"):
        KernelRegression(x, y)(torch.arange(3))
