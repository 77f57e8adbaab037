"""Chapter 17's mixture-of-experts study: the mixed task, the matched dense blocks, the routing
table, the claims on hand-made numbers, and the stored studies (one thread and PyTorch's default)."""
import pytest
import torch

from stepbystep.data.special_tokens import IGNORE_INDEX
from stepbystep.experiments.after_llama.experts import (BLOCKS, N_EXPERTS, SUB_TASKS, block_configs, busiest_share,
                                                        experts_run, experts_table,
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
