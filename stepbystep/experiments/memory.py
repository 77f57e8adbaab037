"""Chapter 14: how much memory a call allocates, as PyTorch's CPU allocator reports it.

``tracemalloc`` sees only Python's own objects, not a tensor's numbers, which PyTorch allocates
itself. Its profiler, with ``profile_memory=True``, records every allocation and every free the
allocator makes, including the working buffers a fused kernel allocates inside C++ (which no
Python-level hook sees). Memory that a library such as MKL allocates for itself is not counted.
"""
from dataclasses import dataclass

import torch
from torch.profiler import ProfilerActivity, profile

from .attention_kernels import _quiet_stderr

__all__ = ["MemoryReport", "measure_memory"]


@dataclass(frozen=True)
class MemoryReport:
    """What one call allocated: ``peak_bytes`` held at once (its result included), the
    ``largest_bytes`` of one allocation, and how many ``allocations`` it made."""

    peak_bytes: int
    largest_bytes: int
    allocations: int


def measure_memory(compute):
    """Run ``compute()`` once and return ``(its result, MemoryReport)``.

    Only the memory allocated during the call counts (the inputs, made before, do not); the
    result is still alive at the end, so it is part of the peak. CPU allocations only.
    """
    if not callable(compute):
        raise TypeError(f"compute must be a function of no arguments, got {type(compute).__name__}")
    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
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
