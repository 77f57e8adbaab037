"""Chapter 07's stored warm-up study: fourteen seeds with and without the warm-up at lr 0.01, and the
claims made on it failing where they should."""
import pytest
import torch

from stepbystep.experiments.warmup_seeds import FAILED, SEEDS, load_warmup_seeds, warmup_claims


@pytest.fixture(scope="module")
def study():
    return load_warmup_seeds()


def test_the_stored_study_holds_every_seed_with_and_without(study):
    seeds, runs = study
    assert seeds == SEEDS and seeds[:2] == (0, 1)  # the chapter's two live seeds first
    assert set(runs) == {"with warm-up", "without"}
    assert all(tuple(table.shape) == (len(seeds), 2) for table in runs.values())  # validation loss, exact match


def test_every_claim_holds_on_the_stored_study(study):
    assert [c.claim for c in warmup_claims(study[1]) if not c.holds] == []


def test_the_counts_the_chapter_states(study):
    without = study[1]["without"]
    failed = without[:, 1] < FAILED
    assert int(failed.sum()) == 8 and len(failed) == 14  # "over fourteen seeds, eight failed"
    assert 0.6 <= without[~failed, 1].min() and without[~failed, 1].max() < 0.99  # "from 60% to 99%"


def test_the_claims_fail_where_they_should(study):
    runs = study[1]
    failing = lambda changed: [c.claim for c in warmup_claims(changed) if not c.holds]  # noqa: E731
    weak = dict(runs, **{"with warm-up": runs["with warm-up"].clone()})
    weak["with warm-up"][4, 1] = 0.9  # a warm-up run that did not learn
    assert any("every one of the 14 seeds" in claim for claim in failing(weak))
    none_failed = dict(runs, without=runs["without"].clone())
    none_failed["without"][:, 1] = 0.9
    assert any("some seeds fail" in claim for claim in failing(none_failed))
    close = dict(runs, without=runs["without"].clone())
    close["without"][5, 0] = 1.5 * runs["with warm-up"][5, 0]
    assert any("over twice" in claim for claim in failing(close))
    uniform = dict(runs, without=runs["without"].clone())
    uniform["without"][0, :] = torch.tensor([3.3, 0.0])  # a failed run at the loss of a uniform guess
    assert any("ln V - 0.3" in claim for claim in failing(uniform))


def test_a_recomputed_seed_matches_the_stored_one(study):
    from stepbystep.devices import environment, torch_threads
    from stepbystep.experiments.warmup_seeds import load_warmup_environment, warmup_run
    seeds, runs = study
    index = seeds.index(12)  # a seed the chapter does not run
    with torch_threads(1):
        fresh = warmup_run(12, warmup=True)
        same_setting = environment() == load_warmup_environment()
    if same_setting:  # the machine, release and threads that wrote the file: the same run
        assert fresh == pytest.approx(runs["with warm-up"][index].tolist(), rel=1e-4)
    assert fresh[1] >= 0.97  # the claim made of every warm-up run, on any machine
