"""Chapter 14: how much memory a call allocates, as PyTorch's CPU allocator reports it.

``tracemalloc`` sees only Python's own objects, not a tensor's numbers, which PyTorch allocates
itself. Its profiler, with ``profile_memory=True``, records every allocation and every free the
allocator makes, including the working buffers a fused kernel allocates inside C++ (which no
Python-level hook sees). Memory that a library such as MKL allocates for itself is not counted.
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from ..checks import check_positive_int
from ..devices import torch_threads
from ..expect import Claim
from ..models import attend, tiled_attention
from .quiet_profiler import quiet_stderr

__all__ = ["MemoryReport", "measure_memory", "attention_memory", "memory_claims"]


@dataclass(frozen=True)
class MemoryReport:
    """What one call allocated: ``peak_bytes`` held at once (its result included), the
    ``largest_bytes`` of one allocation, and how many ``allocations`` it made."""

    peak_bytes: int
    largest_bytes: int
    allocations: int


def measure_memory(compute, threads=None):
    """Run ``compute()`` once and return ``(its result, MemoryReport)``.

    Only the memory allocated during the call counts (the inputs, made before, do not); the
    result is still alive at the end, so it is part of the peak. CPU allocations only.
    ``threads``: run on that many PyTorch threads (a kernel may allocate a buffer per thread);
    ``None`` leaves the setting as it is.
    """
    if not callable(compute):
        raise TypeError(f"compute must be a function of no arguments, got {type(compute).__name__}")
    if threads is not None:
        check_positive_int("threads", threads)
    with torch_threads(threads), quiet_stderr(), \
            profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = compute()
    events = [event for event in prof.profiler.kineto_results.events()
              if event.name() == "[memory]" and event.device_type() == torch.autograd.DeviceType.CPU]
    alive = peak = largest = count = 0
    for event in sorted(events, key=lambda event: event.start_ns()):  # in time order: + allocated, - freed
        alive += event.nbytes()
        peak = max(peak, alive)
        if event.nbytes() > 0:
            largest, count = max(largest, event.nbytes()), count + 1
    return result, MemoryReport(peak, largest, count)


def attention_memory(lengths, n_heads=1, d=64, block=128, seed=0):
    """Peak memory of one self-attention call at each length, three ways: ``"naive"`` (the course's
    ``attend``, which writes the weights out), ``"tiled"`` (``tiled_attention``, blocks of ``block``)
    and ``"fused"`` (``F.scaled_dot_product_attention``, as PyTorch dispatches it here).

    Queries, keys and values ``(1, n_heads, L, d)`` from ``seed``, on one thread (the fused
    kernel allocates a buffer per thread). Returns a dict of lists of bytes, one per length,
    and ``"output"``: the bytes of the output alone.
    """
    peaks = {"naive": [], "tiled": [], "fused": [], "output": []}
    generator = torch.Generator().manual_seed(seed)
    for length in lengths:
        q, k, v = (torch.randn(1, n_heads, length, d, generator=generator) for _ in range(3))  # (1, H, L, d) each
        with torch.no_grad():
            runs = {"naive": lambda: attend(q, k, v)[0],
                    "tiled": lambda: tiled_attention(q, k, v, block_q=block, block_k=block),
                    "fused": lambda: F.scaled_dot_product_attention(q, k, v)}
            for name, compute in runs.items():
                out, report = measure_memory(compute, threads=1)
                peaks[name].append(report.peak_bytes)
                del out
        peaks["output"].append(n_heads * length * d * 4)
    return peaks


def memory_claims(lengths, peaks):
    """What chapter 14 says about ``attention_memory``'s numbers (lengths doubling, float32)."""
    naive, tiled, fused, output = (torch.tensor(peaks[name], dtype=torch.float64)
                                   for name in ("naive", "tiled", "fused", "output"))
    growth = (naive[1:] / naive[:-1]).log2()  # 2 when memory is quadratic, 1 when linear
    scores = torch.tensor([length * length * 4 for length in lengths], dtype=torch.float64)  # one L x L float32 matrix
    tiled_extra, fused_extra = tiled - output, fused - output  # beyond the output
    return [
        Claim(bool((growth[-3:] > 1.9).all() and (growth[-3:] < 2.1).all()),
              "naive: each doubling of L multiplies the peak by about 4 (2^1.9 to 2^2.1) from L = 1,024 on",
              growth.tolist()),
        Claim(bool((naive >= 2 * scores).all()), "naive: the peak holds at least two L × L matrices", (naive / scores).tolist()),
        Claim(bool(tiled_extra[-1] < 1.5 * tiled_extra[2]),
              "tiled: the memory beyond the output grows by less than 1.5× from L = 1,024 to 8,192",
              (tiled_extra[2].item(), tiled_extra[-1].item())),
        Claim(bool(fused_extra[-1] < 1.5 * fused_extra[2]),
              "fused: the memory beyond the output grows by less than 1.5× from L = 1,024 to 8,192",
              (fused_extra[2].item(), fused_extra[-1].item())),
        Claim(bool(naive[-1] > 100 * max(tiled[-1], fused[-1])),
              "at L = 8,192 the naive peak is over 100 times the tiled and the fused ones",
              (naive[-1] / tiled[-1]).item()),
    ]
