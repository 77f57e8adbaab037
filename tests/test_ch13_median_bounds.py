"""Chapter 13's two 'falls below 60% in every seed' claims hold the median seed to half on the three live
seeds (one seed moves a median of three) and to 40% over the 24 stored runs."""
import torch

from stepbystep.experiments.induction import composition_claims
from stepbystep.experiments.induction_seeds import dependence_claims

BEST = torch.tensor([0.9, 0.8, 0.85])  # (seeds,): the best induction score intact


def test_the_dependence_claim_holds_the_median_to_its_bound():
    without_previous = BEST * torch.tensor([0.3, 0.45, 0.42])  # kept: a median of 0.42
    others = BEST + 0.02  # the control moves little
    live = dependence_claims(BEST, without_previous, others)[0]
    stored = dependence_claims(BEST, without_previous, others, median_below=0.4)[0]
    assert live.holds and "below 50% in the median seed" in live.claim
    assert not stored.holds and "below 40% in the median seed" in stored.claim
    assert not dependence_claims(BEST, BEST * torch.tensor([0.3, 0.45, 0.62]), others)[0].holds  # one seed at 62%


def test_the_keys_only_claim_holds_the_median_to_its_bound():
    intact = {"induction": BEST, "repeat": torch.full((3,), 0.6)}
    through = {"key": {"induction": BEST * torch.tensor([0.3, 0.45, 0.42]), "repeat": torch.full((3,), 2.5)},
               "query": {"induction": BEST, "repeat": torch.full((3,), 0.62)},
               "value": {"induction": BEST, "repeat": torch.full((3,), 0.5)}}
    assert composition_claims(intact, through)[0].holds
    assert not composition_claims(intact, through, median_below=0.4)[0].holds


def test_the_written_claim_holds_every_seed_to_75_and_the_median_to_85():
    from stepbystep.experiments.induction_seeds import written_claims
    assert written_claims(torch.tensor([0.835, 0.9, 0.95]))[0].holds  # a seed under 85%, the median above
    assert written_claims(torch.tensor([0.76, 0.855, 0.95]))[0].holds  # near both bounds, above each
    assert not written_claims(torch.tensor([0.74, 0.9, 0.95]))[0].holds  # a seed under 75%
    assert not written_claims(torch.tensor([0.8, 0.84, 0.95]))[0].holds  # the median under 85%
