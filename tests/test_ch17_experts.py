"""Chapter 17's mixture-of-experts study: the mixed task, the matched dense blocks, the routing
table, the claims on hand-made numbers, and the stored studies (one thread and PyTorch's default)."""
import pytest
import torch

from stepbystep.data.special_tokens import IGNORE_INDEX
from stepbystep.experiments.after_llama.experts import (BLOCKS, N_EXPERTS, SUB_TASKS, block_configs, busiest_share,
                                                        experts_claims, experts_run, experts_table,
                                                        load_experts_study, matched_dense, mixed_batch, moe_config,
                                                        routing_table, task_distance)
from stepbystep.models.gpt.parameter_counts import parameter_counts


def test_the_mixed_task_answers_each_sub_task():
    tasks = torch.arange(4)
    ids, targets, got = mixed_batch(4, torch.Generator().manual_seed(0), tasks)
    assert (got == tasks).all() and ids.shape == targets.shape
    digits, answers = ids[:, 1:7], targets[:, 7:]  # the answer is predicted from the separator on
    assert (targets[:, :7] == IGNORE_INDEX).all() and (ids[:, 0] == 10 + tasks).all()
    assert answers[0].tolist() == digits[0].tolist()
    assert answers[1].tolist() == digits[1].flip(0).tolist()
    assert answers[2].tolist() == sorted(digits[2].tolist())
    assert answers[3].tolist() == ((digits[3] + 1) % 10).tolist()


@pytest.mark.parametrize("count", ["active", "total"])
def test_the_dense_blocks_match_the_mixture_within_one_unit(count):
    moe = moe_config()
    dense = matched_dense(moe, count)
    target = getattr(parameter_counts(moe), count)
    per_unit = 3 * moe.d_model * moe.n_layers  # one SwiGLU unit in every layer
    assert dense.n_experts is None and abs(parameter_counts(dense).total - target) <= per_unit / 2
    assert sum(p.numel() for p in dense.build().parameters()) == parameter_counts(dense).total
    with pytest.raises(ValueError, match="count must be"):
        matched_dense(moe, "all")


def test_the_routing_table_shares_sum_to_one_per_sub_task():
    torch.manual_seed(0)
    model = moe_config().build().eval()
    table = routing_table(model, torch.Generator().manual_seed(0), n=16)
    assert table.shape == (2, len(SUB_TASKS), N_EXPERTS)
    assert torch.allclose(table.sum(dim=-1), torch.ones(2, len(SUB_TASKS)))
    assert busiest_share(table).shape == (2,) and (busiest_share(table) >= 1 / N_EXPERTS).all()


def test_task_distance_is_zero_for_alike_rows_and_one_for_disjoint():
    alike = torch.full((1, 4, 4), 0.25)
    disjoint = torch.eye(4).unsqueeze(0)  # each sub-task to its own expert
    assert task_distance(alike).tolist() == [0.0] and task_distance(disjoint).tolist() == [1.0]


def test_a_toy_run_records_what_the_study_keeps():
    assert set(block_configs()) == set(BLOCKS)
    run = experts_run("mixture", seed=0, steps=3)
    assert len(run["losses"]) == 3 and 0 <= run["accuracy"] <= 1
    assert len(run["routing"]) == 2 and len(run["busiest"]) == 2 and len(run["task_distance"]) == 2
    assert "routing" not in experts_run("dense, same active", seed=0, steps=2)


def _study(task_distance=0.3, busiest=0.3, free_busiest=0.6, moe=0.86, active=0.68, total_params=34144,
           best_active=0.92, active_params=15648):
    def run(accuracy, block):
        run = {"accuracy": accuracy, "loss": 0.1}
        if block.startswith("mixture"):
            run.update(task_distance=[0.1, task_distance], noise_distance=[[0.05] * 4, [0.05] * 4],
                       busiest=[0.3, busiest if block == "mixture" else free_busiest])
        return run
    accuracy = {"mixture": moe, "dense, same active": active, "dense, same total": 0.85,
                "mixture, no balancing loss": 0.9}
    return {"seeds": [0, 1, 2], "n_experts": N_EXPERTS,
            "parameters": {"mixture": [34144, 15712], "dense, same active": [active_params, active_params],
                           "dense, same total": [total_params, total_params],
                           "mixture, no balancing loss": [34144, 15712]},
            "runs": {block: [run(best_active if block == "dense, same active" and seed == 2 else accuracy[block], block)
                             for seed in range(3)] for block in BLOCKS}}


def test_the_claims_hold_on_numbers_that_show_the_effect():
    assert all(claim.holds for claim in experts_claims(_study()))


@pytest.mark.parametrize("change, failing", [
    (dict(task_distance=0.1), "routes the sub-tasks differently"),
    (dict(busiest=0.5), "no expert takes 40%"),
    (dict(free_busiest=0.2), "without the balancing loss"),
    (dict(best_active=0.5), "do not separate"),
    (dict(total_params=20000), "match the mixture's active and total"),
    (dict(active_params=16000), "match the mixture's active and total"),  # larger than the mixture's 15,712
])
def test_each_claim_fails_when_its_numbers_do_not_show_it(change, failing):
    failed = [claim.claim for claim in experts_claims(_study(**change)) if not claim.holds]
    assert any(failing in claim for claim in failed), failed




@pytest.mark.parametrize("default_threads", [False, True], ids=["one thread", "default threads"])
def test_the_stored_study_holds_its_claims(default_threads):
    study = load_experts_study(default_threads)
    assert study["threads"] == ("default" if default_threads else 1) and len(study["seeds"]) >= 3
    failed = [(claim.claim, claim.got) for claim in experts_claims(study) if not claim.holds]
    assert not failed
    assert "same active" in experts_table(study)
