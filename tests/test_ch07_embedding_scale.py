"""Chapter 07's stored embedding-size study: what it holds, one seed recomputed, and the claims
the chapter makes on it, which fail where they should."""
import json

import torch

from stepbystep.experiments.embedding_scale import (
    LEARNED,
    SEEDS,
    SETTINGS,
    embedding_seeds,
    load_embedding_seeds,
    stored_claims,
    to_json,
)


def test_the_stored_study_holds_every_setting_for_twenty_seeds_the_chapter_does_not_run():
    seeds, results = load_embedding_seeds()
    assert seeds == SEEDS and len(seeds) == 20 and not set(seeds) & {0, 1, 2, 3, 4}
    assert list(results) == list(SETTINGS)
    assert all(runs.shape == (20, 2) for runs in results.values())
    assert all(bool(((runs[:, 1] >= 0) & (runs[:, 1] <= 1) & (runs[:, 0] > 0)).all()) for runs in results.values())


def test_a_recomputed_seed_matches_the_stored_study():
    names = ["default", "positions × 3.3"]  # seed 11: where louder positions did not learn
    fresh = embedding_seeds(seeds=(11,), names=names)
    _, stored = load_embedding_seeds()
    row = SEEDS.index(11)
    for name in names:
        assert torch.allclose(torch.tensor(fresh["results"][name]), stored[name][row:row + 1], atol=0.02), name
    assert stored["positions × 3.3"][row, 1] < LEARNED


def test_every_claim_holds_on_the_stored_study():
    _, results = load_embedding_seeds()
    claims = stored_claims(results)
    assert len(claims) == 6 and all(bool(claim.holds) for claim in claims), [c.claim for c in claims if not c.holds]


def _held(results):
    return [bool(claim.holds) for claim in stored_claims(results)]


def _with(results, name, column, values):
    runs = results[name].clone()
    runs[:, column] = torch.as_tensor(values, dtype=runs.dtype)
    return dict(results, **{name: runs})


def test_the_claims_fail_where_they_should():
    _, results = load_embedding_seeds()
    n = len(SEEDS)
    # louder positions learning on every seed would contradict "not on all"
    assert not _held(_with(results, "positions × 3.3", 1, [1.0] * n))[1]
    # the default learning on four seeds
    assert not _held(_with(results, "default", 1, [1.0] * 4 + [0.5] * (n - 4)))[1]
    # louder positions above the default on three seeds
    louder = results["default"][:, 0].clone()
    louder[3:] *= 0.1
    louder[:3] *= 2
    assert not _held(_with(results, "positions × 3.3", 0, louder))[2]
    # the default learning where louder positions did not
    assert not _held(_with(results, "default", 1, [0.99] * n))[3]
    # positions × 3.3 below the default on every seed
    assert not _held(_with(results, "positions × 3.3", 0, results["default"][:, 0] * 0.5))[4]
    # std 0.3 failing outright on one seed
    assert not _held(_with(results, "std 0.3", 1, [0.1] + results["std 0.3"][1:, 1].tolist()))[5]
    # × √d_model reversing a fifth of the strings on one seed
    assert not _held(_with(results, "× √d_model", 1, [0.2] + [0.0] * (n - 1)))[0]


def test_to_json_round_trips_one_line_per_setting():
    study = {"seeds": [5], "epochs": 2, "torch": "x", "results": {"× √d_model": [[2.0, 0.0]], "default": [[0.1, 0.5]]}}
    text = to_json(study)
    assert json.loads(text) == study and len(text.splitlines()) == 4 and "× √d_model" in text
