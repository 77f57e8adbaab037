"""Chapter 04's claims over seeds: the gradients at initialisation over many seeds, the medians of
the chapter's five seeds, and the stored 25-seed study (what it holds, a seed recomputed, and
the claims failing, by name, where the runs say otherwise)."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from stepbystep.devices import environment
from stepbystep.experiments.norm_placement import initial_gradient_rates, seed_claims
from stepbystep.experiments.norm_placement_seeds import (
    SEEDS,
    SETTINGS,
    load_norm_placement_seeds,
    norm_placement_seed_runs,
    setting_label,
    stored_seed_claims,
)


def failing(claims):
    return [claim.claim for claim in claims if not claim.holds]


# gradients at initialisation, many seeds ----------------------------------------------------
FIRST = np.array([0.60, 0.58, 0.56, 0.54, 0.52, 0.50])  # nearly flat, under norm-last at the top
LAST = np.array([0.50, 0.30, 0.35, 0.60, 0.90, 1.40])  # a dip, then growing to the output
LAST_FIRST_LARGEST = np.array([1.50, 0.30, 0.35, 0.60, 0.90, 1.40])  # the first layer a little above the last


def _init(n=20, first_largest=6):
    """``n`` seeds like the chapter's: ``first_largest`` of them with the norm-last maximum in layer 1."""
    last = np.array([LAST_FIRST_LARGEST if seed < first_largest else LAST for seed in range(n)])
    return np.tile(FIRST, (n, 1)), last


def test_initial_rates_hold_on_the_chapter_pattern():
    assert failing(initial_gradient_rates(*_init())) == []


def test_initial_rates_allow_three_seeds_in_twenty_outside_the_factor_and_fail_beyond():
    first, last = _init()
    first[:3] = [3.0, 1, 1, 1, 1, 1]  # three seeds of 20 spread by 3: still 85%
    assert failing(initial_gradient_rates(first, last)) == []
    first[3] = [3.0, 1, 1, 1, 1, 1]  # a fourth: 80%, no longer about 9 in 10
    assert ("norm-first: all six layers within a factor 1.5 of each other in about 9 seeds of 10 (at least 85%)"
            in failing(initial_gradient_rates(first, last)))


def test_initial_rates_allow_three_seeds_in_twenty_without_the_top_above_the_middle_and_fail_beyond():
    first, last = _init()
    last[:3] = [0.5, 0.3, 1.5, 0.6, 0.9, 1.4]  # layer 3 above the last, the first still largest: 85%
    last[:3, 0] = 1.6
    assert failing(initial_gradient_rates(first, last)) == []
    last[3] = last[0]  # a fourth: 80%
    assert ("norm-last: the last layer's gradient is above layers 3 and 4's in about 9 seeds of 10 (at least 85%)"
            in failing(initial_gradient_rates(first, last)))


def test_initial_rates_fail_when_the_largest_gradient_sits_mid_stack_once():
    first, last = _init()
    last[7] = [0.5, 0.6, 2.0, 0.6, 0.9, 1.4]  # layer 3 largest in one seed
    assert failing(initial_gradient_rates(first, last)) == [
        "norm-last: the largest gradient is at an end of the stack in every seed, in the last layer in most"]


def test_initial_rates_fail_when_the_first_layer_is_largest_in_half_the_seeds():
    assert failing(initial_gradient_rates(*_init(first_largest=10))) == [
        "norm-last: the largest gradient is at an end of the stack in every seed, in the last layer in most"]


def test_initial_rates_fail_when_norm_first_gets_more_at_the_top_in_one_seed():
    first, last = _init()
    first[4] = [1.0, 1.0, 1.0, 1.0, 1.0, 1.45]  # above norm-last's 1.40 in the last layer
    assert failing(initial_gradient_rates(first, last)) == [
        "from the same weights, the last layer's gradient is larger norm-last than norm-first in every seed, "
        "over twice as large at the median"]


def test_initial_rates_fail_when_norm_last_is_as_even_as_norm_first():
    first, last = _init()
    last[:] = FIRST[::-1] * 1.5  # even, growing to the output, above norm-first at the top
    assert "norm-last gradients are more uneven than norm-first's in at least 4 seeds of 5" in failing(
        initial_gradient_rates(first, last))


# the chapter's five seeds, at the median -----------------------------------------------------
def _five(stuck_finals=(0.78, 0.98, 0.91, 0.98, 0.57), warm_finals=(0.012,) * 5):
    runs = lambda finals: [SimpleNamespace(losses=np.array([1.0, final]), norms=np.ones((2, 6))) for final in finals]  # noqa: E731
    return {"norm-first, no warm-up": runs((0.011,) * 5), "norm-first, warm-up 20 steps": runs((0.015,) * 5),
            "norm-last, no warm-up": runs(stuck_finals), "norm-last, warm-up 20 steps": runs(warm_finals)}


