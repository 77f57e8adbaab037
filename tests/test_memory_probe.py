"""The memory probe of chapter 14: what PyTorch's CPU allocator holds during one call."""
import pytest
import torch
import torch.nn.functional as F

from stepbystep.experiments.memory import MemoryReport, measure_memory


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
    assert report.peak_bytes > out.numel() * 4  # more than the output: the kernel's working memory


def test_compute_must_be_callable():
    with pytest.raises(TypeError, match="compute must be a function of no arguments, got Tensor"):
        measure_memory(torch.ones(1))
