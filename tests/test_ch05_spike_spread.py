"""Chapter 05's spike claim bounds what held over the stored runs and over eight further seeds
(100 to 107, whose largest rises reached 6.2-fold): no upper bound on the jumpiest run."""
import pytest

from stepbystep.experiments.square_seed_study import load_square_seed_study, spike_spread_claims

CLAIM = ("the largest rise of the validation loss from one epoch to the next is over 2-fold in the median run, "
         "over 1.5-fold in every run and over 4-fold in the most jumpy")
FRESH = {100: 1.544, 101: 2.246, 102: 6.220, 103: 3.426, 104: 5.786,  # largest rises, one thread
         105: 5.822, 106: 4.018, 107: 1.531}


@pytest.fixture(scope="module")
def runs():
    return load_square_seed_study()["runs"]


def _rises(runs, rises):
    return [dict(run, largest_jump=rise) for run, rise in zip(runs, rises)]


def _failing(runs):
    return [claim.claim for claim in spike_spread_claims(runs) if not claim.holds]


def test_the_claim_holds_on_the_further_seeds_and_pooled(runs):
    fresh = [dict(runs[0], seed=seed, largest_jump=rise, jumps_over_2=int(rise > 2)) for seed, rise in FRESH.items()]
    assert CLAIM not in _failing(fresh)
    assert _failing(runs + fresh) == []


@pytest.mark.parametrize("rises", [
    [1.6, 1.7, 1.8, 2.1, 2.2, 2.3, 2.4, 3.0, 3.9],  # the jumpiest run under 4-fold
    [1.6, 1.7, 1.8, 1.9, 2.0, 2.3, 2.4, 3.0, 4.5],  # the median run at 2-fold
    [1.5, 1.7, 1.8, 2.1, 2.2, 2.3, 2.4, 3.0, 4.5],  # the calmest run at 1.5-fold
])
def test_the_claim_fails_where_it_should(runs, rises):
    assert CLAIM in _failing(_rises(runs, rises))
