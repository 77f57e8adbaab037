# %% [markdown]
# # Chapter 16: beyond one machine: data parallelism, the same numbers on one process and on two
#
# Every model of this course has trained in one process, with the course's own trainer. A model
# that outgrows one process is not trained by a new, hand-written trainer: it is trained by
# PyTorch's `DistributedDataParallel` (DDP), often under a trainer such as PyTorch Lightning. This
# chapter shows why that gives the model one process would have given, what it sends between the
# processes, and where it stops, on two processes of this machine's CPU, with PyTorch's `gloo`
# backend.
#
# Sources, each at the point it is used:
#
# - Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel Training" (2020):
#   the design of `DistributedDataParallel`;
# - Micikevicius et al., "Mixed Precision Training" (2018), and Kalamkar et al., "A Study of BFLOAT16
#   for Deep Learning Training" (2019): 16-bit training with float32 weights;
# - Patarasuk and Yuan, "Bandwidth Optimal All-reduce Algorithms for Clusters of Workstations"
#   (2009): the ring all-reduce;
# - Rajbhandari, Rasley, Ruwase and He, "ZeRO: Memory Optimizations Toward Training Trillion
#   Parameter Models" (2020): sharding the optimizer state, the gradients and the parameters.
#
# By the end of this chapter you will be able to:
#
# - say what a process, a **rank** and the **world size** are, and what an **all-reduce** leaves
#   on every rank;
# - show that two processes, each computing gradients on half of every batch and averaging them,
#   take **the same steps** as one process on the whole batch, and when they do not (and scale the
#   loss of shards of unequal size so that they do again);
# - do the same with `DistributedDataParallel` and a `DistributedSampler`, under Lightning, and fully
#   sharded, and say which one-process run a DDP run still matches when `set_epoch` is forgotten;
# - train a course model with **Lightning** and get the course trainer's numbers, and load a
#   Lightning checkpoint back into the course trainer;
# - turn k small batches into one large one with **gradient accumulation**;
# - train in **bfloat16** with autocast, say what it rounds and what it keeps in float32, and why
#   bfloat16 needs no loss scaling while float16 does;
# - count the bytes a ring all-reduce sends, and the memory data parallelism and ZeRO's stages
#   leave on each process.

# %%
import logging
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace

import lightning
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader

from stepbystep.exercises import ch16
from stepbystep.experiments.mixed_precision import (PRECISION_RUN, autocast_dtypes, autocast_rules, float_formats,
                                                    precision_study)
from stepbystep.expect import expect, expect_close
from stepbystep.models.gpt.model import completion_loss
from stepbystep.plots import seed_loss_curves
from stepbystep.seeding import set_seed
from stepbystep.training import StepByStep
from stepbystep.training.accumulation import accumulate_gradients
from stepbystep.training.data_parallel import (
    DataParallelRun,
    all_reduce_values,
    build_model,
    ddp_train,
    ddp_train_runs,
    flat_parameters,
    manual_train_runs,
    repeat_dataset,
)
from stepbystep.training.lightning import StepByStepModule, load_lightning_checkpoint
from stepbystep.training.lightning_ddp import lightning_train
from stepbystep.training.parallel_costs import STAGES, ring_all_reduce, ring_all_reduce_bytes, training_memory
from stepbystep.training.processes import run_ranks
from stepbystep.training.sharded import fsdp_train
from stepbystep.widgets import ring_explorer

# %% [markdown]
# ## Processes, ranks and the world size
#
# A **process** is a running Python with its own memory: two processes share no tensor. A
# distributed run starts N of them, the **world size**, and numbers them 0 to N - 1, their
# **ranks**. They talk only through **collectives**, operations every rank calls together. The
# one data parallelism needs is the **all-reduce**: every rank brings a tensor, and every rank
# leaves with the sum of all of them.
#
# `run_ranks(fn, N, *args)` starts N fresh processes, joins them in one group on `gloo` (PyTorch's
# backend for CPUs; NCCL is the one for NVIDIA GPUs), calls `fn(rank, N, *args)` in each and
# returns their results in rank order. A fresh process imports `fn` from its module, so `fn` lives
# in the package, not in this notebook; and `run_ranks` ends every process before it returns, even
# when one raises. `all_reduce_values` gives rank r the tensor `values[r]` and all-reduces it:

# %%
values = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([10.0, 20.0, 30.0])]
reduced = run_ranks(all_reduce_values, 2, values)
for result in reduced:
    print(f"rank {result['rank']} of {result['world_size']}: before {result['before'].tolist()}, "
          f"after {result['after'].tolist()}")
expect(all(torch.equal(result["after"], values[0] + values[1]) for result in reduced),
       "after the all-reduce, every rank holds the sum of both ranks' tensors")

