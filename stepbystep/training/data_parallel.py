"""Data parallelism: N processes, each with the whole model, each on 1/N of every batch, one model.

Every rank starts from the same weights and computes gradients on its shard of the global batch;
an all-reduce sums the shards' gradients and each rank divides by N, so every rank holds the mean
gradient over the shards and takes the same step. With a loss that is a mean over equally many
elements per shard, the mean of the shards' gradients is the gradient of the whole batch's loss:
N processes train the model one process trains on the whole batch, step for step (up to the
order of floating-point sums). By hand (``average_gradients``) or with PyTorch's
``DistributedDataParallel`` and ``DistributedSampler`` (``ddp_train``); shards of unequal size,
whose mean losses need a scale per rank for the average to be the whole batch's gradient again
(``unequal_shards_train``); ``processes.run_ranks`` starts the ranks.

The task: the course's decoder-only model predicting random tokens repeated (chapter 13's
``repeated_sequences``), with no padding, so every shard's loss averages the same number of tokens.
"""
from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from ..checks import check_non_negative_int, check_positive_int, check_positive_number
from ..data.repeated_sequences import repeated_sequences
from ..models.gpt.config import DecoderConfig
from ..models.gpt.model import completion_loss

__all__ = ["DataParallelRun", "all_reduce_values", "average_gradients", "manual_train_runs", "check_shards", "repeat_dataset", "build_model", "manual_train",
           "ddp_train", "ddp_train_runs", "unequal_shards_train", "flat_parameters", "rank_and_world"]


@dataclass(frozen=True)
class DataParallelRun:
    """One training run, the same whatever the number of processes: ``steps`` SGD steps (momentum 0.9)
    on batches of ``global_batch`` streams from ``n_samples`` repeated sequences, model and data seeded
    with ``seed``. ``set_epoch``: every rank calls ``DistributedSampler.set_epoch`` before each epoch
    (True), none does (False), or only the ranks in a tuple do (a bug: the ranks then draw different
    permutations). The model is a small ``DecoderConfig`` without dropout (dropout would draw other
    masks on other ranks)."""

    steps: int = 4
    global_batch: int = 8
    seed: int = 0
    n_samples: int = 32
    lr: float = 0.1
    set_epoch: bool | tuple = True
    vocab_size: int = 8
    length: int = 6
    d_model: int = 16
    n_layers: int = 1

    def __post_init__(self):
        for name in ("steps", "global_batch", "n_samples", "vocab_size", "length", "d_model", "n_layers"):
            check_positive_int(name, getattr(self, name))
        check_non_negative_int("seed", self.seed)
        check_positive_number("lr", self.lr)
        ranks = self.set_epoch if isinstance(self.set_epoch, tuple) else ()
        if not isinstance(self.set_epoch, (bool, tuple)) or not all(
                isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in ranks):
            raise TypeError(f"set_epoch must be True, False or a tuple of ranks, got {self.set_epoch!r}")
        if self.global_batch > self.n_samples:
            raise ValueError(f"global_batch must be at most n_samples ({self.n_samples}), got {self.global_batch}")

    def replace(self, **changes):
        return DataParallelRun(**{**asdict(self), **changes})


def check_shards(global_batch, world_size):
    """The size of each rank's shard, ``global_batch / world_size``; a ValueError unless it is a whole number."""
    check_positive_int("world_size", world_size)
    check_positive_int("global_batch", global_batch)
    if global_batch % world_size:
        raise ValueError(f"the global batch ({global_batch}) must split evenly over the {world_size} processes, so "
                         f"every shard's mean loss weighs as many tokens: use a multiple of {world_size}")
    return global_batch // world_size


def repeat_dataset(run):
    """``(inputs, targets)`` ``(n_samples, 2·length - 1)`` each: the next token of a repeated sequence."""
    ids = repeated_sequences(run.n_samples, run.length, run.vocab_size, seed=run.seed)  # (n, 2·length)
    return TensorDataset(ids[:, :-1], ids[:, 1:])


def build_model(run):
    """The decoder-only model, its weights drawn from ``run.seed`` (the same on every rank)."""
    config = DecoderConfig(run.vocab_size, d_model=run.d_model, n_heads=2, ff_units=2 * run.d_model,
                           n_layers=run.n_layers, dropout=0.0, pad_id=None, max_len=2 * run.length,
                           embedding_std=0.02)  # tied output: small logits at the start
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(run.seed)
        return config.build()


def flat_parameters(model):
    """Every parameter in one vector ``(P,)``, a copy."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()


def all_reduce_values(rank, world_size, values):
    """Rank ``r`` holds ``values[r]`` and all-reduces it (a sum): ``{"rank", "world_size", "before", "after"}``;
    every rank's ``after`` is the sum of all the ``values``."""
    tensor = values[rank].clone()
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)  # in place: every rank ends with the same sum
    return {"rank": rank, "world_size": world_size, "before": values[rank], "after": tensor}


def average_gradients(model, world_size):
    """Replace every gradient by its mean over the ranks: an all-reduce sums them, then divide by N."""
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)  # every rank now holds the sum
            p.grad /= world_size


def rank_and_world(world_size):
    """``(rank, world_size)``: from the process group, or ``(0, 1)`` in a process that joined none."""
    if dist.is_available() and dist.is_initialized():
        if dist.get_world_size() != world_size:
            raise ValueError(f"world_size {world_size} differs from the group's {dist.get_world_size()}")
        return dist.get_rank(), world_size
    if world_size != 1:
        raise ValueError(f"world_size {world_size} needs a process group: start the ranks with run_ranks")
    return 0, 1


