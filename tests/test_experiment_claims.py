"""The chapter experiments' claim functions: each claim holds on data shaped like the chapter's
runs, and fails, by name, when the data says otherwise."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from stepbystep.expect import ClaimFailed, expect_all
from stepbystep.experiments.attention_kernels import attention_ops, kernel_claims
from stepbystep.experiments.norm_placement import initial_gradient_claims, training_claims
from stepbystep.experiments.position_claims import length_claims, training_length_claims
from stepbystep.experiments.date_translation import translation_seed_study
from stepbystep.experiments.square_baselines import baseline_claims, square_seed_spread
from stepbystep.models import EncoderLayer, copy_to_torch


def failing(claims):
    return [claim.claim for claim in claims if not claim.holds]


# chapter 04 -------------------------------------------------------------------------------
FIRST = np.array([1.20, 1.15, 1.10, 1.05, 1.00, 0.95])  # nearly flat, shrinking upwards
LAST = np.array([0.50, 0.30, 0.35, 0.60, 0.90, 1.40])  # a dip, then growing to the output


def run(label, norms, losses):
    return SimpleNamespace(label=label, norms=np.asarray(norms), losses=np.asarray(losses))


def four_runs(stuck_loss=0.5, stuck_lower=1e-4):
    steps = np.ones((35, 6))
    stuck = steps.copy()
    stuck[-1, :3] = stuck_lower
    return [run("norm-first, no warm-up", np.vstack([FIRST, steps[1:]]), [1.0, 0.01]),
            run("norm-first, warm-up 20 steps", steps, [1.0, 0.02]),
            run("norm-last, no warm-up", np.vstack([LAST, stuck[1:]]), [1.0, stuck_loss]),
            run("norm-last, warm-up 20 steps", steps, [1.0, 0.03])]


def test_initial_gradients_hold_for_the_chapter_pattern_and_fail_for_a_flat_norm_last(capsys):
    expect_all(initial_gradient_claims(FIRST, LAST))
    assert capsys.readouterr().out.count("✓") == 4
    flat = np.full(6, 1.0)
    assert failing(initial_gradient_claims(flat, flat)) == [
        "norm-first: every layer within a factor 1.5, each a little below the one beneath it",
        "norm-last: largest in the last layer, smallest in one of layers 2 to 4",
        "norm-last: the last layer's gradient more than 1.5 times the smallest",
        "norm-last: growing from layer 3 to the output, and the first layer above the second"]


def test_training_claims_hold_when_only_norm_last_without_warm_up_stalls():
    assert failing(training_claims(four_runs(), baseline=1.0)) == []
    assert failing(training_claims(four_runs(stuck_loss=0.03, stuck_lower=0.5), baseline=1.0)) == [
        "norm-last without warm-up stalls above 0.2 and ten times the other runs' losses"]
    runs = four_runs()
    runs[0].norms[10, 0] = 50.0  # one step where norm-first's layers are 50 times apart
    with pytest.raises(ClaimFailed, match="norm-first: at every step the six layers' gradients stay within"):
        expect_all(training_claims(runs, baseline=1.0))


# chapter 10 -------------------------------------------------------------------------------
def position_results():
    results = {"sinusoidal": [[1.0, 0.57, 0.3], [0.995, 0.56, 0.35]], "learned": [[1.0, 0.55, 0.3], [1.0, 0.5, 0.3]],
               "rope": [[1.0, 0.97, 0.6], [1.0, 0.96, 0.7]], "alibi": [[0.97, 0.95, 0.93], [0.96, 0.95, 0.92]],
               "none": [[0.75, 0.58, 0.38], [0.8, 0.57, 0.4]]}
    by_position = {scheme: torch.full((64,), 0.2) for scheme in results}
    by_position["none"][1:4] = 0.9
    by_position["rope"][16:32] = 0.98
    return {scheme: torch.tensor(runs) for scheme, runs in results.items()}, by_position


def test_position_claims_hold_for_the_chapter_pattern():
    results, by_position = position_results()
    assert failing(training_length_claims(results, by_position, chance=1 / 15)) == []
    assert failing(length_claims(results, by_position, train_length=16)) == []


def test_position_claims_name_what_a_broken_scheme_breaks():
    results, by_position = position_results()
    results["rope"][:, 1:] = torch.tensor([0.5, 0.2])  # RoPE no longer holds at 32 tokens
    results["none"][0, 0] = 0.1  # below twice chance
    by_position["none"][1:4] = 0.2  # no early advantage without positions
    assert failing(training_length_claims(results, by_position, chance=1 / 15)) == [
        "without positions: more than twice chance, at most 90% at 16 tokens",
        "without positions, positions 1-3 beat positions 12-15 by more than 10 points (seed 0)"]
    assert failing(length_claims(results, by_position, train_length=16)) == [
        "RoPE holds at 32 tokens (at least 95% in every seed)",
        "without positions, the accuracy falls at every longer test length"]  # 0.1 at 16, then 0.4
    results, by_position = position_results()
    results["learned"][1, 2] = 0.95  # a learned table that extrapolates, ahead of ALiBi
    by_position["rope"][48:] = 0.9
    assert failing(length_claims(results, by_position, train_length=16)) == [
        "sinusoidal and learned stay below 0.45 at 64 tokens in every seed",
        "ALiBi is ahead of every other scheme at 64 tokens",
        "RoPE (seed 0) is right at least 95% over positions 16-31 and under 30% over 48-63",
        "at 64 tokens, no positions is ahead of sinusoidal and learned in every seed"]


# chapter 05 -------------------------------------------------------------------------------
def test_square_seed_spread_measures_each_seed_and_reproduces():
    first, second = square_seed_spread([0, 1], epochs=2)
    again = square_seed_spread([0], epochs=2)[0]
    assert first == again and first != second  # a seed reproduces its run; another seed differs
    assert [first["seed"], second["seed"]] == [0, 1]
    for run in (first, second):
        assert 0 <= run["below"] <= 2 and 0 <= run["draws_above"] <= 20
        assert run["final_val"] > 0 and run["mode_ratio"] > 0 and run["teacher_forced_ratio"] > 0
        assert 0 <= run["weakest_head"] <= run["matching"] <= 1
        # the largest of two weights that sum to 1 is at least 0.5
        assert 0.5 <= run["cross_decided"] <= 1 and 0.5 <= run["encoder_decided"] <= 1


def test_baseline_claims_hold_for_a_trained_model_and_fail_for_an_untrained_one():
    assert failing(baseline_claims(1.01, 0.02, 0.015, last_val_loss=0.014, noise_floor=0.01)) == []
    assert failing(baseline_claims(1.01, 0.02, 0.9, last_val_loss=0.014, noise_floor=0.01)) == [
        "the Transformer is more than 20 times better than predicting zeros",
        "the Transformer's MSE is under 1.5 times the mirror's (it beats the mirror in most runs, not all)",
        "the test MSE is within 0.7 to 1.4 times the last validation loss"]
    assert failing(baseline_claims(0.5, 0.05, 0.005, last_val_loss=0.005, noise_floor=0.01)) == [
        "predicting zeros costs about the targets' variance, 1.01 (0.9 to 1.1)",
        "the mirror costs about 2 · 0.1² = 0.02 (0.015 to 0.025)",
        "the Transformer stays above the noise floor"]


def test_attention_ops_finds_the_operations_each_path_runs():
    torch.manual_seed(0)
    teaching = EncoderLayer(2, 8, 16, dropout=0.0, norm_first=False).eval()
    fused = EncoderLayer(2, 8, 16, dropout=0.0, norm_first=False, store_alphas=False).eval()
    fused.load_state_dict(teaching.state_dict())
    theirs = copy_to_torch(teaching, torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval())
    x = torch.randn(2, 5, 8)

    def pytorch(fast):
        torch.backends.mha.set_fastpath_enabled(fast)
        try:
            return theirs(x)
        finally:
            torch.backends.mha.set_fastpath_enabled(True)

    ops = {"teaching": attention_ops(lambda: teaching(x)), "fused": attention_ops(lambda: fused(x)),
           "no fast path": attention_ops(lambda: pytorch(False)), "fast path": attention_ops(lambda: pytorch(True))}
    assert failing(kernel_claims(ops)) == []
    # swapped paths are caught
    swapped = dict(ops, **{"fast path": ops["fused"], "fused": ops["fast path"]})
    assert len(failing(kernel_claims(swapped))) == 2
    with pytest.raises(ValueError, match="missing"):
        kernel_claims({"teaching": []})
    with pytest.raises(TypeError, match="compute must be a function"):
        attention_ops(None)


def test_translation_seed_study_trains_each_seed_and_reproduces():
    small = {"n_epochs": 1, "warmup_steps": 2, "n_train": 256, "n_val": 40}
    first, second = translation_seed_study([0, 1], **small)
    again = translation_seed_study([0], **small)[0]
    assert first == again and first != second  # a seed reproduces its run; another seed differs
    assert [first["seed"], second["seed"]] == [0, 1]
    for run in (first, second):
        assert 0 <= run["exact_match"] <= 1
        assert 0 < run["val_loss"] < math.log(15)  # below a uniform guess over the 15 target ids, after 8 steps
