"""Chapter 05's seed study: the training-mode / eval-mode ratio moves by more than a factor of 2 between seeds."""
from stepbystep.experiments.square_seed_study import load_square_seed_study, training_spread_claims

SPREAD = "and the highest of these ratios is more than twice the lowest"


def _holds(runs):
    return next(c.holds for c in training_spread_claims(runs) if c.claim == SPREAD)


def test_the_stored_ratios_spread_over_more_than_a_factor_of_2():
    runs = load_square_seed_study()["runs"]
    ratios = [run["mode_ratio"] for run in runs]
    assert max(ratios) / min(ratios) > 2 and _holds(runs)


def test_the_spread_claim_fails_when_the_ratios_are_close():
    runs = [dict(run, mode_ratio=2.0 + 0.1 * i) for i, run in enumerate(load_square_seed_study()["runs"])]  # 2.0 to 2.8
    assert not _holds(runs)