def manual_train(rank, world_size, run, average=True):
    """``run`` with the all-reduce written out: rank ``r`` takes the ``r``-th contiguous shard of each
    global batch (batches in order, no shuffling). ``average=False`` skips the all-reduce (each rank
    then steps on its own shard's gradient). Returns the parameters after every step ``(steps, P)``."""
    rank, world_size = rank_and_world(world_size)
    shard = check_shards(run.global_batch, world_size)
    inputs, targets = repeat_dataset(run).tensors
    model = build_model(run)
    optimizer = torch.optim.SGD(model.parameters(), lr=run.lr, momentum=0.9)
    n_batches, snapshots = run.n_samples // run.global_batch, []
    for step in range(run.steps):
        start = (step % n_batches) * run.global_batch + rank * shard
        x, y = inputs[start:start + shard], targets[start:start + shard]  # (shard, L) each: this rank's part
        loss = completion_loss(model(x), y)  # the mean over this shard's tokens
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if average and world_size > 1:
            average_gradients(model, world_size)
        optimizer.step()
        snapshots.append(flat_parameters(model))
    return torch.stack(snapshots)  # (steps, P)


def manual_train_runs(rank, world_size, runs, average=True):
    """``manual_train`` for each of ``runs`` in turn, in one start of the processes: a list of ``(steps, P)``."""
    return [manual_train(rank, world_size, run, average) for run in runs]


def ddp_train(rank, world_size, run, snapshots=True):
    """``run`` with ``DistributedDataParallel`` (which all-reduces gradients during the backward pass) and a
    ``DistributedSampler``: one permutation per epoch, seeded with ``run.seed`` and the epoch, dealt out
    to the ranks. Returns ``{"parameters": (steps, P) after every step (or None), "state_dict": rank's
    final weights, "losses": each step's loss on this rank's shard}``."""
    rank, world_size = rank_and_world(world_size)
    shard = check_shards(run.global_batch, world_size)
    dataset = repeat_dataset(run)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=run.seed,
                                 drop_last=True)
    loader = DataLoader(dataset, batch_size=shard, sampler=sampler, drop_last=True)
    model = build_model(run)
    wrapped = DistributedDataParallel(model) if world_size > 1 else model
    optimizer = torch.optim.SGD(model.parameters(), lr=run.lr, momentum=0.9)
    history, losses, step, epoch = [], [], 0, 0
    calls_set_epoch = run.set_epoch is True or (isinstance(run.set_epoch, tuple) and rank in run.set_epoch)
    while step < run.steps:
        if calls_set_epoch:
            sampler.set_epoch(epoch)  # without it, every epoch repeats the first one's order
        for x, y in loader:
            loss = completion_loss(wrapped(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # DDP: the gradients arrive averaged over the ranks
            optimizer.step()
            losses.append(loss.item())
            if snapshots:
                history.append(flat_parameters(model))
            step += 1
            if step == run.steps:
                break
        epoch += 1
    return {"parameters": torch.stack(history) if snapshots else None, "state_dict": model.state_dict(),
            "losses": torch.tensor(losses)}


def ddp_train_runs(rank, world_size, runs):
    """``ddp_train`` for each of ``runs`` in turn, in one start of the processes: a list of its results."""
    return [ddp_train(rank, world_size, run) for run in runs]


def unequal_shards_train(rank, world_size, run, shards, scale_sets):
    """``run`` under DDP with shards of unequal size: rank ``r`` takes ``shards[r]`` of every global batch's
    streams (in order, no shuffling) and multiplies its mean loss by ``scales[r]`` before ``backward``; DDP
    averages the gradients over the ranks as always. One run per ``scales`` in ``scale_sets``, in one start
    of the processes: a list of ``(steps, P)``, the parameters after every step. Every stream has as many
    tokens, so a shard of n streams averages n of the batch's B = ``global_batch`` equal parts."""
    rank, world_size = rank_and_world(world_size)
    shards = tuple(shards)
    if len(shards) != world_size or any(not isinstance(n, int) or n < 1 for n in shards) \
            or sum(shards) != run.global_batch:
        raise ValueError(f"shards must be {world_size} positive ints summing to the global batch "
                         f"({run.global_batch}), got {shards}")
    scale_sets = [tuple(float(scale) for scale in scales) for scales in scale_sets]
    if any(len(scales) != world_size for scales in scale_sets):
        raise ValueError(f"every set of scales must hold one number per rank ({world_size}), got {scale_sets}")
    inputs, targets = repeat_dataset(run).tensors
    first, n_batches, runs = sum(shards[:rank]), run.n_samples // run.global_batch, []
    for scales in scale_sets:
        model = build_model(run)
        wrapped = DistributedDataParallel(model) if world_size > 1 else model
        optimizer = torch.optim.SGD(model.parameters(), lr=run.lr, momentum=0.9)
        snapshots = []
        for step in range(run.steps):
            start = (step % n_batches) * run.global_batch + first
            x, y = inputs[start:start + shards[rank]], targets[start:start + shards[rank]]  # (n_r, L) each
            loss = scales[rank] * completion_loss(wrapped(x), y)  # this rank's mean, scaled
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # DDP: the mean over the ranks of the scaled gradients
            optimizer.step()
            snapshots.append(flat_parameters(model))
        runs.append(torch.stack(snapshots))
    return runs