# %% [markdown]
# ## The central claim: two processes, one model
#
# Data parallelism gives every rank the whole model, with the same initial weights, and 1/N of
# every batch: its **shard**. Each rank computes the gradient of its shard's mean loss; an
# all-reduce sums the N gradients and each rank divides by N. If every shard's loss averages the
# same number of terms, the mean of the shards' gradients is the gradient of the whole batch's
# mean loss:
#
# $$\frac{1}{N}\sum_{r=1}^{N} \nabla \frac{1}{B/N}\sum_{i \in \text{shard } r} \ell_i
#   = \nabla \frac{1}{B}\sum_{i=1}^{B} \ell_i .$$
#
# Every rank then takes the same optimizer step from the same weights, so the ranks stay one model,
# and it is the model one process would train on the whole batch. Only the order of
# floating-point additions differs, so the two agree to rounding, not to the bit.
#
# The task is chapter 13's: random tokens, then the same tokens again, for the course's
# decoder-only model (one layer, no dropout: dropout would draw other masks on other ranks). No
# stream is padded, so every shard's loss averages the same number of tokens. `manual_train`
# writes the all-reduce out: rank r takes the r-th half of every batch of 8 streams; with one
# process it takes the whole batch. Three seeds, six SGD steps each, the weights compared after
# every step:

# %% tags=["nbval-ignore-output"]
runs = [DataParallelRun(steps=6, global_batch=8, n_samples=16, seed=seed) for seed in (0, 1, 2)]
one = manual_train_runs(0, 1, runs)  # [(steps, P)] per seed: one process, whole batches
two = run_ranks(manual_train_runs, 2, runs)  # per rank, per seed
average = False  # the control: no all-reduce, each rank steps on its own half
alone = run_ranks(manual_train_runs, 2, runs, average)
gap = torch.tensor([[(two[rank][s] - one[s]).abs().max() for s in range(3)] for rank in (0, 1)])  # (ranks, seeds)
gap_alone = torch.tensor([[(alone[rank][s] - one[s]).abs().max() for s in range(3)] for rank in (0, 1)])
moved = torch.tensor([(one[s][-1] - one[s][0]).abs().max() for s in range(3)])
print("largest difference from one process, any step (rows: ranks, columns: seeds)")
print(gap)
print("the same without the all-reduce")
print(gap_alone)
print("how far the weights moved in 6 steps, per seed:", moved)

# %%
expect(bool((gap < 1e-6).all()),
       "with the all-reduce, both ranks hold the one-process weights after every step, to 1e-6, on every seed",
       gap.max())
expect(bool((moved > 1e-2).all()), "the weights moved by more than 1e-2 in six steps: the equality is not "
       "that of weights standing still", moved.min())
expect(bool((gap_alone > 1e-3).all()), "without it, each rank gets more than 1e-3 away from the one-process "
       "model on every seed", gap_alone.min())

# %% [markdown]
# ## DistributedDataParallel and the DistributedSampler
#
# `DistributedDataParallel` (Li et al. 2020) does the all-reduce for you, and better: it registers
# a hook on every parameter, groups the gradients into **buckets** (25 MB by default,
# `bucket_cap_mb`) and all-reduces a bucket as soon as the backward pass has filled it, while the
# backward pass goes on computing the next ones. On GPUs that overlap hides much of the
# communication; here, on two CPU processes of a small model, it shows nothing but the same numbers.
#
# Each rank must also see its own part of every batch. A `DistributedSampler` draws one permutation
# of the data set per epoch, from its `seed` plus the epoch, and deals it out: rank r takes places
# r, r + N, r + 2N... The ranks agree on the permutation because they share the seed and the epoch
# number. The epoch number is the sampler's own, 0 until `sampler.set_epoch(epoch)` changes it;
# `ddp_train` calls it on every rank before every epoch (what forgetting it does is exercise 5's
# question). One process with a sampler of one replica and the whole batch is the reference:

# %% tags=["nbval-ignore-output"]
run = runs[0].replace(steps=8)  # four epochs of two batches
reference = ddp_train(0, 1, run)
ddp = run_ranks(ddp_train, 2, run)
ddp_gap = max((result["parameters"] - reference["parameters"]).abs().max() for result in ddp)
shard_losses = torch.stack([result["losses"] for result in ddp])  # (ranks, steps): each rank's own shard
print("largest difference from one process:", ddp_gap)
print("each rank's loss, step by step:\n", shard_losses)
print("one process:", reference["losses"])

# %%
expect(ddp_gap < 1e-6, "with DDP and a DistributedSampler, both ranks hold the one-process weights after every "
       "step, to 1e-6", ddp_gap)
expect_close(shard_losses.mean(0), reference["losses"], "the mean of the two ranks' shard losses is the whole "
             "batch's loss, step by step", atol=1e-6)

