"""Data parallelism on two gloo processes gives the one-process model, step for step: the all-reduce
written out, then DistributedDataParallel with a DistributedSampler; the process starter ends every rank."""
import multiprocessing
import os
from multiprocessing import resource_tracker

import pytest
import torch

from stepbystep.training import processes
from stepbystep.training.data_parallel import DataParallelRun, all_reduce_values, check_shards, ddp_train, manual_train
from stepbystep.training.processes import RankError, run_ranks

RUN = DataParallelRun(steps=6, global_batch=8, n_samples=16, seed=3)  # 2 batches per epoch: 3 epochs


def _children():
    """The pids of this process's live children (multiprocessing's resource tracker, which lives as long as
    this process, started first, so that it counts as one before and after)."""
    resource_tracker.ensure_running()
    path = f"/proc/{os.getpid()}/task/{os.getpid()}/children"
    return set(open(path).read().split()) if os.path.exists(path) else set()


def test_two_processes_averaging_by_hand_take_the_one_process_steps():
    one = manual_train(0, 1, RUN)  # (steps, P): the whole batch in this process
    two = run_ranks(manual_train, 2, RUN)
    for rank, snapshots in enumerate(two):
        assert snapshots.shape == one.shape
        torch.testing.assert_close(snapshots, one, rtol=0, atol=1e-6, msg=f"rank {rank}")
    assert (one[-1] - one[0]).abs().max() > 1e-2  # the weights moved: the equality says something


def test_without_the_all_reduce_each_rank_drifts_away_from_the_one_process_model():
    one = manual_train(0, 1, RUN)
    alone = run_ranks(manual_train, 2, RUN, False)
    for snapshots in alone:
        assert (snapshots[0] - one[0]).abs().max() > 1e-3  # from the first step on: half a batch's gradient
    assert (alone[0][-1] - alone[1][-1]).abs().max() > 1e-3  # and the two ranks no longer hold one model


def test_ddp_with_a_distributed_sampler_takes_the_one_process_steps():
    one = ddp_train(0, 1, RUN)
    two = run_ranks(ddp_train, 2, RUN)
    for rank, result in enumerate(two):
        torch.testing.assert_close(result["parameters"], one["parameters"], rtol=0, atol=1e-6, msg=f"rank {rank}")
    # each rank's loss is its own shard's: their mean is the whole batch's
    torch.testing.assert_close((two[0]["losses"] + two[1]["losses"]) / 2, one["losses"], rtol=0, atol=1e-6)
    assert not torch.allclose(two[0]["losses"], two[1]["losses"])


def test_without_set_epoch_every_epoch_repeats_the_first_ones_order():
    shuffled, repeated = ddp_train(0, 1, RUN), ddp_train(0, 1, RUN.replace(set_epoch=False))
    torch.testing.assert_close(repeated["parameters"][:2], shuffled["parameters"][:2], rtol=0, atol=0)
    assert (repeated["parameters"][2:] - shuffled["parameters"][2:]).abs().max() > 1e-3
    # epoch 2 of the run without set_epoch sees epoch 1's batches again: the same first batch loss shape of data
    run = RUN.replace(lr=1e-12)  # (weights frozen in effect: the losses tell the batches apart)
    losses = ddp_train(0, 1, run.replace(set_epoch=False))["losses"]
    torch.testing.assert_close(losses[2:4], losses[:2], rtol=0, atol=1e-6)
    assert not torch.allclose(ddp_train(0, 1, run)["losses"][2:4], losses[:2], rtol=0, atol=1e-6)


def test_a_global_batch_that_does_not_split_evenly_is_refused():
    assert check_shards(8, 2) == 4
    with pytest.raises(ValueError, match=r"global batch \(9\) must split evenly over the 2 processes"):
        check_shards(9, 2)
    with pytest.raises(ValueError, match="world_size must be"):
        check_shards(8, 0)
    with pytest.raises(ValueError, match="needs a process group"):
        manual_train(0, 2, RUN)
    with pytest.raises(ValueError, match="global_batch must be at most n_samples"):
        DataParallelRun(global_batch=64, n_samples=16)


