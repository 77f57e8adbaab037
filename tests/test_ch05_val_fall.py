"""Chapter 05's seed study records each run's first-epoch validation loss, so the live check that
the validation loss falls more than tenfold is borne out in the stored runs, not only in the chapter's."""
import pytest

from stepbystep.experiments.square_baselines import square_seed_spread
from stepbystep.experiments.square_seed_study import load_square_seed_study, training_spread_claims

FALL = "the validation loss falls more than tenfold from the first epoch to the last in every run"


def _fall_holds(runs):
    return next(c.holds for c in training_spread_claims(runs) if c.claim == FALL)


def test_every_stored_run_falls_more_than_tenfold():
    runs = load_square_seed_study()["runs"]
    assert all(run["first_val"] > 10 * run["final_val"] for run in runs)
    assert _fall_holds(runs)


def test_the_fall_claim_fails_when_one_run_falls_less():
    runs = load_square_seed_study()["runs"]
    shallow = [dict(run, first_val=9 * run["final_val"]) if run["seed"] == 3 else run for run in runs]
    assert not _fall_holds(shallow)


def test_first_val_is_the_first_epochs_validation_loss():
    run = square_seed_spread([0], epochs=2)[0]
    # with two epochs the only rise (or fall) from one epoch to the next is the last over the first
    assert run["first_val"] > 0 and run["largest_jump"] == pytest.approx(run["final_val"] / run["first_val"])
