"""The memory probe of chapter 14: what PyTorch's CPU allocator holds during one call."""
import pytest
import torch
import torch.nn.functional as F

from stepbystep.experiments.memory import MemoryReport, attention_memory, measure_memory, memory_claims


def test_a_known_allocation_pattern_gives_known_numbers():
    def pattern():
        a = torch.empty(1000)  # 4000 bytes
        b = torch.empty(500)  # 2000: 6000 alive
        del a
        torch.empty(750)  # 3000 bytes, freed at once: 5000 alive at most
        return b

    result, report = measure_memory(pattern)
    assert report == MemoryReport(peak_bytes=6000, largest_bytes=4000, allocations=3)
    assert result.shape == (500,)


def test_inputs_made_before_do_not_count_and_views_allocate_nothing():
    x = torch.ones(10_000)
    _, report = measure_memory(lambda: x.view(100, 100).T[:5])
    assert report == MemoryReport(0, 0, 0)
    _, report = measure_memory(lambda: x + x)
    assert report.peak_bytes == report.largest_bytes == 40_000


def test_it_sees_a_fused_kernels_own_buffers():
    q = torch.randn(1, 1, 512, 16)
    out, report = measure_memory(lambda: F.scaled_dot_product_attention(q, q, q))
    assert report.largest_bytes > out.numel() * 4  # a buffer larger than the output: the kernel's working memory


def test_compute_must_be_callable():
    with pytest.raises(TypeError, match="compute must be a function of no arguments, got Tensor"):
        measure_memory(torch.ones(1))


def test_attention_memory_and_its_claims():
    lengths = [64, 128, 256, 512, 1024, 2048]
    peaks = attention_memory(lengths, block=32)
    assert set(peaks) == {"naive", "tiled", "fused", "output"}
    assert peaks["output"] == [length * 64 * 4 for length in lengths]
    assert all(len(values) == len(lengths) for values in peaks.values())
    assert peaks["naive"][-1] >= 2 * 2048 * 2048 * 4
    assert peaks["tiled"][-1] < 2048 * 2048 * 4 / 10


def test_memory_claims_fail_on_memory_that_grows_like_the_square():
    lengths = [256, 512, 1024, 2048, 4096, 8192]
    linear = [length * 256 + 100_000 for length in lengths]
    quadratic = [2.5 * length * length * 4 for length in lengths]
    output = [length * 256 for length in lengths]
    good = {"naive": quadratic, "tiled": linear, "fused": linear, "output": output}
    assert all(claim.holds for claim in memory_claims(lengths, good))
    bad = dict(good, tiled=[value + length * length for value, length in zip(linear, lengths)])
    failed = [claim.claim for claim in memory_claims(lengths, bad) if not claim.holds]
    assert failed == ["tiled: the memory beyond the output grows by less than 1.5× from L = 1,024 to 8,192",
                      "at L = 8,192 the naive peak is over 100 times the tiled and the fused ones"]
    assert not memory_claims(lengths, dict(good, naive=linear))[0].holds


def test_threads_are_set_for_the_call_and_restored():
    before = torch.get_num_threads()
    seen, _ = measure_memory(torch.get_num_threads, threads=3)
    assert seen == 3 and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads must be a positive int, got 0"):
        measure_memory(torch.get_num_threads, threads=0)
