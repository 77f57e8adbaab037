"""Chapter 04's rates of seed 0's finer details over many seeds: they hold on gradients shaped
like seed 0's in most seeds, and fail when a detail is in every seed or in too few."""
import numpy as np

from stepbystep.experiments.norm_placement import initial_gradient_detail_rates

FALLING = [1.2, 1.15, 1.1, 1.05, 1.0, 0.95]  # norm-first: each layer below the one beneath
RISING = [1.1, 1.05, 0.8, 0.9, 1.2, 2.0]  # norm-last: first above second, smallest in layer 3, rising from 3


def _failing(first, last):
    return [claim.claim for claim in initial_gradient_detail_rates(np.array(first), np.array(last)) if not claim.holds]


def test_the_details_in_most_but_not_all_seeds_pass():
    first = [FALLING] * 7 + [[1.0, 1.1, 1.0, 1.0, 1.0, 1.0]] * 3  # 7 of 10 falling
    last = [RISING] * 8 + [[1.1, 1.05, 0.8, 1.3, 1.2, 2.0]] * 2  # 8 of 10 rising from layer 3
    assert _failing(first, last) == []


def test_a_detail_in_every_seed_fails_the_not_in_all_claims():
    failing = _failing([FALLING] * 10, [RISING] * 10)
    assert failing == ["norm-first: each layer a little below the one beneath it in more than half the seeds, not in all",
                       "norm-last: growing from layer 3 to the output in more than half the seeds, not in all"]


def test_too_few_seeds_with_the_middle_minimum_fail():
    first = [FALLING] * 7 + [[1.0, 1.1, 1.0, 1.0, 1.0, 1.0]] * 3
    ends = [0.5, 1.05, 0.8, 1.3, 1.2, 2.0]  # smallest in the first layer, below the second, not rising from 3
    last = [RISING] * 7 + [ends] * 3  # 7 of 10: under 4 in 5
    assert _failing(first, last) == ["norm-last: smallest in the middle (layers 2 to 5), and the first layer above the "
                                     "second, each in at least 4 seeds of 5"]
