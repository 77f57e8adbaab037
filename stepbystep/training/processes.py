"""Start one process per rank, joined in a ``torch.distributed`` group on ``gloo``: what every
data-parallel run here starts from.

``run_ranks(fn, world_size, *args)`` starts ``world_size`` fresh Python processes (the ``spawn`` start
method: a process inherits nothing but what pickles, so ``fn`` must be a function importable from a
module, not one defined in a notebook), joins them into one group on the ``gloo`` backend over a
free local port, calls ``fn(rank, world_size, *args)`` in each and returns their results in rank
order. A rank that raises stops every rank, and the error comes back naming it; no process outlives
the call, whatever happens (an error, a timeout, Ctrl-C).
"""
import io
import multiprocessing
import os
import queue
import socket
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

from ..checks import check_positive_int, check_positive_number

__all__ = ["free_port", "run_ranks", "RankError"]


class RankError(RuntimeError):
    """A rank raised (``rank``, and the text of its traceback in the message), or died, or ran out of time."""

    def __init__(self, message, rank=None):
        super().__init__(message)
        self.rank = rank


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now (the operating system's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _to_bytes(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _rank_main(rank, world_size, port, threads, timeout, fn, args, results):
    """One rank: join the group, run ``fn``, send back its result (or its error), leave the group.

    An error is in the pipe before the rank leaves: leaving breaks the collectives the other ranks
    wait in, and their "connection closed" errors must reach the parent after the cause, not before."""
    try:
        torch.set_num_threads(threads)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
                                timeout=timedelta(seconds=timeout))  # a collective waits this long at most
        results.put((rank, None, _to_bytes(fn(rank, world_size, *args))))
    except BaseException:  # noqa: BLE001 (the parent raises it, naming the rank)
        results.put((rank, traceback.format_exc(), None))
        results.close()
        results.join_thread()  # written to the pipe, not only handed to the queue's thread
    finally:
        if dist.is_initialized():  # (fn may have left it already)
            dist.destroy_process_group()


def _check_importable(fn):
    if not callable(fn):
        raise TypeError(f"fn must be a function, called as fn(rank, world_size, *args), got {type(fn).__name__}")
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if module in (None, "__main__") or "<locals>" in name or "<lambda>" in name:
        raise TypeError(f"fn must be a function defined at the top of an importable module (each process imports it "
                        f"afresh), got {name or fn!r} from {module or 'nowhere'}: move it into a .py file")


def run_ranks(fn, world_size, *args, timeout=300.0, threads=None):
    """``[fn(0, world_size, *args), ..., fn(world_size - 1, world_size, *args)]``, each rank in its own
    process, all in one ``gloo`` group.

    Results come back through ``torch.save`` (tensors, numbers, strings and containers of them).
    ``threads``: PyTorch threads per rank; by default the machine's cores shared among the ranks.
    ``timeout``: seconds for the whole run (generous: a loaded machine starts Python slowly). A rank that
    raises, dies or outlasts ``timeout`` is a ``RankError`` naming it, with its traceback; every process
    is ended before this returns or raises.
    """
    _check_importable(fn)
    check_positive_int("world_size", world_size)
    check_positive_number("timeout", timeout)
    threads = max(1, (os.cpu_count() or 1) // world_size) if threads is None else threads
    check_positive_int("threads", threads)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    processes = [context.Process(target=_rank_main, args=(rank, world_size, port, threads, timeout, fn, args, results),
                                 daemon=True) for rank in range(world_size)]
    try:
        for process in processes:
            process.start()
        return _collect(processes, results, world_size, time.monotonic() + timeout, timeout)
    finally:
        for process in processes:  # the ones still running: stopped, then killed
            if process.is_alive():
                process.terminate()
        for process in processes:
            if process.pid is not None:
                process.join(5)
                if process.is_alive():
                    process.kill()
                    process.join()
        results.close()
        results.join_thread()


def _collect(processes, results, world_size, deadline, timeout):
    """Every rank's result, in rank order; the first error, death or the deadline raises ``RankError``."""
    values = {}
    while len(values) < world_size:
        try:
            rank, error, value = results.get(timeout=0.1)
        except queue.Empty:
            dead = [rank for rank, p in enumerate(processes) if rank not in values and p.exitcode not in (None, 0)]
            if dead:
                raise RankError(f"rank {dead[0]} of {world_size} died with exit code {processes[dead[0]].exitcode} "
                                "before sending its result", dead[0]) from None
            if time.monotonic() > deadline:
                missing = [rank for rank in range(world_size) if rank not in values]
                raise RankError(f"ranks {missing} of {world_size} sent nothing within {timeout} s") from None
            continue
        if error is not None:
            raise RankError(f"rank {rank} of {world_size} raised:\n{error}", rank)
        values[rank] = torch.load(io.BytesIO(value), weights_only=True)
    return [values[rank] for rank in range(world_size)]
