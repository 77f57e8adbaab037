"""Chapter 12's stored ten-seed study: what it holds, a subset recomputed, and the claims made on it."""
import json

import torch

from stepbystep.experiments.todays_block import (
    block_claims,
    block_configs,
    date_streams,
    kv_head_claims,
    position_claims,
    summary,
)
from stepbystep.experiments.todays_block_seeds import SEEDS, block_seeds, load_block_seeds, to_json


def test_the_stored_study_holds_every_variant_for_ten_seeds():
    seeds, results = load_block_seeds()
    assert seeds == SEEDS and len(seeds) == 10
    assert list(results) == list(block_configs(len(date_streams(n_train=8, n_val=8)[0])))
    assert all(runs.shape == (10, 2) for runs in results.values())
    assert all(bool(((runs[:, 1] >= 0) & (runs[:, 1] <= 1)).all()) for runs in results.values())


def test_a_recomputed_subset_matches_the_stored_study():
    names = ["2017 block, learned positions", "1 KV head"]
    fresh = block_seeds(seeds=(3,), names=names)
    _, stored = load_block_seeds()
    for name in names:
        assert torch.allclose(torch.tensor(fresh["results"][name]), stored[name][3:4], atol=0.02), name


def test_every_claim_holds_on_the_stored_study():
    _, results = load_block_seeds()
    for claims in (block_claims, position_claims, kv_head_claims):
        assert all(bool(claim.holds) for claim in claims(results)), [c.claim for c in claims(results) if not c.holds]


def _shifted(results, name, by):
    return dict(results, **{name: results[name] + torch.tensor([by, 0.0])})


def test_the_position_claims_fail_where_they_should():
    _, results = load_block_seeds()
    held = {c.claim: bool(c.holds) for c in position_claims(_shifted(results, "2017 block", 0.3))}
    assert not held["the sinusoidal table's median loss is within 0.1 of no positions' at all"]
    held = {c.claim: bool(c.holds) for c in position_claims(_shifted(results, "2017 block + RoPE", 0.2))}
    assert not held["RoPE's loss is more than 0.25 below learned positions' in every seed"]
    held = {c.claim: bool(c.holds) for c in position_claims(_shifted(results, "2017 block, learned positions", 0.2))}
    assert not held["learned positions' median is below both"]


def test_to_json_round_trips_one_line_per_variant():
    study = {"seeds": [0, 1], "steps": 100, "torch": "x", "results": {"a": [[1.0, 0.5], [2.0, 0.25]], "b": [[3.0, 0.0],
                                                                                                        [4.0, 1.0]]}}
    text = to_json(study)
    assert json.loads(text) == study and len(text.splitlines()) == 4


def test_summary_gives_each_variant_its_median_and_range():
    table = summary({"a": torch.tensor([[1.0, 0.5], [3.0, 0.25], [2.0, 1.0]]), "b": torch.tensor([[0.5, 0.0]])})
    lines = table.splitlines()
    assert len(lines) == 3 and "validation loss" in lines[0]
    assert lines[1].split() == ["a", "2.000", "(1.000-3.000)", "0.500", "(0.250-1.000)"]
    assert lines[2].split() == ["b", "0.500", "(0.500-0.500)", "0.000", "(0.000-0.000)"]
