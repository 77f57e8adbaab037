"""Chapter 05's stored six-seed study: what it holds, a seed recomputed, and the claims made on it."""
import math

import pytest

from stepbystep.experiments.square_baselines import score_gaps, square_seed_spread
from stepbystep.experiments.square_seed_study import (
    SEEDS,
    attention_spread_claims,
    environment,
    load_square_seed_study,
    seed_table,
    training_spread_claims,
)

KEYS = {"seed", "first_val", "final_val", "below", "mode_ratio", "draws_above", "teacher_forced_ratio", "weakest_head",
        "matching", "cross_decided", "encoder_decided", "cross_gap", "encoder_gap", "largest_jump", "jumps_over_2",
        "test_mse", "test_to_mirror", "test_to_val"}


@pytest.fixture(scope="module")
def study():
    return load_square_seed_study()


def test_the_stored_study_holds_the_chapters_run_and_eight_more(study):
    assert [run["seed"] for run in study["runs"]] == list(SEEDS) and SEEDS[0] == 42  # the chapter's seed first
    assert study["epochs"] == 50 and study["command"] == "python -m stepbystep.experiments.square_seed_study"
    assert all(set(run) == KEYS for run in study["runs"])
    assert set(study["environment"]) == {"torch", "device", "cpu_capability", "threads"}


def test_every_claim_holds_on_the_stored_study(study):
    for claims in (training_spread_claims, attention_spread_claims):
        assert all(claim.holds for claim in claims(study["runs"])), [c.claim for c in claims(study["runs"]) if not c.holds]


def test_a_recomputed_seed_matches_the_stored_one(study):
    fresh = square_seed_spread([0])[0]
    stored = next(run for run in study["runs"] if run["seed"] == 0)
    if environment() == study["environment"]:  # the machine, release and threads that wrote the file: the same run
        for key in KEYS - {"seed"}:
            assert math.isclose(fresh[key], stored[key], rel_tol=1e-4), key
    # anywhere, rounding paths aside, the recomputed run bears out every claim made of each run
    over_all_runs = {"they range from 0.011 to 0.026, to three decimals",
                     "and the highest of these ratios is more than twice the lowest", "in some run the weakest head does not prefer the matching "
                     "corner at all", "it is more decided than the encoder self-attention in every run, but by under "
                     "0.1 in the closest"}
    for claims in (training_spread_claims, attention_spread_claims):
        failed = [c.claim for c in claims([fresh]) if not c.holds and c.claim not in over_all_runs]
        assert failed == []


def _changed(runs, seed, **values):
    return [dict(run, **values) if run["seed"] == seed else run for run in runs]


def test_the_claims_fail_where_they_should(study):
    runs = study["runs"]
    failing = lambda claims: [c.claim for c in claims if not c.holds]  # noqa: E731
    assert failing(training_spread_claims(_changed(runs, 3, final_val=0.05, draws_above=19))) == [
        "every run's final validation loss is below 0.04, the chapter's bound", "they range from 0.011 to 0.026, to three decimals",
        "all 20 dropout draws lie above it in every run"]
    assert failing(training_spread_claims(_changed(runs, 1, below=39, mode_ratio=1.2))) == [
        "the validation loss is below the training loss in 40 or more of the 50 epochs in every run",
        "training mode's mean loss is more than 1.5 times the eval-mode loss in every run"]
    widened = [dict(run, encoder_decided=run["cross_decided"] - 0.3) for run in runs]
    assert failing(attention_spread_claims(widened)) == [
        "it is more decided than the encoder self-attention in every run, but by under 0.1 in the closest"]
    reversed_ = _changed(runs, 4, encoder_decided=0.99)
    assert failing(attention_spread_claims(reversed_)) == [
        "it is more decided than the encoder self-attention in every run, but by under 0.1 in the closest"]
    assert failing(attention_spread_claims(_changed(runs, 2, matching=0.55, cross_gap=1.0))) == [
        "the mean weight on the matching corner is above 0.6 in every run",
        "the median gap between a cross-attention row's two scores exceeds 2 in every run",
        "and is larger than the encoder self-attention's in every run"]
    every_head_prefers = [dict(run, weakest_head=0.6) for run in runs]
    assert failing(attention_spread_claims(every_head_prefers)) == [
        "in some run the weakest head does not prefer the matching corner at all"]


def test_seed_table_one_row_per_key_with_the_spread():
    runs = [{"seed": 42, "a": 1.0}, {"seed": 0, "a": 3.0}, {"seed": 1, "a": 2.0}]
    header, row = seed_table(runs, {"a": "value a"})
    assert header.split() == ["seed", "42", "0", "1", "median", "min", "max"]
    assert row.split() == ["value", "a", "1", "3", "2", "2", "1", "3"]


def test_score_gaps_reads_the_gap_from_two_weights():
    import torch

    scores = torch.tensor([[0.0, 3.0], [2.0, -1.0], [0.5, 0.5]])  # (3, 2)
    assert torch.allclose(score_gaps(torch.softmax(scores, dim=-1)), torch.tensor([3.0, 3.0, 0.0]).double(), atol=1e-5)
    with pytest.raises(ValueError, match=r"rows of two weights"):
        score_gaps(torch.ones(2, 3) / 3)