# %% [markdown]
# ## The same model under Lightning
#
# PyTorch Lightning (Falcon and the Lightning team, 2019) writes the loop you would otherwise
# write: the device, the epochs, validation, checkpoints, logging, and the processes of a
# distributed run. You give it a `LightningModule`: the model, what one training step computes,
# and the optimizer. `StepByStepModule(model, loss_fn, optimizer)` is the course trainer's step in
# that form, and it keeps the course trainer's history (the plain mean of each epoch's batch losses,
# and the validation loss). Same seed, same batches, same optimizer: the two trainers should give the
# same losses, epoch by epoch. Lightning's `ModelCheckpoint` callback saves a file at the end of
# every epoch; `load_lightning_checkpoint` puts one into a `StepByStep`, which trains on from there.
#
# One condition, and it is Lightning's, not the module's. A plain `for batch in loader` loop asks the
# loader for one batch past its end; a shuffling `RandomSampler` draws its next random numbers at
# that moment, when the last batch of the epoch was full. Lightning stops at the loader's length
# and never asks, so from the second epoch on it shuffles otherwise. Here the last batch is partial
# (30 streams in batches of 8), and the orders are the same; with 32 streams they would not be.

# %% tags=["nbval-ignore-output"]
logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)  # no banner about the hardware
warnings.filterwarnings("ignore", message=".*does not have many workers")  # the batches are made in this process
warnings.filterwarnings("ignore", message=".*isinstance\\(treespec, LeafSpec\\)")  # inside Lightning
lightning_run = DataParallelRun(n_samples=30, seed=0)  # batches of 8, 8, 8 and 6


def parts():
    """The model and its optimizer, the same every call."""
    model = build_model(lightning_run)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def loaders():
    """Shuffled training batches of 8 (the loader's own generator) and validation batches."""
    train = DataLoader(repeat_dataset(lightning_run), batch_size=8, shuffle=True, generator=torch.Generator())
    return train, DataLoader(repeat_dataset(lightning_run.replace(seed=1, n_samples=16)), batch_size=8)


model, optimizer = parts()
sbs = StepByStep(model, completion_loss, optimizer, device="cpu")
sbs.set_loaders(*loaders())
sbs.train(4, seed=0, progress=False)  # the course trainer, four epochs straight

model, optimizer = parts()
module = StepByStepModule(model, completion_loss, optimizer)
train_loader, val_loader = loaders()
set_seed(0, train_loader)  # what sbs.train(seed=0) does first
with tempfile.TemporaryDirectory() as folder:
    saving = ModelCheckpoint(dirpath=folder, filename="{epoch}", save_top_k=-1)  # every epoch's end
    trainer = lightning.Trainer(max_epochs=2, accelerator="cpu", devices=1, callbacks=[saving], logger=False,
                                enable_progress_bar=False, enable_model_summary=False, default_root_dir=folder)
    trainer.fit(module, train_loader, val_loader)  # Lightning, two epochs
    model, optimizer = parts()
    resumed = StepByStep(model, completion_loss, optimizer, device="cpu")
    resumed.set_loaders(*loaders())
    load_lightning_checkpoint(resumed, Path(folder) / "epoch=1.ckpt")
resumed.train(2, progress=False)  # the course trainer, two more epochs from Lightning's file
print("StepByStep, 4 epochs:      ", [round(loss, 4) for loss in sbs.losses])
print("Lightning, 2 epochs:       ", [round(loss, 4) for loss in module.losses])
print("its file, then StepByStep: ", [round(loss, 4) for loss in resumed.losses])

# %%
expect_close(module.losses + module.val_losses, sbs.losses[:2] + sbs.val_losses[:2],
             "Lightning gives the course trainer's training and validation losses, epoch by epoch, to 1e-6", atol=1e-6)
expect_close(resumed.losses + resumed.val_losses, sbs.losses + sbs.val_losses,
             "loaded from Lightning's checkpoint, the course trainer goes on as if it had trained all four epochs",
             atol=1e-6)

# %% [markdown]
# On two processes, `lightning.Trainer(accelerator="cpu", devices=2, strategy="ddp")` wraps the
# module in `DistributedDataParallel` itself. Lightning starts its own processes unless it finds
# them started; the package's `lightning_train` runs in the processes `run_ranks` started, tells
# Lightning each one's rank, and trains the DDP section's run (8 steps, the same
# `DistributedSampler`, which Lightning moves to the next epoch itself) with `StepByStepModule`.
# One process without Lightning is the reference again:

# %% tags=["nbval-ignore-output"]
lightning_ranks = run_ranks(lightning_train, 2, run)  # each process imports Lightning: a few seconds
lightning_gap = max((result["parameters"] - reference["parameters"]).abs().max() for result in lightning_ranks)
print("largest difference from one process, after any of the 8 steps:", lightning_gap)

