"""Chapter 17's mixture-of-experts study: the mixed task, the matched dense blocks, the routing
table, the claims on hand-made numbers, and the stored studies (one thread and PyTorch's default)."""
import pytest
import torch

from stepbystep.data.special_tokens import IGNORE_INDEX
from stepbystep.experiments.after_llama.experts import (BLOCKS, N_EXPERTS, PAIRS, SUB_TASKS, block_configs,
                                                        busiest_share, experts_claims, experts_run, experts_table,
                                                        initial_routing, load_experts_study, matched_dense,
                                                        mixed_batch, moe_config, pair_distances, routing_pairs_table,
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
    assert run["initial_routing"] == initial_routing(moe_config(), 0).tolist()
    assert "routing" not in experts_run("dense, same active", seed=0, steps=2)


def _table(first, last):
    """A routing table ``(2 layers, 4 sub-tasks, 4 experts)`` whose task distance is ``first`` in the
    first layer and ``last`` in the last: each sub-task leans by that much towards its own expert."""
    return torch.stack([(1 - a) * torch.full((4, 4), 0.25) + a * torch.eye(4) for a in (first, last)]).tolist()


def _study(first=0.3, last=0.2, initial_first=0.1, initial_last=0.1, busiest=0.3, free_busiest=0.6, moe=0.86,
           active=0.68, total_params=34144, best_active=0.92, active_params=15648, free_first=0.3):
    def run(accuracy, block, seed):
        run = {"accuracy": accuracy, "loss": 0.1}
        if block.startswith("mixture"):
            trained_last = 0.25 if seed == 1 else last  # seeds 0 and 2 the last layer's lowest
            trained_first = first if block == "mixture" else (0.3 if seed == 1 else free_first)
            run.update(routing=_table(trained_first, trained_last), task_distance=[trained_first, trained_last],
                       initial_routing=_table(initial_first, initial_last),
                       busiest=[0.3, busiest if block == "mixture" else free_busiest])
        return run
    accuracy = {"mixture": moe, "dense, same active": active, "dense, same total": 0.85,
                "mixture, no balancing loss": 0.9}
    return {"seeds": [0, 1, 2], "n_experts": N_EXPERTS,
            "parameters": {"mixture": [34144, 15712], "dense, same active": [active_params, active_params],
                           "dense, same total": [total_params, total_params],
                           "mixture, no balancing loss": [34144, 15712]},
            "runs": {block: [run(best_active if block == "dense, same active" and seed == 2 else accuracy[block], block,
                                 seed)
                             for seed in range(3)] for block in BLOCKS}}


def test_the_pair_and_task_distances_of_a_made_up_table():
    table = torch.tensor(_table(0.3, 0.2))  # (2, 4, 4)
    assert torch.allclose(pair_distances(table), torch.tensor([[0.3] * 6, [0.2] * 6]))
    assert torch.allclose(task_distance(table), torch.tensor([0.3, 0.2]))
    assert len(PAIRS) == 6 and PAIRS[0] == (0, 1)


def test_the_untrained_router_is_the_model_train_decoder_starts_from():
    config = moe_config()
    torch.manual_seed(0)
    untrained = config.build().eval()
    by_hand = routing_table(untrained, torch.Generator().manual_seed(98))
    assert torch.equal(initial_routing(config, 0), by_hand)
    assert not torch.equal(initial_routing(config, 1), by_hand)  # another seed, another router


def test_the_claims_hold_on_numbers_that_show_the_effect():
    assert all(claim.holds for claim in experts_claims(_study()))


@pytest.mark.parametrize("change, failing", [
    (dict(first=0.12, initial_first=0.15), "in every layer training routes"),
    (dict(last=0.05, initial_last=0.1), "in every layer training routes"),  # one seed of the last layer below
    (dict(free_first=0.08), "trained on the task's loss only"),  # seeds 0 and 2 below the untrained 0.1
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
    assert all(len(run["initial_routing"]) == 2 for run in study["runs"]["mixture"])  # the control, stored per seed
    assert "copy / reverse" in routing_pairs_table(study).splitlines()[1]
