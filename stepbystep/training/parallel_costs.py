"""What data parallelism costs: the bytes a ring all-reduce sends, and the memory each process holds.

Ring all-reduce (each of N workers talks only to the next one): the gradient is cut into N chunks;
in N - 1 reduce-scatter steps each worker passes one chunk on and adds the one it receives, so
every worker ends with one chunk summed over all; in N - 1 all-gather steps the summed chunks go
round. Each worker sends 2 (N - 1) chunks of 1/N of the gradient: 2 (N - 1) / N of its size, from
exactly once the gradient (N = 2) towards twice it as N grows, never more.

Memory: data parallelism keeps the whole model, its gradients and the optimizer's state on every
process. ZeRO (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", 2020) shards them over the N processes: stage 1 the optimizer state, stage 2 the gradients
too, stage 3 the parameters too (PyTorch's FSDP). Activations are not counted here.
"""
from ..checks import check_choice, check_instance, check_int_range, check_non_negative_int, check_positive_int

__all__ = ["ring_all_reduce_bytes", "ring_schedule", "ring_all_reduce", "STAGES", "training_memory"]

STAGES = ("ddp", "zero1", "zero2", "zero3")  # zero3 is FSDP's full sharding


def ring_all_reduce_bytes(n_elements, world_size, bytes_per_element=4):
    """Bytes each process sends per all-reduce of ``n_elements`` numbers over ``world_size`` processes in
    a ring: ``2 (N - 1) / N · n_elements · bytes_per_element`` (0 for one process)."""
    check_non_negative_int("n_elements", n_elements)
    check_positive_int("world_size", world_size)
    check_positive_int("bytes_per_element", bytes_per_element)
    return 2 * (world_size - 1) * n_elements * bytes_per_element / world_size


def ring_schedule(world_size):
    """The ring all-reduce's moves on ``world_size`` workers: one list per step (2 (N - 1) steps) of
    ``(sender, receiver, chunk, phase)``. Worker w always sends to w + 1 (mod N). In reduce-scatter
    step s it sends chunk (w - s) mod N, which the receiver adds to its own; after N - 1 steps worker
    w holds chunk (w + 1) mod N summed over all. In all-gather step s it sends chunk (w + 1 - s) mod N,
    which the receiver copies."""
    check_positive_int("world_size", world_size)
    n = world_size
    reduce = [[(w, (w + 1) % n, (w - s) % n, "reduce-scatter") for w in range(n)] for s in range(n - 1)]
    gather = [[(w, (w + 1) % n, (w + 1 - s) % n, "all-gather") for w in range(n)] for s in range(n - 1)]
    return reduce + gather


def ring_all_reduce(chunks, steps=None):
    """Simulate a ring all-reduce: ``chunks[w][c]`` is worker ``w``'s chunk ``c`` (N workers, N chunks each,
    numbers, tensors or anything ``+`` adds). Returns ``(result, transfers)`` after the first ``steps``
    steps of ``ring_schedule(N)`` (all 2 (N - 1) of them by default): ``result[w][c]`` what worker ``w``
    then holds of chunk ``c`` (after every step: the sum over workers, on every worker), ``transfers``
    the steps taken."""
    check_instance("chunks", chunks, (list, tuple), "a list of N lists of N chunks")
    n = len(chunks)
    if n == 0 or any(not isinstance(row, (list, tuple)) or len(row) != n for row in chunks):
        raise ValueError(f"chunks must hold N lists of N chunks (one chunk per worker), got "
                         f"{[len(row) if isinstance(row, (list, tuple)) else type(row).__name__ for row in chunks]}")
    schedule = ring_schedule(n)
    if steps is not None:
        check_int_range("steps", steps, 0, len(schedule))
        schedule = schedule[:steps]
    data = [list(row) for row in chunks]
    for moves in schedule:
        sent = [data[w][c] for w, _, c, _ in moves]  # all send at once: read before anyone receives
        for (_, to, c, phase), value in zip(moves, sent):
            data[to][c] = data[to][c] + value if phase == "reduce-scatter" else value
    return data, schedule


def training_memory(n_params, world_size, stage="ddp", param_bytes=2, grad_bytes=2, optimizer_bytes=12):
    """Bytes of model state per process: ``{"parameters", "gradients", "optimizer", "total"}``.

    The defaults are ZeRO's mixed-precision Adam: 2-byte parameters and gradients, and 12 bytes of
    optimizer state per parameter (a 4-byte copy of the weights, momentum and variance), 16 in all;
    plain 4-byte Adam is ``param_bytes=4, grad_bytes=4, optimizer_bytes=8``. ``stage``: one of
    ``STAGES``; each ZeRO stage divides one more part by ``world_size``.
    """
    check_non_negative_int("n_params", n_params)
    check_positive_int("world_size", world_size)
    check_choice("stage", stage, STAGES)
    for name, value in (("param_bytes", param_bytes), ("grad_bytes", grad_bytes), ("optimizer_bytes", optimizer_bytes)):
        check_non_negative_int(name, value)
    sharded = STAGES.index(stage)  # how many of optimizer, gradients, parameters are sharded
    parts = {
        "parameters": n_params * param_bytes / (world_size if sharded >= 3 else 1),
        "gradients": n_params * grad_bytes / (world_size if sharded >= 2 else 1),
        "optimizer": n_params * optimizer_bytes / (world_size if sharded >= 1 else 1),
    }
    return {**parts, "total": sum(parts.values())}