# %%
expect(lightning_gap < 1e-6, "under lightning.Trainer(devices=2, strategy=\"ddp\"), both ranks hold the "
       "one-process weights after every step, to 1e-6", lightning_gap)

# %% [markdown]
# ## Sharding everything: FSDP
#
# Data parallelism keeps the whole model, its gradients and the optimizer's state on every rank.
# PyTorch's `fully_shard` (FSDP, the third stage of ZeRO, below) keeps only 1/N of each parameter
# on each rank: before a layer runs, an all-gather assembles its full weights, freed after use;
# as the backward pass finishes each layer, a reduce-scatter leaves each rank the averaged gradient
# of its own shard of that layer (so the sending overlaps the rest of the backward pass), and the
# optimizer steps only that shard. The arithmetic is the same, so the model is too. It runs on
# `gloo` on the CPU from PyTorch 2.7 on; on an older PyTorch, `fsdp_train` stops at once and says
# which release it needs.
#
# One more trap, and the reason to compare against one process at all: FSDP asks the backend for
# the mean of the shards' gradients (`ReduceOp.AVG`), and `gloo` on some PyTorch releases, 2.7
# among them, silently returns their sum (PyTorch issue 162338, 2025): every step is then N times
# too large, and nothing fails. `fsdp_train` first sends a one-number reduce-scatter (ones from
# every rank: the mean is 1, the sum N) and, where the backend sums, divides each rank's loss by N
# itself. `backend_averages` says which case your PyTorch is:

# %% tags=["nbval-ignore-output"]
sharded = run_ranks(fsdp_train, 2, runs[0])
fsdp_gap = max((result["parameters"] - one[0]).abs().max() for result in sharded)
print("largest difference from one process:", fsdp_gap)
print("parameter numbers held per rank:", [result["local_elements"] for result in sharded],
      "of", sharded[0]["total_elements"])
print("this PyTorch's gloo averages:", sharded[0]["backend_averages"])

# %%
expect(fsdp_gap < 1e-6, "fully sharded on two ranks, the gathered weights equal the one-process ones after every "
       "step, to 1e-6", fsdp_gap)
expect(sum(result["local_elements"] for result in sharded) == sharded[0]["total_elements"]
       and max(result["local_elements"] for result in sharded) < 0.6 * sharded[0]["total_elements"],
       "each rank holds its own part of the parameters, about half")

# %% [markdown]
# ## Gradient accumulation: a large batch on one process
#
# The same identity gives a large batch without a second process: compute the gradients of k
# micro-batches one after the other, each loss divided by k, and let `backward` add them up in
# `.grad` (it adds; it does not replace). One optimizer step afterwards takes the step of the
# batch k times larger. `accumulate_gradients` does it; two steps with batches of 8 built from
# four micro-batches of 2, against whole batches of 8:

# %% tags=["nbval-ignore-output"]
def train_accumulating(k, steps=2):
    """SGD steps on batches of 8 made of ``k`` micro-batches: the parameters after each ``(steps, P)``."""
    inputs, targets = repeat_dataset(runs[0]).tensors
    model = build_model(runs[0])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    history = []
    for step in range(steps):
        x, y = inputs[8 * step:8 * step + 8], targets[8 * step:8 * step + 8]  # (8, L) each; 16 streams: 2 batches
        optimizer.zero_grad(set_to_none=True)
        accumulate_gradients(model, completion_loss, zip(x.chunk(k), y.chunk(k)))
        optimizer.step()
        history.append(flat_parameters(model))
    return torch.stack(history)


accumulation_gap = (train_accumulating(4) - train_accumulating(1)).abs().max()
print("largest difference, 4 micro-batches of 2 against batches of 8:", accumulation_gap)

# %%
expect(accumulation_gap < 1e-6, "four micro-batches of 2 take the steps of whole batches of 8, to 1e-6",
       accumulation_gap)

# %% [markdown]
# ## Mixed precision: bfloat16 autocast on the CPU
#
# Every number so far was a 32-bit float. Sixteen bits halve the bytes of every activation kept in
# 16 bits, and of every gradient an all-reduce sends where the gradients are kept in 16 bits too; on hardware
# with 16-bit matrix units the matrix products also run faster. Micikevicius et al., "Mixed
# Precision Training" (2018), keep a float32 copy of the weights and compute in 16 bits.
# `torch.autocast("cpu", dtype=torch.bfloat16)` does this without touching the model. Inside its
# `with` block it keeps two lists of operations. Those it lowers, the matrix products (`linear`,
# `matmul`, `bmm`...), run on bfloat16 copies of their inputs; those it raises, on the CPU the losses
# (`cross_entropy`, `nll_loss`...) and a few others, run on float32 copies. Every other operation
# follows its inputs: a softmax or an activation after a matrix product computes in bfloat16, the
# same one on a float32 tensor in float32, and a sum of bfloat16 and float32 is float32. The
# parameters, their gradients and the optimizer stay float32. One operation of each kind:

