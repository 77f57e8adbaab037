"""Chapter 07's stored beam study: greedy decoding against a beam of 4 under the warm-up runs of fourteen
seeds, at one and at two threads, and the claims made on it failing where they should."""
import copy

import pytest

from stepbystep.experiments.beam_seeds import (
    N_WORDS,
    beam_claims,
    beam_comparison,
    beam_lines,
    length_claims,
    load_beam_environment,
    load_beam_seeds,
)
from stepbystep.experiments.warmup_seeds import SEEDS

KINDS = ("epoch 2 with warm-up", "without warm-up")


@pytest.fixture(scope="module")
def study():
    return load_beam_seeds()


def failing(half, unsure):
    return [c.claim for c in beam_claims(half, unsure) if not c.holds]


def test_the_stored_study_has_every_seed_at_one_and_two_threads(study):
    assert set(study) == {1, 2}
    for runs in study.values():
        assert set(runs) == set(KINDS)
        for kind in KINDS:
            assert [run["seed"] for run in runs[kind]] == list(SEEDS)
            assert all(run["words"] == N_WORDS and run["beam_less_likely"] <= run["differ"] <= N_WORDS
                       and 0 <= run["greedy_too_short"] <= N_WORDS and 0 <= run["beam_too_short"] <= N_WORDS
                       for run in runs[kind])


def test_every_claim_holds_at_each_thread_count(study):
    for runs in study.values():
        assert failing(runs["epoch 2 with warm-up"], runs["without warm-up"]) == []
        assert any(run["greedy"] < 0.5 for run in runs["without warm-up"])  # the failed-run claim is not empty


def test_the_claims_fail_where_they_should(study):
    half, unsure = copy.deepcopy(study[1]["epoch 2 with warm-up"]), copy.deepcopy(study[1]["without warm-up"])
    broken = copy.deepcopy(half)
    broken[3]["beam"] = broken[3]["greedy"] + 0.06  # a beam far ahead of greedy
    assert failing(broken, unsure) == ["in every seed, the beam's exact match is under 5 points above greedy's and "
                                       "under 2 points below"]
    broken = copy.deepcopy(half)
    broken[0]["greedy"] = 0.4  # a copy that has not learned yet
    assert "after epoch 2 the models get most words right" in failing(broken, unsure)[0]
    broken = copy.deepcopy(unsure)
    failed = next(run for run in broken if run["greedy"] < 0.5)
    failed["beam"] = 0.6  # a beam that rescues a failed run
    assert failing(half, broken) == ["on every failed run, the beam fails too: under half of the words, under 5 "
                                     "points above greedy"]
    broken = copy.deepcopy(half)
    broken[5].update(differ=20, beam_less_likely=13)  # 13 of 250 words: over 5%
    assert any(claim.startswith("under every model") for claim in failing(broken, unsure))
    broken = [dict(run, beam_less_likely=run["differ"]) for run in half + unsure]  # the beam always behind
    assert any(claim.startswith("over the models") for claim in failing(broken[:len(half)], broken[len(half):]))


def test_the_lines_sum_up_each_thread_count(study):
    lines = beam_lines(study)
    assert len(lines) == 8 and lines[0].startswith("1 thread, 14 seeds") and lines[4].startswith("2 threads, 14 seeds")
    total_differ = sum(run["differ"] for kind in KINDS for run in study[1][kind])
    assert f"the outputs differ on {total_differ} words" in lines[2]
    half_short = sum(run["beam_too_short"] for run in study[1]["epoch 2 with warm-up"])
    assert f"and {half_short} after epoch 2" in lines[3]


def test_a_recomputed_model_bears_out_the_claims(study):
    from stepbystep.devices import environment, torch_threads
    from stepbystep.experiments.word_reversal import word_trainer
    with torch_threads(1):
        trainer = word_trainer(lr=1e-2, warmup=True, seed=8)  # a seed the chapter does not run
        trainer.train(2, seed=8, progress=False)  # of its three-epoch schedule
        run = beam_comparison(trainer.model)
        same_setting = environment() == load_beam_environment(1)
    stored = next(run for run in study[1]["epoch 2 with warm-up"] if run["seed"] == 8)
    if same_setting:  # the machine, release and threads that wrote the file: the same run
        assert run == pytest.approx({key: value for key, value in stored.items() if key != "seed"})
    assert failing([run], []) == []  # on any machine, what the chapter says of every such model


def test_the_length_claims_hold_and_fail_where_they_should(study):
    half = study[1]["epoch 2 with warm-up"] + study[2]["epoch 2 with warm-up"]
    unsure = study[1]["without warm-up"] + study[2]["without warm-up"]
    assert all(c.holds for c in length_claims(half, unsure))
    even = [dict(run, beam_too_short=run["greedy_too_short"]) for run in unsure]  # no bias in the failed runs
    assert [c.holds for c in length_claims(half, even)] == [False, True]
    failed = [i for i, run in enumerate(unsure) if run["greedy"] < 0.5]
    fewer = copy.deepcopy(unsure)
    fewer[failed[0]]["beam_too_short"] = fewer[failed[0]]["greedy_too_short"] - 1  # one failed run the other way
    assert [c.holds for c in length_claims(half, fewer)] == [False, True]
    longer = copy.deepcopy(half)
    longer[2]["beam_too_short"] = longer[2]["greedy_too_short"] + 1  # one copy's beam falls short more often
    assert [c.holds for c in length_claims(longer, unsure)] == [True, False]
    many = copy.deepcopy(half)
    many[0].update(greedy_too_short=13, beam_too_short=13)  # 13 of 250: over 5%
    assert [c.holds for c in length_claims(many, unsure)] == [True, False]
