"""Chapter 16's data parallelism: the time of one training step on 2 gloo processes against 1.

The same global batch every time: one process steps on all of it; two processes under
``DistributedDataParallel`` step on half each and all-reduce the gradients. Every process has one
PyTorch thread, so two processes use two cores; a second reference is one process with two threads
(what the same two cores do without data parallelism). A step is the forward pass, the backward pass
(with DDP's all-reduce in it) and the optimizer step; each start of the processes times ``steps`` of
them after two untimed ones, the slowest rank's median counting. The starts alternate (one process,
two processes, two threads, again...), and the medians over the starts are compared.
"""
import statistics
import time

import torch
from torch.nn.parallel import DistributedDataParallel

from stepbystep.models.gpt.model import completion_loss
from stepbystep.training.data_parallel import DataParallelRun, build_model, check_shards, repeat_dataset
from stepbystep.training.processes import run_ranks

RUN = DataParallelRun(global_batch=32, n_samples=64, length=32, vocab_size=64, d_model=128, n_layers=2)
QUICK_RUN = DataParallelRun(global_batch=4, n_samples=8)


def step_times(rank, world_size, run, steps):
    """On each rank: the wall time in seconds of each of ``steps`` training steps on its shard of the
    global batch (after two untimed steps), a list."""
    shard = check_shards(run.global_batch, world_size)
    inputs, targets = repeat_dataset(run).tensors
    x = inputs[rank * shard:(rank + 1) * shard]  # (shard, L): this rank's half of the batch
    y = targets[rank * shard:(rank + 1) * shard]
    model = build_model(run)
    wrapped = DistributedDataParallel(model) if world_size > 1 else model
    optimizer = torch.optim.SGD(model.parameters(), lr=run.lr, momentum=0.9)
    times = []
    for step in range(steps + 2):
        start = time.perf_counter()
        loss = completion_loss(wrapped(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # under DDP: waits for the all-reduce
        optimizer.step()
        if step >= 2:
            times.append(time.perf_counter() - start)
    return times


def _median_step(world_size, threads, run, steps):
    per_rank = run_ranks(step_times, world_size, run, steps, threads=threads)
    return max(statistics.median(times) for times in per_rank)  # the slowest rank sets the pace


def run(quick=False):
    """Median step time of each setting over alternating starts; the result rows."""
    settings = {"2 processes, 1 thread each": (2, 1), "1 process, 1 thread": (1, 1), "1 process, 2 threads": (1, 2)}
    model_run, steps, starts = (QUICK_RUN, 2, 1) if quick else (RUN, 30, 5)
    measured = {name: [] for name in settings}
    for _ in range(starts):
        for name, (world_size, threads) in settings.items():
            measured[name].append(_median_step(world_size, threads, model_run, steps))
    medians = {name: statistics.median(values) for name, values in measured.items()}
    label = (f"decoder-only, d_model={model_run.d_model}, {model_run.n_layers} layers, global batch "
             f"{model_run.global_batch} × {2 * model_run.length - 1} tokens, gloo")
    ours = "2 processes, 1 thread each"
    return [_row(label, medians, ours, reference) for reference in list(settings)[1:]]


def _row(label, medians, ours, reference):
    """A ratio row: step times in milliseconds, ``ours / reference``, and the scaling efficiency
    ``reference / (2 · ours)`` (1: two processes take half the time)."""
    ratio = medians[ours] / medians[reference]
    return {"case": label, "ours": ours, "reference": reference, "ours_ms": 1000 * medians[ours],
            "reference_ms": 1000 * medians[reference], "ratio": ratio, "efficiency": 1 / (2 * ratio)}
