"""The data-parallel run with every parameter sharded: PyTorch's ``fully_shard`` (FSDP, ZeRO stage 3).

Each rank keeps 1/N of every parameter (a ``DTensor`` shard), of its gradient and of the optimizer's
state. Before a layer runs, an all-gather assembles its full weights, freed after use; as the
backward pass finishes each layer, a reduce-scatter leaves each rank the mean gradient of its own
shard of that layer, and the optimizer steps only that shard. The arithmetic is the data-parallel
step's, so the model is the same. It runs on ``gloo`` on the CPU from PyTorch 2.7 on: ``fully_shard``
records events on the device's stream, and the CPU's stream has ``record_event`` (a no-op) only
from 2.7. FSDP asks the backend for the mean (``ReduceOp.AVG``); gloo on some releases (2.7 among
them) returns the sum instead, silently (PyTorch issue 162338, 2025): ``reduce_scatter_averages``
asks, and ``fsdp_train`` divides the loss by N itself where it sums.
"""
import warnings

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

from ..models.gpt.model import completion_loss
from .data_parallel import build_model, check_shards, rank_and_world, repeat_dataset

__all__ = ["fsdp_train", "full_parameters", "check_fsdp_on_cpu", "reduce_scatter_averages"]


def check_fsdp_on_cpu():
    """A RuntimeError unless this PyTorch's CPU stream has ``record_event``, which ``fully_shard`` calls."""
    if not hasattr(torch.cpu.Stream, "record_event"):
        raise RuntimeError(f"fully_shard runs on the CPU from PyTorch 2.7 on (its CPU stream has record_event), "
                           f"and this is PyTorch {torch.__version__}, whose CPU stream lacks it: install torch>=2.7")


def full_parameters(model):
    """Every parameter, gathered whole from the shards, in one vector ``(P,)`` (an all-gather: every rank calls it)."""
    return torch.cat([(p.full_tensor() if hasattr(p, "full_tensor") else p).detach().reshape(-1)
                      for p in model.parameters()])


def reduce_scatter_averages(world_size):
    """Whether the process group's reduce-scatter with ``ReduceOp.AVG`` returns the mean (True) or the
    sum (False): each rank sends ones, so the mean is 1 and the sum N. A collective: every rank calls it."""
    reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor  # FSDP's call
    received = torch.empty(1)
    reduce_scatter(received, torch.ones(world_size), op=dist.ReduceOp.AVG)  # (1,)
    return bool(received.item() == 1.0)


def fsdp_train(rank, world_size, run):
    """``data_parallel.manual_train``'s run (contiguous shards of each global batch, in order) with each
    layer and the whole model wrapped by ``fully_shard``. Returns ``{"parameters": (steps, P) after every
    step, gathered, "local_elements": how many parameter numbers this rank holds, "total_elements": P,
    "backend_averages": whether the reduce-scatter averaged (else the loss was divided by N here)}``."""
    check_fsdp_on_cpu()
    rank, world_size = rank_and_world(world_size)
    shard = check_shards(run.global_batch, world_size)
    inputs, targets = repeat_dataset(run).tensors
    model = build_model(run)
    total = sum(p.numel() for p in model.parameters())
    for layer in model.layers:  # one all-gather per layer: only one layer's full weights at a time
        fully_shard(layer)
    fully_shard(model)  # the rest: embedding (tied to the output layer), final norm
    local = sum(p.to_local().numel() for p in model.parameters())
    averages = reduce_scatter_averages(world_size)
    scale = 1.0 if averages else 1.0 / world_size  # a backend that sums gets each rank's loss / N
    optimizer = torch.optim.SGD(model.parameters(), lr=run.lr, momentum=0.9)  # steps the shards
    n_batches, snapshots = run.n_samples // run.global_batch, []
    for step in range(run.steps):
        start = (step % n_batches) * run.global_batch + rank * shard
        with warnings.catch_warnings():  # the logits are a view; nothing here changes them in place
            warnings.filterwarnings("ignore", message=".*returned a view tensor")
            loss = scale * completion_loss(model(inputs[start:start + shard]), targets[start:start + shard])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # layer by layer, a reduce-scatter: each rank gets the mean gradient of its shard
        optimizer.step()
        snapshots.append(full_parameters(model))
    return {"parameters": torch.stack(snapshots), "local_elements": local, "total_elements": total,
            "backend_averages": averages}
