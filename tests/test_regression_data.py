"""The chapter 01 regression set: seeded, sorted, on [0, 10], y = 2 sin x + x + noise."""
import numpy as np
import pytest
import torch

from stepbystep.data import make_regression_data, regression_grid, true_function


def test_shapes_dtypes_range_and_order():
    x, y = make_regression_data(n=40)
    assert x.shape == y.shape == (40,)
    assert x.dtype == y.dtype == torch.float32
    assert 0.0 <= x.min() and x.max() <= 10.0
    assert torch.all(x[1:] >= x[:-1]), "x is documented as sorted"


def test_same_seed_same_data_other_seed_other_data():
    x1, y1 = make_regression_data(seed=3)
    x2, y2 = make_regression_data(seed=3)
    x3, _ = make_regression_data(seed=4)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert not torch.equal(x1, x3)


def test_global_random_generators_are_untouched():
    torch.manual_seed(0)
    np.random.seed(0)
    expected_torch, expected_numpy = torch.rand(3), np.random.rand(3)
    torch.manual_seed(0)
    np.random.seed(0)
    make_regression_data(seed=1)
    assert torch.equal(torch.rand(3), expected_torch)
    assert np.array_equal(np.random.rand(3), expected_numpy)


def test_targets_are_the_true_function_plus_noise_of_the_given_size():
    x, y = make_regression_data(n=20, noise=0.0)
    assert torch.allclose(y, 2 * torch.sin(x) + x, atol=1e-5)
    x, y = make_regression_data(n=4000, noise=0.5)
    residual = y - true_function(x)  # (4000,)
    assert abs(float(residual.std()) - 0.5) < 0.03
    assert abs(float(residual.mean())) < 0.03


def test_true_function_keeps_the_input_type():
    assert isinstance(true_function(np.array([0.0, 1.0])), np.ndarray)
    assert true_function(np.pi / 2) == pytest.approx(2 + np.pi / 2)
    assert torch.allclose(true_function(torch.tensor([0.0, np.pi / 2])), torch.tensor([0.0, 2 + np.pi / 2]))


def test_grid_spans_the_range_with_the_true_curve():
    x_grid, y_true = regression_grid(11)
    assert x_grid.shape == y_true.shape == (11,)
    assert torch.allclose(x_grid, torch.arange(11.0))
    assert torch.allclose(y_true, 2 * torch.sin(x_grid) + x_grid)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"n": 0}, ValueError, "n must be a positive int, got 0"),
    ({"n": 2.5}, TypeError, "n must be a positive int, got float 2.5"),
    ({"noise": -0.1}, ValueError, r"noise must be a standard deviation \(a number >= 0\), got -0.1"),
    ({"noise": "0.5"}, TypeError, r"noise must be a standard deviation \(a number >= 0\), got str"),
])
def test_bad_arguments_are_rejected(kwargs, error, message):
    with pytest.raises(error, match=message):
        make_regression_data(**kwargs)


def test_grid_needs_two_points():
    with pytest.raises(ValueError, match="n_points must be an int >= 2, got 1"):
        regression_grid(1)