def test_a_rank_that_raises_ends_every_rank_and_names_itself():
    before = _children()
    with pytest.raises(RankError, match=r"rank \d of 2 raised:(.|\n)*split evenly") as caught:
        run_ranks(manual_train, 2, RUN.replace(global_batch=7, n_samples=16))
    assert caught.value.rank in (0, 1)
    assert _children() <= before and not multiprocessing.active_children()  # no rank left behind


def test_the_rank_that_raised_is_named_not_the_one_its_leaving_cut_off():
    before = _children()  # rank 1 has no values[1] (IndexError) while rank 0 waits in its all-reduce
    with pytest.raises(RankError, match=r"rank 1 of 2 raised:(.|\n)*IndexError") as caught:
        run_ranks(all_reduce_values, 2, [torch.ones(3)])
    assert caught.value.rank == 1
    assert _children() <= before and not multiprocessing.active_children()


def test_run_ranks_refuses_functions_a_fresh_process_cannot_import():
    def local(rank, world_size):
        return rank

    with pytest.raises(TypeError, match="importable module"):
        run_ranks(local, 2)
    with pytest.raises(TypeError, match="importable module"):
        run_ranks(lambda rank, world_size: rank, 2)
    with pytest.raises(ValueError, match="world_size must be"):
        run_ranks(manual_train, 0, RUN)
    assert isinstance(processes.free_port(), int)


def test_lightning_ddp_on_two_processes_takes_the_one_process_steps():
    from stepbystep.training.lightning_ddp import lightning_train

    one = ddp_train(0, 1, RUN)
    two = run_ranks(lightning_train, 2, RUN)
    for rank, result in enumerate(two):
        torch.testing.assert_close(result["parameters"], one["parameters"], rtol=0, atol=1e-6, msg=f"rank {rank}")
        assert len(result["losses"]) == 3  # three epochs of two steps


def test_fully_sharded_on_two_processes_takes_the_one_process_steps_holding_half_the_weights():
    from stepbystep.training.sharded import fsdp_train

    one = manual_train(0, 1, RUN)
    two = run_ranks(fsdp_train, 2, RUN)
    for rank, result in enumerate(two):
        torch.testing.assert_close(result["parameters"], one, rtol=0, atol=1e-6, msg=f"rank {rank}")
    assert two[0]["local_elements"] + two[1]["local_elements"] == two[0]["total_elements"] == one.shape[1]
    assert max(result["local_elements"] for result in two) <= one.shape[1] * 0.6  # about half each


def test_fully_sharded_on_a_backend_that_sums_instead_of_averaging_still_takes_the_one_process_steps():
    from summing_backend import fsdp_train_on_a_summing_backend

    one = manual_train(0, 1, RUN)
    two = run_ranks(fsdp_train_on_a_summing_backend, 2, RUN)
    for rank, result in enumerate(two):
        assert result["backend_averages"] is False  # the probe saw the sum
        torch.testing.assert_close(result["parameters"], one, rtol=0, atol=1e-6, msg=f"rank {rank}")


def test_all_reduce_leaves_the_sum_on_every_rank_and_runs_of_several_seeds_share_one_start():
    from stepbystep.training.data_parallel import all_reduce_values, manual_train_runs

    values = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([10.0, 20.0, 30.0])]
    runs = [RUN.replace(seed=seed, steps=2) for seed in (0, 1)]
    reduced = run_ranks(all_reduce_values, 2, values)
    for rank, result in enumerate(reduced):
        assert result["rank"] == rank and result["world_size"] == 2
        assert torch.equal(result["before"], values[rank]) and torch.equal(result["after"], values[0] + values[1])
    one = manual_train_runs(0, 1, runs)
    for rank, result in enumerate(run_ranks(manual_train_runs, 2, runs)):
        for seed, (mine, reference) in enumerate(zip(result, one)):
            torch.testing.assert_close(mine, reference, rtol=0, atol=1e-6, msg=f"rank {rank}, seed {seed}")
    assert not torch.allclose(one[0], one[1])


def test_ranks_that_outlast_the_timeout_are_ended():
    before = _children()
    with pytest.raises(RankError, match=r"ranks \[0, 1\] of 2 sent nothing within 0.5 s"):
        run_ranks(manual_train, 2, RUN, timeout=0.5)  # no Python starts that fast
    assert _children() <= before and not multiprocessing.active_children()
