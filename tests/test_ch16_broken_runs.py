"""Chapter 16's broken distributed runs: forgetting ``set_epoch`` on every rank keeps the ranks one model and
equal to one process that never reshuffles, calling it on rank 0 only matches no one-process run; shards of
unequal size equal one process only with the right loss scales. The fifth exercise's checker names each
wrong prediction, and the fourth's runs a right answer on two ranks."""
import multiprocessing

import pytest
import torch

from stepbystep.exercises import ch16
from stepbystep.training.data_parallel import (DataParallelRun, ddp_train, ddp_train_runs, manual_train,
                                               unequal_shards_train)
from stepbystep.training.processes import run_ranks

RUN = DataParallelRun(steps=8, global_batch=8, n_samples=16, seed=5)  # 2 batches per epoch: 4 epochs


def _gap(a, b):
    return float((a - b).abs().max())


def test_forgetting_set_epoch_matches_the_run_that_never_reshuffles_and_rank_0_alone_matches_neither():
    runs = [RUN.replace(set_epoch=set_epoch) for set_epoch in ch16.BROKEN_RUNS.values()]
    ranks = run_ranks(ddp_train_runs, 2, runs)  # one start, both runs
    reshuffling = ddp_train(0, 1, RUN)["parameters"]
    no_reshuffling = ddp_train(0, 1, RUN.replace(set_epoch=False))["parameters"]
    nobody, rank0_only = ([rank[i]["parameters"] for rank in ranks] for i in (0, 1))
    for weights in nobody:
        assert _gap(weights, no_reshuffling) < 1e-6
        assert _gap(weights, reshuffling) > 1e-3
    for weights in rank0_only:
        assert min(_gap(weights, reshuffling), _gap(weights, no_reshuffling)) > 1e-3
        torch.testing.assert_close(weights[:2], reshuffling[:2], rtol=0, atol=1e-6)  # epoch 0: still one permutation
    assert _gap(*nobody) < 1e-6 and _gap(*rank0_only) < 1e-6  # DDP keeps the ranks one model either way
    assert not multiprocessing.active_children()


def test_set_epoch_must_be_a_bool_or_a_tuple_of_ranks():
    assert DataParallelRun(set_epoch=(0, 1)).set_epoch == (0, 1)
    for bad in ([0], (0, -1), (True,), "yes", 1):
        with pytest.raises(TypeError, match="set_epoch must be True, False or a tuple of ranks"):
            DataParallelRun(set_epoch=bad)


def test_unequal_shards_equal_one_process_only_with_the_scales():
    run = RUN.replace(steps=6)
    one = manual_train(0, 1, run)  # (steps, P)
    ranks = run_ranks(unequal_shards_train, 2, run, (3, 5), [(0.75, 1.25), (1.0, 1.0)])
    for scaled, plain in ranks:
        assert scaled.shape == plain.shape == one.shape
        assert _gap(scaled, one) < 1e-6
        assert _gap(plain, one) > 1e-2
    # in one process with one shard of the whole batch and a scale of 1, it is manual_train
    torch.testing.assert_close(unequal_shards_train(0, 1, run, (8,), [(1.0,)])[0], one, rtol=0, atol=0)


def test_unequal_shards_refuse_shards_and_scales_that_do_not_fit():
    with pytest.raises(ValueError, match=r"shards must be 1 positive ints summing to the global batch \(8\), got \(3, 5\)"):
        unequal_shards_train(0, 1, RUN, (3, 5), [(1.0,)])
    with pytest.raises(ValueError, match=r"shards must be 1 positive ints summing to the global batch \(8\), got \(7,\)"):
        unequal_shards_train(0, 1, RUN, (7,), [(1.0,)])
    with pytest.raises(ValueError, match=r"one number per rank \(1\)"):
        unequal_shards_train(0, 1, RUN, (8,), [(1.0, 1.0)])


def test_a_right_shard_scale_is_run_on_two_ranks_and_reported():
    result = ch16.shard_scale.check(ch16.shard_scale._solution)
    assert result
    message = repr(result)
    assert "your scales (0.75, 1.25)" in message and "two gloo ranks holding 3 and 5 of every 8 streams" in message
    yours = float(message.split("within ")[1].split(" of it")[0])
    plain = float(message.split("a scale of 1 on both, ")[1].rstrip("."))
    assert yours < 1e-6 and plain > 1e-2
    assert not multiprocessing.active_children()


def test_set_epoch_predictions_are_diagnosed(fails_with):
    right = ch16.set_epoch_runs._solution()
    assert ch16.set_epoch_runs.check(right)
    assert ch16.set_epoch_runs.check({name: f" {value.upper()} " for name, value in right.items()})
    nobody, rank0 = ch16.BROKEN_RUNS

    def answer(**changes):
        return {**right, **{nobody if key == "nobody" else rank0: value for key, value in changes.items()}}

    fails_with(ch16.set_epoch_runs, {nobody: "", rank0: ""}, "write one of ('reshuffling', 'no reshuffling', 'neither')")
    fails_with(ch16.set_epoch_runs, answer(nobody="reshuffling"), "which epoch does a sampler hold when nobody calls")
    fails_with(ch16.set_epoch_runs, answer(nobody="neither"), "do the ranks differ in seed or in epoch?")
    for wrong in ("reshuffling", "no reshuffling"):
        message = fails_with(ch16.set_epoch_runs, answer(rank0=wrong), "do the ranks still deal out one permutation")
        assert f"matches {wrong!r}" in message
    fails_with(ch16.set_epoch_runs, [right], "expected a dict")
    fails_with(ch16.set_epoch_runs, {nobody: "neither"}, "expected the keys")
    for message in (repr(ch16.set_epoch_runs.check(answer(nobody=wrong))) for wrong in ("reshuffling", "neither")):
        assert "no reshuffling" not in message  # the diagnosis does not give the answer away
