"""Chapter 17's latent-attention study: cache bytes computed against held, the rank recipe at toy
size, the claims on hand-made numbers, and the stored studies (one thread and PyTorch's default)."""
import pytest
import torch

from stepbystep.experiments.after_llama.latent import (RANKS, attention_configs, bytes_table, cache_per_token,
                                                       latent_claims, latent_table, load_latent_study, rank_run)


@pytest.mark.parametrize("width", [dict(d_model=64, n_heads=8), dict(d_model=48, n_heads=4, n_layers=3)])
def test_computed_bytes_are_those_the_cache_holds(width):
    for name, config in attention_configs(kv_latent_dim=12, **width).items():
        computed, measured = cache_per_token(config, n_tokens=5)
        assert computed == measured, name


def test_bytes_follow_the_dtype():
    config = attention_configs()["latent"]
    assert cache_per_token(config, dtype=torch.bfloat16)[1] * 2 == cache_per_token(config)[1]


def test_a_toy_run_records_what_the_study_keeps():
    run = rank_run(2, seed=0, steps=4)
    assert len(run["losses"]) == 4 and 0 <= run["accuracy"] <= 1 and not run["diverged"]


def _study(small=0.3, enough=1.0, full=1.0, latent_bytes=160):
    runs = {str(rank): [{"accuracy": small if rank == min(RANKS) else enough}] * 3 for rank in RANKS}
    runs["multi-head"] = [{"accuracy": full}] * 3
    cache = {"multi-head": [1024, 1024], "grouped-query": [256, 256], "multi-query": [128, 128],
             "latent": [latent_bytes, 160]}
    return {"seeds": [0, 1, 2], "cache_bytes_per_token": cache, "runs": runs}


def test_the_claims_hold_on_numbers_that_show_the_effect():
    assert all(claim.holds for claim in latent_claims(_study()))


@pytest.mark.parametrize("change, failing", [
    (dict(small=0.9), "cannot"),
    (dict(enough=0.7), "copy as well"),
    (dict(full=0.5), "multi-head attention copies"),
    (dict(latent_bytes=170), "the package computes are those the cache held"),
])
def test_each_claim_fails_when_its_numbers_do_not_show_it(change, failing):
    failed = [claim.claim for claim in latent_claims(_study(**change)) if not claim.holds]
    assert any(failing in claim for claim in failed), failed




@pytest.mark.parametrize("default_threads", [False, True], ids=["one thread", "default threads"])
def test_the_stored_study_holds_its_claims(default_threads):
    study = load_latent_study(default_threads)
    assert study["threads"] == ("default" if default_threads else 1) and len(study["seeds"]) >= 3
    failed = [(claim.claim, claim.got) for claim in latent_claims(study) if not claim.holds]
    assert not failed
    assert "rank 1" in latent_table(study) and "multi-query" in bytes_table(study)
