"""Timing contenders fairly: alternate them run by run and compare medians.

Running A ten times and then B ten times lets a slow minute (another process, a warming CPU)
land on one contender only. Alternating A, B, A, B, ... spreads such noise over both, and
the median ignores the odd outlier. The clock is ``torch.utils.benchmark.timer``, which waits
for queued GPU work before it reads the time, so a ratio means the same on CUDA as on a CPU.
"""
import statistics

from torch.utils.benchmark import timer

__all__ = ["compare", "ratio_row"]


def compare(contenders, repeats=5, warmup=1):
    """Median wall time in seconds of each callable in ``contenders`` (a dict name -> fn).

    Every contender runs ``warmup`` untimed times first, then ``repeats`` timed rounds in
    which each runs once, in turn.
    """
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            start = timer()
            fn()
            times[name].append(timer() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def ratio_row(label, medians, ours, reference, goal=None):
    """A result row: both medians in milliseconds and ``ours / reference``."""
    ratio = medians[ours] / medians[reference]
    row = {"case": label, "ours": ours, "reference": reference,
           "ours_ms": 1000 * medians[ours], "reference_ms": 1000 * medians[reference], "ratio": ratio}
    if goal is not None:
        row["goal"] = goal
        row["met"] = ratio <= goal
    return row