# %%
rules = autocast_rules()
for name, dtype in rules.items():
    print(f"{name:<22} {dtype}")
expect(rules["linear"] == torch.bfloat16 and rules["cross_entropy"] == torch.float32
       and rules["cross_entropy outside"] == torch.bfloat16,
       "autocast lowers a linear layer to bfloat16 and raises cross_entropy to float32, which outside it "
       "follows its bfloat16 input")
expect(rules["softmax of bfloat16"] == torch.bfloat16 and rules["softmax of float32"] == torch.float32
       and rules["bfloat16 + float32"] == torch.float32,
       "softmax, on neither list, follows its input; bfloat16 + float32 is float32")

# %% [markdown]
# One forward and backward pass of this chapter's model under autocast, the dtype each layer hands
# on:

# %% tags=["nbval-ignore-output"]
dtypes = autocast_dtypes()
for name, dtype in dtypes["modules"].items():
    print(f"{name:<36} {dtype}")
print(f"logits {dtypes['logits']}, loss {dtypes['loss']}, parameters {dtypes['parameters']}, "
      f"gradients {dtypes['gradients']}")

# %%
linears = [dtype for name, dtype in dtypes["modules"].items() if name.startswith(("layers.0.self_attn_heads.linear",
                                                                                  "layers.0.ffn.0", "layers.0.ffn.3", "head"))]
expect(len(linears) == 7 and set(linears) == {torch.bfloat16}, "the seven linear layers compute in bfloat16")
expect(all(dtypes["modules"][name] == torch.float32 for name in ("embed", "layers.0.sublayers.0.norm", "norm")),
       "the embedding (token ids in, on neither list) and the layer norms (on neither list, the float32 residual "
       "stream in) stay float32")
expect(dtypes["logits"] == torch.bfloat16 and dtypes["loss"] == torch.float32,
       "the logits are bfloat16 and the loss float32: cross_entropy is on the list autocast raises")
expect(dtypes["parameters"] == dtypes["gradients"] == {torch.float32}, "the parameters and their gradients are float32")

# %% [markdown]
# The residual stream stays float32 because a sum of a bfloat16 branch and a float32 stream is
# float32. Inside a branch, every operation from its first matrix product to the residual sum (the
# attention scores and their softmax, the activation, the dropout) computes in bfloat16.
#
# The course's trainer does the same for any model: `StepByStep(model, loss_fn, optimizer,
# precision="bf16-mixed")` runs each forward pass and loss under this autocast (Lightning's
# `Trainer(precision="bf16-mixed")` names it the same way). What does the rounding do to training?
# The same model, seed, weights and batches, trained by `StepByStep` once in float32 and once with
# `precision="bf16-mixed"`: Adam (learning rate 0.01), 300 steps on batches of 32 streams
# of 4 random tokens followed by the same 4 again, three seeds. The first 3 of the 7 predicted
# tokens are random, so on fresh streams no model can do better than 3/7 ln 8 ≈ 0.89 (the dashed
# line), reached once it copies the rest; on the 256 streams it keeps revisiting, a model can dip a
# little below by remembering some of them. A model that copies nothing stays near ln 8 ≈ 2.08.

# %% tags=["nbval-ignore-output"]
study = precision_study(seeds=(0, 1, 2))  # (seeds, steps) per precision
start_gap = (study["bfloat16"][:, :20] - study["float32"][:, :20]).abs().amax(1)  # (seeds,)
final = {name: study[name][:, -20:].mean(1) for name in ("float32", "bfloat16")}  # mean of the last 20 steps
drop = {name: [int((curve < 1.2).nonzero()[0]) for curve in study[name]] for name in final}  # first step below 1.2
print("largest gap over the first 20 steps, per seed:", start_gap)
print("largest gap at any step, per seed:", (study["bfloat16"] - study["float32"]).abs().amax(1))
for name in final:
    print(f"{name:>8}: final loss per seed {final[name]}, median {final[name].median():.3f}; "
          f"first step below 1.2: {drop[name]}")
seed_loss_curves({name: [SimpleNamespace(steps=range(PRECISION_RUN.steps), val_losses=curve) for curve in study[name]]
                  for name in ("float32", "bfloat16")}, reference=study["floor"], reference_label="3/7 ln 8",
                 ylabel="training loss", last=20, label_at="left", reference_on_finals=True);

