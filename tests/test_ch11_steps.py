"""Chapter 11's exercise 4 holds the steps fixed while the data shrinks: ``epochs_for_steps`` and ``n_steps``."""
import pytest
import torch

from stepbystep.data import bar_datasets
from stepbystep.experiments.vit_positions import epochs_for_steps, fit, position_runs, small_vit


def test_epochs_for_steps_makes_at_least_the_steps_asked_for():
    # 50 images are 2 mini-batches of 32, 100 are 4, 200 are 7, 400 are 13
    assert [epochs_for_steps(130, n) for n in (50, 100, 200, 400)] == [65, 33, 19, 10]
    assert epochs_for_steps(130, 400, batch_size=400) == 130
    assert epochs_for_steps(1, 10_000) == 1


@pytest.mark.parametrize("bad", [dict(n_steps=0), dict(n_train=0), dict(batch_size=-1), dict(n_steps=2.5)])
def test_epochs_for_steps_refuses_what_is_not_a_positive_int(bad):
    arguments = dict(n_steps=130, n_train=50, batch_size=32) | bad
    with pytest.raises((ValueError, TypeError), match=next(iter(bad))):
        epochs_for_steps(**arguments)


def _parameters(model):
    return torch.cat([parameter.detach().flatten() for parameter in model.parameters()])


def test_fit_with_n_steps_trains_the_epochs_that_make_them():
    train, _ = bar_datasets(n_train=50, n_val=10)
    by_steps = fit(small_vit(0, n_outputs=2), train, n_epochs=16, seed=0, n_steps=6)  # 2 batches an epoch: 3 epochs
    by_epochs = fit(small_vit(0, n_outputs=2), train, n_epochs=3, seed=0)
    other = fit(small_vit(0, n_outputs=2), train, n_epochs=4, seed=0)
    assert torch.equal(_parameters(by_steps), _parameters(by_epochs))
    assert not torch.equal(_parameters(by_steps), _parameters(other))


def test_position_runs_passes_the_steps_to_every_model():
    train, val = bar_datasets(n_train=40, n_val=30)
    by_steps = position_runs(train, val, n_outputs=2, seeds=(0,), n_steps=4)  # 2 batches an epoch: 2 epochs
    by_epochs = position_runs(train, val, n_outputs=2, seeds=(0,), n_epochs=2)
    assert by_steps.keys() == by_epochs.keys()
    assert all(torch.equal(by_steps[name], by_epochs[name]) for name in by_steps)