def test_seed_claims_hold_when_the_stuck_median_is_far_above_and_fail_when_warm_up_stalls_too():
    assert failing(seed_claims(_five())) == []
    assert failing(seed_claims(_five(warm_finals=(0.5, 0.6, 0.012, 0.7, 0.012)))) == [
        "the median final loss of norm-last without warm-up is over ten times each other run's"]
    assert failing(seed_claims(_five(stuck_finals=(0.78, 0.02, 0.01, 0.98, 0.01)))) == [
        "the median final loss of norm-last without warm-up is over ten times each other run's"]


# the stored study ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def study():
    return load_norm_placement_seeds()


def test_the_stored_study_holds_every_setting_and_seed(study):
    assert study["command"] == "python -m stepbystep.experiments.norm_placement_seeds" and study["steps"] == 35
    assert list(study["settings"]) == [setting_label(*setting) for setting in SETTINGS]
    for runs in study["settings"].values():
        assert [run["seed"] for run in runs] == list(SEEDS)
        assert all(set(run) == {"seed", "final_loss", "lower_gradient", "step_spread"} for run in runs)
    assert set(study["environment"]) == {"torch", "device", "cpu_capability", "threads"}


def test_every_claim_holds_on_the_stored_study(study):
    assert failing(stored_seed_claims(study["settings"])) == []


def test_recomputed_seeds_match_the_stored_ones(study):
    fresh = norm_placement_seed_runs(seeds=(14,))  # the seed where norm-last trained without warm-up
    same_machine = environment() == study["environment"]
    for label, runs in fresh.items():
        for run in runs:
            stored = next(other for other in study["settings"][label] if other["seed"] == run["seed"])
            if same_machine:  # the release, machine and threads that wrote the file: the same runs
                for key in ("final_loss", "lower_gradient", "step_spread"):
                    assert math.isclose(run[key], stored[key], rel_tol=1e-4), (label, run["seed"], key)
            else:  # elsewhere rounding may move a run, but not across the chapter's lines
                for bound in (0.05, 0.2):
                    assert (run["final_loss"] < bound) == (stored["final_loss"] < bound), (label, run["seed"], bound)


def _changed(study, label, seed, **values):
    settings = {name: [dict(run) for run in runs] for name, runs in study["settings"].items()}
    for run in settings[label]:
        if run["seed"] == seed:
            run.update(values)
    return settings


def test_the_stored_claims_fail_where_they_should(study):
    assert failing(stored_seed_claims(_changed(study, "norm-first, warm-up 20 steps", 3, final_loss=0.06))) == [
        "norm-first, with or without warm-up, ends below 0.05 in all 25 seeds"]
    assert failing(stored_seed_claims(_changed(study, "norm-first, no warm-up", 3, step_spread=12.0))) == [
        "and at every step of every seed its six layers' gradients stay within a factor of 10"]
    assert failing(stored_seed_claims(_changed(study, "norm-last, no warm-up, lr 0.003", 7, final_loss=0.3))) == [
        "the control, norm-last without warm-up at lr 0.01 or 0.003, ends below 0.05 in all 25 seeds"]
    stuck_seed = next(run["seed"] for run in study["settings"]["norm-last, no warm-up"] if run["final_loss"] > 0.2)
    assert "norm-last without warm-up ends above 0.2 in 23 seeds of 25" in failing(stored_seed_claims(
        _changed(study, "norm-last, no warm-up", stuck_seed, final_loss=0.01)))
    trained = next(run["seed"] for run in study["settings"]["norm-last, warm-up 20 steps"] if run["final_loss"] < 0.05)
    assert failing(stored_seed_claims(_changed(study, "norm-last, warm-up 20 steps", trained, final_loss=0.3))) == [
        "norm-last with warm-up ends below 0.05 in 23 seeds of 25, and below 0.25 in all"]


def test_the_stuck_runs_claim_needs_both_vanished_and_kept_gradients(study):
    settings = {name: [dict(run) for run in runs] for name, runs in study["settings"].items()}
    for run in settings["norm-last, no warm-up"]:
        run["lower_gradient"] = 1e-5  # every stuck run's lower gradient vanished
    assert failing(stored_seed_claims(settings)) == [
        "of its stuck runs, at least a third end with layers 1-3's gradient below 1e-3, and at least a fifth above 1e-2"]
