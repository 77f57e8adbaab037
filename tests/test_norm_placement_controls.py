"""Chapter 04's control: norm-last without warm-up at smaller rates. Its claims hold on runs shaped
like the chapter's, and fail, by name, when a smaller rate stalls too."""
from types import SimpleNamespace

import numpy as np

from stepbystep.experiments.norm_placement import control_claims


def _runs(finals, lower):
    """Five seeds' runs: final losses ``finals``, the largest of layers 1-3's final gradients ``lower``."""
    ends = np.ones((2, 6))
    ends[-1, :3] = lower
    return [SimpleNamespace(norms=ends, losses=np.array([1.0, final])) for final in finals]


def _settings(small_finals=(0.014, 0.011, 0.011, 0.018, 0.014), small_lower=0.04):
    return {"norm-last, no warm-up": _runs((0.78, 0.98, 0.91, 0.98, 0.57), 3e-5),
            "norm-last, warm-up 20 steps": _runs((0.012,) * 5, 0.05),
            "norm-last, no warm-up, lr 0.01": _runs(small_finals, small_lower),
            "norm-last, no warm-up, lr 0.003": _runs((0.017, 0.017, 0.024, 0.021, 0.017), 0.08)}


def _failing(claims):
    return [claim.claim for claim in claims if not claim.holds]


def test_the_control_claims_hold_when_a_smaller_rate_trains_in_every_seed():
    assert _failing(control_claims(_settings())) == []


def test_a_smaller_rate_that_stalls_in_one_seed_fails_the_first_claim_only():
    assert _failing(control_claims(_settings(small_finals=(0.014, 0.3, 0.011, 0.018, 0.014)))) == [
        "without warm-up but at a smaller rate, norm-last ends below 0.05 in every seed"]


def test_a_smaller_rate_that_stalls_everywhere_fails_every_claim():
    assert _failing(control_claims(_settings(small_finals=(0.6,) * 5, small_lower=1e-5))) == [
        "without warm-up but at a smaller rate, norm-last ends below 0.05 in every seed",
        "at each smaller rate its median final loss is over ten times below the full rate's"]


def test_without_control_runs_the_claims_cannot_hold():
    settings = _settings()
    del settings["norm-last, no warm-up, lr 0.01"], settings["norm-last, no warm-up, lr 0.003"]
    assert "without warm-up but at a smaller rate, norm-last ends below 0.05 in every seed" in _failing(
        control_claims(settings))