# %%
expect(bool((start_gap < 0.01).all()), "over the first 20 steps, bfloat16's loss stays within 0.01 of float32's on "
       "every seed", start_gap.max())
expect_close(final["bfloat16"].median(), final["float32"].median(), "the median final loss (last 20 steps) is "
             "float32's to 0.05", atol=0.05)
expect(all(final[name].median() < study["floor"] + 0.05 for name in final),
       "both medians end below 3/7 ln 8 + 0.05: both learned to copy", {name: final[name].median() for name in final})

# %% [markdown]
# In between, the curves part: the rounding moves the step at which the model starts to copy (the
# printed first steps below 1.2), and at one step the two losses can be tenths apart. What the
# checks bound is the start and the end: the same first steps, and the same final loss to 0.05 in
# the median of three seeds (the right panel shows each seed's), on a model this small. Kalamkar et
# al., "A Study of BFLOAT16 for Deep Learning Training" (2019), report the same for large models:
# bfloat16 reached float32's results in the same number of iterations without changing the
# hyperparameters.
#
# Why no loss scaling? float16, the other 16-bit format, spends 5 bits on the exponent and 10 on the
# mantissa; bfloat16 spends float32's 8 on the exponent and keeps 7 of its 23 mantissa bits. So
# bfloat16 covers float32's range with coarser steps, while float16 has finer steps in a far narrower
# range: a gradient of 1e-8 is zero in float16. Training in float16 therefore multiplies the loss by
# a large scale before the backward pass, so that the gradients stay in range, and divides them back
# before the step (`torch.amp.GradScaler`); bfloat16 does not need it.

# %%
for name, fmt in float_formats().items():
    print(f"{name:>8}: {fmt['exponent_bits']} exponent bits, {fmt['mantissa_bits']:>2} mantissa bits, largest "
          f"{fmt['max']:.3g}, smallest normal {fmt['smallest_normal']:.3g}, smallest {fmt['smallest']:.3g}, "
          f"step at 1: {fmt['eps']:.3g}")
gradient = torch.tensor(1e-8)
print("a gradient of 1e-8 in float16:", gradient.half().item(), "| in bfloat16:", f"{gradient.bfloat16().item():.3g}")

# %% [markdown]
# ## What it sends: the ring all-reduce
#
# How does an all-reduce move the data? In a **ring** (Patarasuk and Yuan 2009), each of N workers
# sends only to the next. The gradient is cut into N chunks. In N - 1 **reduce-scatter** steps,
# every worker passes one chunk on and adds the one it receives, so that each worker ends with one
# chunk summed over all; in N - 1 **all-gather** steps the summed chunks go round. Every step,
# every worker sends one chunk of 1/N of the gradient, so each sends
#
# $$2\,\frac{N-1}{N} \times \text{the gradient's bytes}$$
#
# per step: exactly once the gradient for two workers, and towards twice it as N grows, never more.
# `ring_all_reduce` runs the
# ring on numbers; three workers hold the chunks [1, 2, 3], [10, 20, 30] and [100, 200, 300]:

# %%
chunks = [[1, 2, 3], [10, 20, 30], [100, 200, 300]]  # worker w's chunk c
result, transfers = ring_all_reduce(chunks)
for step, moves in enumerate(transfers):
    print(f"step {step + 1} ({moves[0][3]}):", ", ".join(f"{s}→{r} chunk {c}" for s, r, c, _ in moves))
print("every worker ends with", result[0], result[1], result[2])
expect(all(row == [111, 222, 333] for row in result), "every worker ends with every chunk summed over the three")

# %% [markdown]
# **Try it.** Below, a row per worker and a column per chunk; each cell lists the workers whose parts
# that worker's copy of the chunk sums, green once it sums them all. Move the step: the chunks
# received in that step are outlined (orange where the receiver adds, blue where it copies). After
# N - 1 steps every worker owns one whole chunk; after 2 (N - 1) every worker holds them all. The
# line above the table counts the bytes each worker has sent so far, for GPT-2 small's gradient of
# 124 million 4-byte numbers: one chunk per step. Change the number of workers: the whole
# all-reduce's bytes creep towards twice the gradient, never past.

# %% tags=["nbval-ignore-output"]
ring_explorer()

# %% [markdown]
# For a model of 124 million parameters, GPT-2 small's size, with 4-byte gradients, each process
# sends per step:

# %%
for n in (1, 2, 4, 8, 64):
    print(f"{n:>3} processes: {ring_all_reduce_bytes(124_000_000, n) / 1e6:7.0f} MB per process per step")

