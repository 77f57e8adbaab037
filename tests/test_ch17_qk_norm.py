"""Chapter 17's QK-norm study: the logit probe, the recipe at toy size, the claims on hand-made
numbers, and the stored studies (one thread and PyTorch's default) holding them."""
import math

import pytest
import torch

from stepbystep.experiments.after_llama.qk_norm import (LEARNING_RATES, VARIANTS, load_qk_study, max_attention_logit,
                                                        qk_claims, qk_config, qk_run, qk_table)


def _model(qk_norm=None):
    torch.manual_seed(0)
    return qk_config(qk_norm).build().eval()


def test_the_largest_logit_scales_with_the_queries():
    model, ids = _model(), torch.randint(1, 16, (4, 12))
    before = max_attention_logit(model, ids)
    with torch.no_grad():
        for layer in model.layers:
            layer.self_attn_heads.linear_query.weight.mul_(2.0)
    assert before > 0
    assert max_attention_logit(model, ids) == pytest.approx(2 * before, rel=1e-5)


def test_qk_norm_bounds_the_logits_by_its_gains():
    model, ids = _model("head"), torch.randint(1, 16, (4, 12))
    with torch.no_grad():
        for layer in model.layers:  # blow the projections up: QK-norm must not care
            layer.self_attn_heads.linear_query.weight.mul_(100.0)
            layer.self_attn_heads.linear_key.weight.mul_(100.0)
    d_k = model.layers[0].self_attn_heads.d_k
    assert max_attention_logit(model, ids) <= math.sqrt(d_k) * (1 + 1e-4)  # gains start at 1: |q̂·k̂|/√d_k <= √d_k


def test_a_toy_run_records_what_the_study_keeps():
    run = qk_run(None, 3e-3, seed=0, steps=20)
    assert set(run) == {"final_loss", "max_logit", "spike", "diverged", "accuracy", "losses", "logits"}
    assert len(run["losses"]) == 20 and len(run["logits"]) == 2  # a probe every 10 steps
    assert not run["diverged"] and math.isfinite(run["final_loss"]) and 0 <= run["accuracy"] <= 1
    assert run["max_logit"] > 0 and run["spike"] >= 0


def _study(high_plain_logit=10_000.0, high_plain_acc=0.2, middle_spike=1.5, low_acc=1.0):
    def run(logit, acc, spike=0.0):
        return {"final_loss": 0.1, "max_logit": logit, "spike": spike, "diverged": False, "accuracy": acc}
    seeds = range(5)
    return {"seeds": list(seeds), "learning_rates": LEARNING_RATES, "runs": {
        "high": {"plain": [run(high_plain_logit, high_plain_acc) for _ in seeds], "QK-norm": [run(30.0, 0.99) for _ in seeds]},
        "middle": {"plain": [run(300.0, 1.0, middle_spike if s < 2 else 0.0) for s in seeds],
                   "QK-norm": [run(8.0, 1.0) for _ in seeds]},
        "low": {v: [run(20.0 if v == "plain" else 4.0, low_acc) for _ in seeds] for v in VARIANTS}}}


def test_the_claims_hold_on_numbers_that_show_the_effect():
    assert all(claim.holds for claim in qk_claims(_study()))


@pytest.mark.parametrize("change, failing", [
    (dict(high_plain_logit=20.0), "every plain seed's largest attention logit"),
    (dict(high_plain_acc=0.95), "some plain seeds fail"),
    (dict(high_plain_acc=0.75), "far below every QK-norm seed"),
    (dict(middle_spike=0.1), "spikes by more than 0.5"),
    (dict(low_acc=0.5), "both blocks learn the task"),
])
def test_each_claim_fails_when_its_numbers_do_not_show_it(change, failing):
    failed = [claim.claim for claim in qk_claims(_study(**change)) if not claim.holds]
    assert any(failing in claim for claim in failed), failed




@pytest.mark.parametrize("default_threads", [False, True], ids=["one thread", "default threads"])
def test_the_stored_study_holds_its_claims(default_threads):
    study = load_qk_study(default_threads)
    assert study["threads"] == ("default" if default_threads else 1) and len(study["seeds"]) >= 10
    failed = [(claim.claim, claim.got) for claim in qk_claims(study) if not claim.holds]
    assert not failed
    assert "QK-norm" in qk_table(study)


def test_the_table_has_an_accuracy_column_and_counts_a_diverged_run_as_0():
    study = _study()
    study["runs"]["high"]["plain"][0]["accuracy"] = float("nan")  # a diverged run
    lines = qk_table(study).splitlines()
    assert "accuracy" in lines[0]
    assert "0.20 (0.00-0.20)" in lines[1] and "0.99 (0.99-0.99)" in lines[2]
