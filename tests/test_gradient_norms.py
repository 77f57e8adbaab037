"""Gradient norms per layer: what is measured, the warm-up schedule, seeds, and the chapter's finding."""
import numpy as np
import pytest
import torch
from torch import nn

from stepbystep.experiments.gradient_norms import encoder_regressor, layer_gradient_norms, layer_norms_of_gradients


def test_shapes_and_first_row_is_the_gradient_at_initialisation():
    run = layer_gradient_norms(n_layers=3, steps=4, d_model=8, ff_units=8, n_samples=16)
    assert run.norms.shape == (4, 3) and run.losses.shape == (4,) and run.learning_rates.shape == (4,)
    assert run.n_layers == 3 and run.label == "norm-first, no warm-up"
    # the same model, rebuilt from the same seed: one backward pass gives row 0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = encoder_regressor(3, True, d_model=8, ff_units=8)
    from stepbystep.data import square_datasets
    full, target = square_datasets(n_train=16)[0].tensors
    loss = nn.functional.mse_loss(model(full[:, :2]), target)
    loss.backward()
    np.testing.assert_allclose(run.norms[0], layer_norms_of_gradients(model[1].layers), rtol=1e-5)
    assert run.losses[0] == pytest.approx(loss.item(), rel=1e-6)
    assert run.losses[-1] < run.losses[0]  # it trains


def test_norms_of_gradients_matches_a_flat_vector_norm():
    layers = nn.ModuleList([nn.Linear(3, 2), nn.Linear(2, 2), nn.Linear(2, 1)])
    x = torch.randn(5, 3)
    layers[2](layers[1](layers[0](x))).sum().backward()
    expected = [torch.cat([p.grad.flatten() for p in layer.parameters()]).norm().item() for layer in layers]
    np.testing.assert_allclose(layer_norms_of_gradients(layers), expected, rtol=1e-6)
    assert layer_norms_of_gradients([nn.Linear(2, 2)]) == [0.0]  # no gradient yet


def test_warm_up_rises_linearly_to_the_peak_then_stays():
    run = layer_gradient_norms(n_layers=1, steps=7, lr=0.01, warmup_steps=4, d_model=8, ff_units=8, n_samples=8)
    np.testing.assert_allclose(run.learning_rates, [0.0025, 0.005, 0.0075, 0.01, 0.01, 0.01, 0.01])
    assert run.label == "norm-first, warm-up 4 steps"
    flat = layer_gradient_norms(n_layers=1, steps=3, lr=0.01, d_model=8, ff_units=8, n_samples=8)
    np.testing.assert_allclose(flat.learning_rates, [0.01] * 3)


def test_seeded_and_leaves_the_global_rng_and_threads_alone():
    threads = torch.get_num_threads()
    torch.manual_seed(1)
    expected = torch.rand(3)
    torch.manual_seed(1)
    first = layer_gradient_norms(n_layers=2, steps=3, d_model=8, ff_units=8, n_samples=8, seed=5)
    torch.testing.assert_close(torch.rand(3), expected)
    assert torch.get_num_threads() == threads
    second = layer_gradient_norms(n_layers=2, steps=3, d_model=8, ff_units=8, n_samples=8, seed=5)
    np.testing.assert_array_equal(first.norms, second.norms)
    other = layer_gradient_norms(n_layers=2, steps=3, d_model=8, ff_units=8, n_samples=8, seed=6)
    assert not np.allclose(first.norms, other.norms)


def test_both_placements_start_from_the_same_weights():
    first = encoder_regressor(2, True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        a = encoder_regressor(2, True)
        torch.manual_seed(0)
        b = encoder_regressor(2, False)
    assert first[1].norm is not None and b[1].norm is None  # only norm-first ends with a norm
    for (name, p), (_, q) in zip(a[1].layers.named_parameters(), b[1].layers.named_parameters()):
        torch.testing.assert_close(p, q, msg=name)


def _initial_norms(seed):
    last = layer_gradient_norms(n_layers=6, norm_first=False, steps=1, seed=seed).norms[0]
    first = layer_gradient_norms(n_layers=6, norm_first=True, steps=1, seed=seed).norms[0]
    return first, last


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_at_initialisation_norm_last_is_uneven_and_norm_first_about_even(seed):
    """Chapter 04's reading of the gradients at initialisation, seed by seed: the coarse pattern."""
    first, last = _initial_norms(seed)
    assert first.max() / first.min() < 1.5
    assert last[-1] > 1.1 * last[2:4].max()
    assert last.max() / last.min() > first.max() / first.min()


def test_the_finer_pattern_at_initialisation_holds_in_four_seeds_of_five():
    """Chapter 04: norm-first shrinks from layer 1 to 6, norm-last is smallest in layers 2-4, except seed 2."""
    norms = [_initial_norms(seed) for seed in range(5)]
    first_shrinks = [bool(first[0] > first[-1]) for first, _ in norms]
    last_dips = [int(last.argmin()) in (1, 2, 3) for _, last in norms]
    assert first_shrinks == last_dips == [True, True, False, True, True]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"n_layers": 0}, ValueError, "n_layers must be a positive int, got 0"),
    ({"steps": 2.0}, TypeError, "steps must be a positive int, got float 2.0"),
    ({"warmup_steps": -1}, ValueError, "warmup_steps must be a non-negative int, got -1"),
    ({"lr": 0}, ValueError, "lr must be a positive number, got 0"),
    ({"lr": "0.1"}, TypeError, "lr must be a positive number, got str '0.1'"),
])
def test_bad_arguments_are_reported(kwargs, error, message):
    with pytest.raises(error, match=message):
        layer_gradient_norms(**kwargs)