# %% [markdown]
# ## What it costs in time, here
#
# Does data parallelism make a step faster on this machine's two cores? The course's benchmark
# (`benchmarks/data_parallel.py`, run by `make bench`, stored in `benchmarks/RESULTS.md`) times one
# step of a decoder-only model of 2 layers and width 128 on a batch of 32 streams: two processes
# of one thread each, half the batch each, against one process of one thread on the whole batch.
# The stored run was taken while other work loaded both cores heavily: two processes took 270 ms a
# step, one process 238 ms. A scaling efficiency (one process's time over twice two processes'
# time) of 0.44: no speed-up at all. One run on a loaded machine is no measure of an idle one,
# and we have none; what holds anywhere are the reasons it stays below 1 here. Two processes on two
# cores of one CPU split the arithmetic, but each also waits for the all-reduce at every step, for
# the slower of the two, and for a core the rest of the machine wants. Run `make bench` on your
# machine for its own numbers.
#
# On GPUs the balance differs. Each rank has a device of its own, so the arithmetic really is
# split N ways; NCCL moves the gradients between GPUs over links far faster than `gloo`'s
# sockets; and DDP's buckets let the all-reduce of the last layers' gradients run while the
# backward pass still computes the first layers', hiding much of the communication (Li et al.
# 2020 describe this overlap and measure its gain). What remains is the ring's 2 (N - 1) / N of
# the gradient per step, which is why it is counted above.

# %% [markdown]
# ## Where data parallelism stops, and what ZeRO changes
#
# Every process of a data-parallel run holds the whole model state. With Adam in mixed precision,
# ZeRO counts 16 bytes per parameter: 2 for the 16-bit weights, 2 for their gradients and 12 for
# the optimizer (a 32-bit copy of the weights, the momentum and the variance). ZeRO's stages shard
# one more part over the N processes each: stage 1 the optimizer state, stage 2 the gradients too,
# stage 3 (FSDP) the parameters too. The paper's own example is a model of 7.5 billion parameters
# on 64 GPUs (activations not counted):

# %%
for stage in STAGES:
    memory = training_memory(7_500_000_000, 64, stage)
    print(f"{stage:>5}: {memory['total'] / 1e9:6.1f} GB per GPU")
expect(round(training_memory(7_500_000_000, 64, "ddp")["total"] / 1e9, 1) == 120.0
       and round(training_memory(7_500_000_000, 64, "zero3")["total"] / 1e9, 1) == 1.9,
       "the arithmetic gives the ZeRO paper's 120 GB per GPU without sharding and 1.9 GB with all three stages")

# %% [markdown]
# Sharding is not free: stage 3 gathers every layer's weights before using them, in the forward
# and again in the backward pass, so it sends about 1.5 times the bytes of data parallelism's
# all-reduce (the ZeRO paper's count). That is the trade: memory for communication.
#
# ## Summary
#
# - Processes share nothing but what collectives send; an all-reduce leaves every rank the sum.
# - N ranks, each on 1/N of every batch, averaging their gradients, take the steps one process takes
#   on the whole batch, as long as every shard's loss averages the same number of terms: to 1e-6
#   here: by hand on each of three seeds, and on one seed each with DDP, under Lightning and fully
#   sharded; without the all-reduce they drift apart from the first step.
# - Gradient accumulation gives one process the step of a batch k times larger.
# - bfloat16 autocast lowers the matrix products to bfloat16 (and what follows them in a branch),
#   raises the loss to float32, and keeps the weights, gradients and residual stream in float32; here
#   it started and ended where float32 did, in the median of three seeds, and it needs no loss
#   scaling, having float32's range.
# - A ring all-reduce sends 2 (N - 1) / N of the gradient per process per step; data parallelism
#   keeps the whole model state on every process, and ZeRO's stages shard it.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: `.check(answer)` says whether your answer is right and, if not,
# what is wrong with it; `.hint()` gives a nudge and `.solution()` a worked answer. The cells
# below run the checkers on placeholders, so they fail until you fill them in.
#
# **1. Predict the traffic.** Eight processes train a model of 100 million parameters with 4-byte
# gradients and a ring all-reduce. How many bytes does **one** process send per step? Work it out
# before you call `ring_all_reduce_bytes`.

# %%
my_bytes = 0  # replace with your count

ch16.ring_bytes.check(my_bytes)

# %% [markdown]
# **2. ZeRO stage 2.** A model of 1.5 billion parameters trains with mixed-precision Adam (16 bytes
# per parameter, as above) on 16 GPUs, with ZeRO stage 2. How many bytes of model state does each
# GPU hold?

# %%
my_memory = 0  # replace with your count

ch16.zero_memory.check(my_memory)

# %% [markdown]
# **3. Accumulate by hand.** Write `accumulate(model, loss_fn, micro_batches)`, without
# `accumulate_gradients`: after it, `.grad` must hold the gradient of the mean loss over all the
# micro-batches (equally large), as if they were one batch. The gradients are zero before it is
# called; the optimizer steps after.

