"""The bytes a ring all-reduce sends (and a simulated ring that sums right) and the memory of data
parallelism against ZeRO's stages, checked against the ZeRO paper's own example."""
import pytest
import torch

from stepbystep.training.parallel_costs import STAGES, ring_all_reduce, ring_all_reduce_bytes, ring_schedule, training_memory


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_the_simulated_ring_sums_every_chunk_on_every_worker(n):
    generator = torch.Generator().manual_seed(n)
    chunks = [[torch.randn(5, generator=generator) for _ in range(n)] for _ in range(n)]  # worker w, chunk c
    result, transfers = ring_all_reduce(chunks)
    for c in range(n):
        total = sum(chunks[w][c] for w in range(n))
        for w in range(n):
            torch.testing.assert_close(result[w][c], total, rtol=0, atol=1e-6)
    assert len(transfers) == 2 * (n - 1)
    for moves in transfers:  # every worker sends one chunk to the next one, every step
        assert sorted((s, r) for s, r, _, _ in moves) == [(w, (w + 1) % n) for w in range(n)]
    # each worker sends 2 (N - 1) chunks of 1/N of the gradient: the formula's bytes
    n_elements, element = 5 * n, 4
    sent = sum(1 for moves in transfers for s, _, _, _ in moves if s == 0) * 5 * element
    assert sent == ring_all_reduce_bytes(n_elements, n, element)


def test_the_ring_sends_two_n_minus_one_over_n_of_the_gradient():
    assert ring_all_reduce_bytes(1000, 1) == 0
    assert ring_all_reduce_bytes(1000, 2) == 4000  # 2 · 1/2 · 4000 bytes
    assert ring_all_reduce_bytes(1000, 4) == 6000
    assert ring_all_reduce_bytes(124_000_000, 8, 2) == pytest.approx(2 * 7 / 8 * 248e6)
    assert ring_all_reduce_bytes(10 ** 6, 1024) < 2 * 4 * 10 ** 6  # under twice the gradient, however many


def test_the_ring_refuses_chunks_that_do_not_match_the_workers():
    with pytest.raises(ValueError, match=r"N lists of N chunks.*\[2, 3\]"):
        ring_all_reduce([[1, 2], [1, 2, 3]])
    with pytest.raises(TypeError, match="chunks must be"):
        ring_all_reduce("abc")
    with pytest.raises(ValueError, match="world_size must be a positive int"):
        ring_all_reduce_bytes(10, 0)


def test_zero_memory_matches_the_papers_example():
    # Rajbhandari et al. 2020, Figure 1: 7.5B parameters, mixed-precision Adam (K = 12), 64 GPUs
    gigabytes = {stage: training_memory(7_500_000_000, 64, stage)["total"] / 1e9 for stage in STAGES}
    assert gigabytes["ddp"] == pytest.approx(120)
    assert gigabytes["zero1"] == pytest.approx(31.4, abs=0.05)
    assert gigabytes["zero2"] == pytest.approx(16.6, abs=0.05)
    assert gigabytes["zero3"] == pytest.approx(1.9, abs=0.05)


def test_each_stage_shards_one_more_part():
    parts = {stage: training_memory(1000, 4, stage, param_bytes=4, grad_bytes=4, optimizer_bytes=8) for stage in STAGES}
    assert parts["ddp"] == {"parameters": 4000, "gradients": 4000, "optimizer": 8000, "total": 16000}
    assert parts["zero1"]["optimizer"] == 2000 and parts["zero1"]["gradients"] == 4000
    assert parts["zero2"]["gradients"] == 1000 and parts["zero2"]["parameters"] == 4000
    assert parts["zero3"] == {"parameters": 1000, "gradients": 1000, "optimizer": 2000, "total": 4000}
    assert training_memory(1000, 1, "zero3") == training_memory(1000, 1, "ddp")  # one process: nothing to share
    with pytest.raises(ValueError, match="stage must be one of 'ddp', 'zero1', 'zero2', 'zero3', got 'fsdp'"):
        training_memory(1000, 4, "fsdp")


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_schedule_sends_each_chunk_round_the_ring_once_per_phase(n):
    schedule = ring_schedule(n)
    assert len(schedule) == 2 * (n - 1)
    assert [moves[0][3] for moves in schedule] == ["reduce-scatter"] * (n - 1) + ["all-gather"] * (n - 1)
    for moves in schedule:  # each step: every worker sends a different chunk to the next
        assert sorted(c for _, _, c, _ in moves) == list(range(n))
        assert [(s, r) for s, r, _, _ in moves] == [(w, (w + 1) % n) for w in range(n)]
    if n > 1:  # reduce-scatter leaves worker w the whole sum of chunk w + 1, which all-gather sends first
        assert [c for _, _, c, _ in schedule[n - 1]] == [(w + 1) % n for w in range(n)]
    with pytest.raises(ValueError, match="world_size"):
        ring_schedule(0)


def test_the_ring_can_stop_after_any_step():
    start = [[(w,) for _ in range(3)] for w in range(3)]  # worker w's part of each chunk: tuples add up
    halfway, taken = ring_all_reduce(start, steps=2)
    assert taken == ring_schedule(3)[:2]
    assert [sorted(halfway[w][(w + 1) % 3]) for w in range(3)] == [[0, 1, 2]] * 3  # reduce-scattered
    assert halfway[0][2] == (0, 2) and halfway[0][0] == (0,)  # the others: a partial sum, and one never received
    assert ring_all_reduce(start, steps=0) == (start, [])
    with pytest.raises(ValueError, match="steps must be an int from 0 to 4"):
        ring_all_reduce(start, steps=5)
