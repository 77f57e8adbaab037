"""Chapter 05's stored runs also hold each run's test MSE and the spikes of its validation loss;
the claims made of them hold on the file and fail where they should."""
import pytest

from stepbystep.experiments.square_seed_study import load_square_seed_study, spike_spread_claims, heldout_spread_claims

ZEROS, FLOOR = 1.0, 0.01  # about the test MSE of predicting zeros, and the noise floor 0.1²


@pytest.fixture(scope="module")
def runs():
    return load_square_seed_study()["runs"]


def _failing(claims):
    return [claim.claim for claim in claims if not claim.holds]


def _changed(runs, seed, **values):
    return [dict(run, **values) if run["seed"] == seed else run for run in runs]


def test_the_stored_runs_bear_out_the_chapters_claims(runs):
    assert _failing(heldout_spread_claims(runs, ZEROS, FLOOR)) == []
    assert _failing(spike_spread_claims(runs)) == []


def test_the_stored_ratios_agree_with_the_stored_losses(runs):
    for run in runs:
        assert run["test_to_val"] == pytest.approx(run["test_mse"] / run["final_val"])
        assert 0.015 < run["test_mse"] / run["test_to_mirror"] < 0.025  # the mirror's MSE, about 2 · 0.1²
        assert (run["jumps_over_2"] > 0) == (run["largest_jump"] > 2)


def test_the_test_claims_fail_where_they_should(runs):
    assert _failing(heldout_spread_claims(_changed(runs, 0, test_to_mirror=1.1), ZEROS, FLOOR)) == [
        "the Transformer beats the mirror in all runs but one, where it is under 1.5 times the mirror's MSE"]
    assert "every run's test MSE lies above the noise floor and more than 20 times below predicting zeros" in _failing(
        heldout_spread_claims(_changed(runs, 0, test_mse=0.009), ZEROS, FLOOR))
    assert _failing(heldout_spread_claims(_changed(runs, 1, test_to_val=1.5), ZEROS, FLOOR)) == [
        "in every run the test MSE is within 0.7 to 1.4 times the last validation loss"]


def test_the_spike_claims_fail_where_they_should(runs):
    calm = [dict(run, jumps_over_2=0, largest_jump=1.8) for run in runs]
    assert len(_failing(spike_spread_claims(calm))) == 2
    every = [dict(run, jumps_over_2=max(run["jumps_over_2"], 1)) for run in runs]
    assert _failing(spike_spread_claims(every)) == [
        "it more than doubled at some epoch in more than half the runs, not in all"]
