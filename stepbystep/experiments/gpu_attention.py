"""Chapter 14 on a GPU: the memory and the time of attention written out, fused and in Python tiles.

Runs only where CUDA exists. Memory: the peak the caching allocator reached during one call,
beyond what was allocated before it (``torch.cuda.max_memory_allocated`` after
``reset_peak_memory_stats``), the output included. Time: a GPU runs its kernels after Python has
queued them, so a clock read in Python measures the queueing; CUDA events recorded in the
stream before and after the call measure the GPU's own time. Each way is warmed up first (the
first calls pick kernels and fill caches), the ways then take turns, and the median counts.
"""
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ..checks import check_positive_int
from ..expect import Claim
from ..models import attend, tiled_attention

__all__ = ["attention_ways", "gpu_memory", "gpu_times", "gpu_claims"]


def _sdpa(backend):
    def run(q, k, v):
        with sdpa_kernel(backend):  # this backend only: an error if it cannot run these inputs
            return F.scaled_dot_product_attention(q, k, v)
    return run


def attention_ways(blocks=(64,)):
    """``{name: fn(q, k, v) -> output}``: the written-out ``attend``, ``F.scaled_dot_product_attention``
    restricted to its FlashAttention and to its MATH backend, and ``tiled_attention`` in each block size."""
    ways = {"written out": lambda q, k, v: attend(q, k, v)[0],
            "SDPA, flash kernel": _sdpa(SDPBackend.FLASH_ATTENTION),
            "SDPA, math backend": _sdpa(SDPBackend.MATH)}
    for block in blocks:
        check_positive_int("every block", block)
        ways[f"tiles of {block}"] = lambda q, k, v, block=block: tiled_attention(q, k, v, block_q=block, block_k=block)
    return ways


def _cuda(device):
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"these measurements need a CUDA device, got {device}")
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device is available here: these measurements need one")
    return device


def _inputs(batch, n_heads, length, d, dtype, device, requires_grad=False):
    """Queries, keys and values ``(batch, n_heads, length, d)``, seeded, on ``device``."""
    for name, value in (("batch", batch), ("n_heads", n_heads), ("length", length), ("d", d)):
        check_positive_int(name, value)
    generator = torch.Generator(device=device).manual_seed(0)
    return [torch.randn(batch, n_heads, length, d, generator=generator, device=device, dtype=dtype)
            .requires_grad_(requires_grad) for _ in range(3)]


def _cannot_run(error):
    """Whether ``error`` says the GPU cannot run a way (out of memory, no kernel for it), not that it is wrong."""
    return isinstance(error, torch.cuda.OutOfMemoryError) or "No available kernel" in str(error)


def _peak_bytes(run, device):
    """The peak bytes ``run()`` held beyond what was allocated before it; ``None`` if it cannot run here."""
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    try:
        out = run()
        torch.cuda.synchronize(device)  # every kernel done: the peak is final
    except RuntimeError as error:
        if not _cannot_run(error):
            raise
        torch.cuda.empty_cache()
        return None
    peak = torch.cuda.max_memory_allocated(device) - before
    del out
    return peak


def gpu_memory(length=16384, batch=1, n_heads=16, d=64, dtype=torch.float16, blocks=(64,), device="cuda"):
    """Peak extra bytes of one forward call of each of ``attention_ways(blocks)``, without gradients:
    ``{name: bytes}``, ``None`` for a way that cannot run here (out of memory, or no such kernel for
    this GPU)."""
    device = _cuda(device)
    q, k, v = _inputs(batch, n_heads, length, d, dtype, device)
    with torch.no_grad():
        return {name: _peak_bytes(lambda: way(q, k, v), device) for name, way in attention_ways(blocks).items()}


def _gpu_ms(run):
    """Milliseconds the GPU spent between two events recorded around ``run()`` in the current stream."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()  # wait until the GPU reached the end event
    return start.elapsed_time(end)


def gpu_times(length=4096, batch=4, n_heads=16, d=64, dtype=torch.float16, blocks=(256, 64), backward=False,
              repeats=5, warmup=2, ways=None, device="cuda"):
    """Median milliseconds of one call of each of ``attention_ways(blocks)`` (or those named in ``ways``):
    the forward pass, or with ``backward`` the forward and the backward pass (the gradients of
    q, k and v). ``warmup`` untimed calls each first, then ``repeats`` rounds in turns.
    Returns ``{name: ms}``, ``None`` for a way that cannot run here."""
    device = _cuda(device)
    check_positive_int("repeats", repeats)
    check_positive_int("warmup", warmup)
    q, k, v = _inputs(batch, n_heads, length, d, dtype, device, requires_grad=backward)
    grad = torch.randn_like(q)  # (batch, n_heads, length, d): the gradient arriving from above
    chosen = {name: way for name, way in attention_ways(blocks).items() if ways is None or name in ways}

    def call(way):
        if backward:
            return lambda: torch.autograd.grad(way(q, k, v), (q, k, v), grad)
        return lambda: way(q, k, v)

    times, alive = {name: [] for name in chosen}, dict(chosen)
    with torch.set_grad_enabled(backward):
        for name, way in chosen.items():
            try:
                for _ in range(warmup):
                    call(way)()
            except RuntimeError as error:
                if not _cannot_run(error):
                    raise
                torch.cuda.empty_cache()
                del alive[name]
        torch.cuda.synchronize(device)
        for _ in range(repeats):
            for name, way in alive.items():  # taking turns
                times[name].append(_gpu_ms(call(way)))
    return {name: statistics.median(times[name]) if name in alive else None for name in chosen}


def gpu_claims(peaks, forward, both):
    """The chapter's GPU claims, as bounds well inside the gaps of its one recorded run: ``peaks`` from
    ``gpu_memory(blocks=(64,))``, ``forward`` from ``gpu_times(blocks=(256, 64))``, ``both`` from
    ``gpu_times(blocks=(256,), backward=True)``; a way that could not run (``None``) fails its claims."""
    flash, written, nan = "SDPA, flash kernel", "written out", float("nan")

    def ratio(results, slow, fast):  # NaN where either way is missing: every comparison with it is False
        if results.get(slow) is None or results.get(fast) is None:
            return nan
        return results[slow] / results[fast]

    return [
        Claim(ratio(peaks, written, flash) > 100,
              "at 16,384 the written-out attention holds over 100 times the FlashAttention kernel's peak",
              (peaks.get(written), peaks.get(flash))),
        Claim(ratio(peaks, "tiles of 64", flash) < 2, "the Python tiles hold less than twice the kernel's peak",
              (peaks.get("tiles of 64"), peaks.get(flash))),
        Claim(ratio(forward, written, flash) > 3, "forward: the kernel over 3 times as fast as the written-out attention",
              (forward.get(written), forward.get(flash))),
        Claim(ratio(both, written, flash) > 2, "forward and backward: the kernel over twice as fast",
              (both.get(written), both.get(flash))),
        Claim(ratio(forward, "tiles of 256", flash) > 20,
              "the Python tiles of 256 over 20 times slower than the kernel", (forward.get("tiles of 256"), forward.get(flash))),
        Claim(ratio(forward, "tiles of 64", "tiles of 256") > 4, "tiles of 64 over 4 times slower than tiles of 256",
              (forward.get("tiles of 64"), forward.get("tiles of 256"))),
    ]