# %%
def accumulate(model, loss_fn, micro_batches):
    for x, y in micro_batches:
        loss_fn(model(x), y).backward()  # replace: is this the large batch's gradient?


ch16.accumulate.check(accumulate)


# %% [markdown]
# **4. Shards of unequal size.** The central claim needs every shard's loss to average the same
# number of terms. Streams of different lengths break that: if the loss skips the padding, rank r's
# mean loss averages n_r of the batch's B tokens, and n_r differs from rank to rank, while DDP still
# averages the N gradients as if they weighed the same. Predict first: two ranks hold 3 and 5 of 8
# terms; in the averaged gradient, does a term of the smaller shard weigh more or less than 1/8?
# Then write `shard_scale(n, B, N)`: the number a rank holding n of the B terms multiplies its mean
# loss by before `backward`, so that DDP's average is the gradient of the whole batch's mean loss
# again. (What must it give when every shard holds B/N terms?) Each rank counts its own n, but B
# is the sum of every rank's count: in a real run it takes one all-reduce of the counts, before the
# backward pass, for every rank to know it. Once your scale is right, the checker runs it: two gloo
# ranks holding 3 and 5 of every 8 streams (every stream has as many tokens, so a stream is a
# term), once with your scales and once with a scale of 1, each against one process on the whole
# batch.

# %%
def shard_scale(n, B, N):
    return 1.0  # replace: right only when every shard holds B / N terms


ch16.shard_scale.check(shard_scale)


# %% [markdown]
# **5. Forget `set_epoch`: predict, then run.** Two broken versions of the DDP section's run: in
# one, no rank calls `sampler.set_epoch`; in the other, only rank 0 does (say, inside an
# `if rank == 0:` meant for logging). Each trains 8 steps, four epochs of two batches, on two
# ranks. For each, predict which one-process run its weights still equal: the one that reshuffles
# every epoch (**reshuffling**, the section's reference), one that never reshuffles (**no
# reshuffling**), or **neither**. Check your predictions, then run the cell after them: it trains
# both on the three seeds in one start of two ranks, and prints how far each gets from each
# reference, and from the other rank.

# %%
my_predictions = {"no rank calls set_epoch": "", "only rank 0 calls set_epoch": ""}  # replace each "" with
# "reshuffling", "no reshuffling" or "neither"

ch16.set_epoch_runs.check(my_predictions)

# %% tags=["nbval-ignore-output"]
names = list(ch16.BROKEN_RUNS)
broken = [seed_run.replace(steps=8, set_epoch=ch16.BROKEN_RUNS[name]) for name in names for seed_run in runs]
ranks = run_ranks(ddp_train_runs, 2, broken)  # one start: the six runs in turn, on each rank
weights = torch.stack([torch.stack([result["parameters"] for result in rank]) for rank in ranks])  # (2, 6, steps, P)
weights = weights.unflatten(1, (len(names), len(runs)))  # (ranks, broken runs, seeds, steps, P)
references = {set_epoch: torch.stack([ddp_train(0, 1, seed_run.replace(steps=8, set_epoch=set_epoch))["parameters"]
                                      for seed_run in runs]) for set_epoch in (True, False)}  # (seeds, steps, P)
# (broken runs, seeds) each: the farther rank's largest difference at any step
from_reshuffling = (weights - references[True]).abs().amax((0, 3, 4))
from_no_reshuffling = (weights - references[False]).abs().amax((0, 3, 4))
between_ranks = (weights[0] - weights[1]).abs().amax((2, 3))  # (broken runs, seeds)
for k, name in enumerate(names):
    print(f"{name}, seeds 0, 1, 2: largest difference at any step")
    print(f"  from reshuffling:    {from_reshuffling[k]}\n  from no reshuffling: {from_no_reshuffling[k]}\n"
          f"  rank 0 from rank 1:  {between_ranks[k]}")

# %%
expect(bool((from_no_reshuffling[0] < 1e-6).all() and (from_reshuffling[0] > 1e-3).all()),
       "when no rank calls set_epoch, both ranks hold the weights of one process that never reshuffles, to 1e-6, "
       "and move more than 1e-3 away from the one that reshuffles, on every seed", (from_no_reshuffling[0], from_reshuffling[0]))
expect(bool((torch.minimum(from_reshuffling[1], from_no_reshuffling[1]) > 1e-3).all()),
       "when only rank 0 calls it, both ranks leave both one-process runs by more than 1e-3, on every seed",
       (from_reshuffling[1], from_no_reshuffling[1]))
expect(bool((between_ranks < 1e-6).all()), "in both broken runs the two ranks still hold one model, to 1e-6: DDP's "
       "all-reduce keeps them together, whatever data each saw", between_ranks.max())
