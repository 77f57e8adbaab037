# %% [markdown]
# # Chapter 14: attention without the L×L matrix: the online softmax and tiles
#
# The attention we built by hand writes out the whole matrix of weights: one row per query,
# one column per key, $L_q \times L_k$ numbers. The teaching path keeps it in `alphas`; it is
# what chapter 02 drew. The fused path calls `F.scaled_dot_product_attention` instead, and
# chapter 06 saw that it runs no separate softmax of its own. How can it do without the
# matrix? This chapter shows how attention can be computed **exactly** without ever holding
# it, builds it by hand, and measures what it saves.
#
# Three papers carry the idea:
#
# - Milakov and Gimelshein, "Online normalizer calculation for softmax" (2018): a softmax
#   over a stream, in one pass, with a running maximum and a running sum;
# - Rabe and Staats, "Self-attention Does Not Need O(n²) Memory" (2021): attention computed
#   over chunks of keys with that running sum, in memory that does not grow with the square of
#   the length;
# - Dao, Fu, Ermon, Rudra and Ré, "FlashAttention: Fast and Memory-Efficient Exact Attention
#   with IO-Awareness" (2022): the same tiles, written as one GPU kernel that keeps each tile in
#   the chip's fast memory.
#
# By the end of this chapter you will be able to:
#
# - compute a softmax **safely** (the maximum subtracted) and **in blocks**, with a running
#   maximum and sum, and **merge** two partial results exactly;
# - compute attention in **tiles** of queries and keys, equal to `F.scaled_dot_product_attention`
#   to $10^{-5}$, with padding and causal masks, and **skip** the tiles a causal mask hides;
# - say where a causal mask's diagonal lies when the queries are fewer than the keys
#   (**top-left** or **bottom-right**), and which one a decode step with a cache needs;
# - split one query's keys into chunks and merge their partial results, as **Flash-Decoding**
#   does;
# - **measure** the memory an attention call allocates, and show it grow with $L^2$ for the
#   written-out matrix and with $L$ for the tiles and the fused kernel;
# - say why the Python tiles are **slower** than the fused kernel at their default block size,
#   and why a real kernel is faster on a GPU: fewer reads and writes of slow memory, not fewer
#   operations; say what FlashAttention-2 and -3 changed, and read measurements made on a GPU;
# - explain why the **backward pass** recomputes the tiles instead of storing the weights.

# %%
import inspect
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

from stepbystep import plots
from stepbystep.exercises import ch14
from stepbystep.expect import expect, expect_all, expect_close
from stepbystep.devices import torch_threads
from stepbystep.experiments.attention_kernels import attention_ops, op_count
from stepbystep.experiments.gpu_attention import gpu_claims, gpu_memory, gpu_times
from stepbystep.experiments.memory import MemoryReport, attention_memory, measure_memory, memory_claims
from stepbystep.models import (
    attend,
    merge_partials,
    online_softmax_steps,
    subsequent_mask,
    tile_plan,
    tiled_attention,
)
from stepbystep.models.attention import tiled
from stepbystep.widgets import tiles_explorer

# %% [markdown]
# ## The softmax, safely
#
# The softmax of a row of scores $x_1, \dots, x_L$ is $e^{x_i} / \sum_j e^{x_j}$. Written just
# like that, it fails as soon as one score is large: in float32, $e^{x}$ overflows to infinity
# for $x$ above about 88.7, and infinity over infinity is not a number.

# %%
x = torch.tensor([1000.0, 1001.0, 1002.0])
print("exp(x):            ", torch.exp(x))
print("exp(x) / sum:      ", torch.exp(x) / torch.exp(x).sum())

# %% [markdown]
# Any constant $c$ can be subtracted from every score without changing the result, since
# $e^{x_i - c} / \sum_j e^{x_j - c} = e^{-c} e^{x_i} / (e^{-c} \sum_j e^{x_j})$. The **safe
# softmax** takes $c = \max_j x_j$: every exponent is then at most 0, every term at most 1,
# and the largest term exactly 1, so the sum is at least 1 and nothing overflows.

# %%
m = x.max()  # the row's maximum
l = torch.exp(x - m).sum()  # the sum, relative to the maximum: at least 1
print("exp(x - m) / l:    ", torch.exp(x - m) / l)
expect_close(torch.exp(x - m) / l, torch.softmax(x, dim=0), "the safe softmax is torch.softmax (± 1e-6)", atol=1e-6)

# %% [markdown]
# The safe softmax reads the row **three times**: once for the maximum, once for the sum, and
# once more to divide. For attention that means the whole row of scores must be at hand (or be
# computed three times) before the first weight is known, and for all queries at once that is
# the $L_q \times L_k$ matrix.
#
# ## The softmax in one pass
#
# Milakov and Gimelshein noticed that the maximum and the sum can be computed **together, in
# one pass**, reading the scores a block at a time. Keep two numbers: the running maximum $m$
# of the scores read so far, and the running sum $l = \sum e^{x_j - m}$ of the same scores,
# relative to that maximum. When a new block arrives with a larger maximum $m'$, every old
# term $e^{x_j - m}$ must become $e^{x_j - m'}$: multiply the old sum by $e^{m - m'}$, then add
# the new block's terms:
#
# $$m' = \max(m, \max_{j \in \text{block}} x_j), \qquad l' = l \, e^{m - m'} + \sum_{j \in \text{block}} e^{x_j - m'}.$$
#
# Their paper states the gain as fewer memory accesses (the maximum and the normaliser in one
# pass over the input instead of two), and measured the softmax up to 1.3 times faster on a
# GPU, and a softmax followed by a top-k, fused into one kernel, up to 5 times faster.
#
# Here is a vector of 12 scores read in blocks of 4 (`online_softmax_steps` runs the update
# above and returns $m$ and $l$ after each block):

# %%
scores = torch.tensor([1.0, 0.5, 2.0, 1.2, 3.5, 0.3, 1.0, 4.2, 2.2, 0.1, 0.7, 1.5])
block_m, block_l, probs = online_softmax_steps(scores, 4)
print("running max after each block:", [round(value, 2) for value in block_m.tolist()])

# %% tags=["nbval-ignore-output"]
print("running sum after each block:", [round(value, 4) for value in block_l.tolist()])

# %%
fig = plots.online_softmax_blocks(scores, 4, block_m, block_l)

# %%
expect_close(probs, torch.softmax(scores, dim=0), "the softmax from the last running max and sum is exact (± 1e-6)",
             atol=1e-6)
expect(bool(block_l[1] < block_l[0]), "the running sum fell after block 2: its larger max shrank the old terms",
       got=block_l.tolist())

# %% [markdown]
# The second block brings a larger maximum (4.2 against 2.0), so the old sum is multiplied by
# $e^{2.0 - 4.2} \approx 0.11$ before the block's own terms are added: the running sum goes
# *down* although four terms were added. The third block's maximum (2.2) is smaller than 4.2:
# $m$ stays, the old sum stays, and the block's terms, all below 1, are added. After the last
# block, $m$ and $l$ are the maximum and the sum a full pass would give.
#
# ## Merging two partial results
#
# Attention needs more than the softmax: the weighted sum of the values. Take any part of the
# keys, a block, and compute its own **partial result**: its maximum $m_1$, its sum $l_1$, and
# its output $o_1 = \sum_j e^{x_j - m_1} v_j / l_1$, the block's values averaged with the
# block's own softmax. A second part gives $(m_2, l_2, o_2)$. The two merge exactly:
#
# $$m = \max(m_1, m_2), \qquad l = l_1 e^{m_1 - m} + l_2 e^{m_2 - m}, \qquad
# o = \frac{o_1 \, l_1 e^{m_1 - m} + o_2 \, l_2 e^{m_2 - m}}{l}.$$
#
# The first two are the running update. The third says: over both parts, part 1 carries the
# share $l_1 e^{m_1 - m} / l$ of the total weight, so its average counts that much. The merge
# is exact, not an approximation: in exact arithmetic it gives the softmax over both parts. In
# floating point it is exact up to rounding, like any sum computed in another order. It can be
# applied in any order: key block by key block, as below, or in a tree.

# %%
generator = torch.Generator().manual_seed(0)
values = torch.randn(12, 3, generator=generator)  # (12, 3): one value vector per score


def partial(x, v):
    """The partial result (m, l, o) of scores x (b,) and values v (b, 3)."""
    m = x.max()
    weights = torch.exp(x - m)  # (b,)
    return m, weights.sum(), weights @ v / weights.sum()


merged_m, merged_l, merged_o = merge_partials(*partial(scores[:5], values[:5]), *partial(scores[5:], values[5:]))
expect_close(merged_o, torch.softmax(scores, dim=0) @ values,
             "merging the partial results of keys 0-4 and 5-11 gives the softmax-weighted values (± 1e-6)", atol=1e-6)
expect(float(merged_m) == float(scores.max()), "the merged max is the max of all 12 scores", got=float(merged_m))

# %% [markdown]
# ## Tiled attention
#
# For attention with many queries the same holds row by row. Rabe and Staats give an
# algorithm for one query whose memory does not grow with the sequence length ($O(1)$), an
# extension to self-attention in $O(\log n)$ memory, and a practical version for accelerators,
# in chunks of queries and keys, that needs $O(\sqrt{n})$. FlashAttention cuts
# the computation into **tiles**: a block of `block_q` queries against a block of `block_k`
# keys. We loop in the order FlashAttention-2 uses (below): for each block of queries, the key
# blocks stream past; each tile computes its scores $(N, H, b_q, b_k)$, updates the running
# maximum and sum of each of its $b_q$ rows, and rescales the partial output. No array of
# scores larger than one tile ever exists.
#
# `tiled_attention(q, k, v, mask=None, is_causal=False, block_q=64, block_k=64)` does this.
# Its loop keeps, per query row, $m$, $l$ and the **unnormalised** output
# $\text{acc} = \sum_j e^{x_j - m} v_j$, and divides by $l$ once at the end. Keeping $o \cdot l$
# rather than $o$ saves a division on every tile; FlashAttention-2 (Dao 2023, "FlashAttention-2:
# Faster Attention with Better Parallelism and Work Partitioning") makes the same change. Here
# is the whole forward pass, with the shape of every tensor: first `online_update`, the running
# update for one block of scores, then the loop that calls it once per tile:

# %%
print(inspect.getsource(tiled.online_update))
print(inspect.getsource(tiled._forward))

# %% [markdown]
# Two details make it exact for every input. A masked key gets the score $-\infty$, so
# $e^{-\infty - m} = 0$. And a row whose keys are all masked so far has $m = -\infty$; the
# loop subtracts 0 instead (`m_safe`), so that $-\infty - (-\infty)$, which is not a number,
# never happens. A row with no key at all ends with $l = 0$ and gets zeros, as the course's
# `masked_softmax` gives it (chapter 02).
#
# Does it give the fused kernel's numbers? Two sequences, 4 heads, 100 queries against 150
# keys, blocks of 32 queries and 48 keys (neither divides its length), with a padding mask
# that hides the last 60 keys of the second sequence, then a causal mask:

# %%
generator = torch.Generator().manual_seed(1)
q = torch.randn(2, 4, 100, 16, generator=generator)  # (N, H, L_q, d)
k = torch.randn(2, 4, 150, 16, generator=generator)  # (N, H, L_k, d)
v = torch.randn(2, 4, 150, 16, generator=generator)  # (N, H, L_k, d)
padding = torch.ones(2, 1, 150, dtype=torch.bool)  # (N, 1, L_k): the course's padding keep-mask
padding[1, :, 90:] = False

for name, mask in (("no mask", None), ("padding", padding)):
    ours = tiled_attention(q, k, v, mask=mask, block_q=32, block_k=48)  # (2, 4, 100, 16)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else mask.unsqueeze(1))
    expect_close(ours, fused, f"{name}: tiled_attention gives F.scaled_dot_product_attention's output (± 1e-5)",
                 atol=1e-5)
    expect_close(ours, attend(q, k, v, mask)[0], f"{name}: and the course's attend (± 1e-5)", atol=1e-5)

# %% [markdown]
# "Equal" here means equal up to rounding. Two tilings add the same terms in another order, and
# floating-point addition rounds each step, so their outputs may differ in the last bits: the
# same attention in blocks of 32 × 48 and in blocks of 64 × 64:

# %% tags=["nbval-ignore-output"]
by_32_48 = tiled_attention(q, k, v, block_q=32, block_k=48)  # (2, 4, 100, 16)
by_64_64 = tiled_attention(q, k, v, block_q=64, block_k=64)  # (2, 4, 100, 16)
print(f"bit for bit equal: {torch.equal(by_32_48, by_64_64)}; "
      f"largest difference: {(by_32_48 - by_64_64).abs().max():.1e}")

# %%
expect_close(by_32_48, by_64_64, "the two tilings agree up to rounding (± 1e-6)", atol=1e-6)

# %% [markdown]
# So compare tiled results with a tolerance (`torch.allclose`, `expect_close`), never with
# `torch.equal`. The causal mask, two ways:

# %%
causal = tiled_attention(q, k[:, :, :100], v[:, :, :100], is_causal=True, block_q=32, block_k=48)
expect_close(causal, F.scaled_dot_product_attention(q, k[:, :, :100], v[:, :, :100], is_causal=True),
             "is_causal: the same as the fused kernel's is_causal (± 1e-5)", atol=1e-5)
expect_close(causal, tiled_attention(q, k[:, :, :100], v[:, :, :100], mask=subsequent_mask(100)),
             "and the same as passing the course's causal mask (± 1e-5)", atol=1e-5)

# %% [markdown]
# And a sequence that is all padding: the course's attention and `tiled_attention` both give
# it zeros rather than NaN.

# %%
all_padding = padding.clone()
all_padding[1] = False  # sequence 1 has no key to read
ours = tiled_attention(q, k, v, mask=all_padding, block_q=32, block_k=48)
expect(bool(ours[1].abs().max() == 0) and not ours.isnan().any(), "a sequence with every key masked gets zeros")
expect_close(ours, attend(q, k, v, all_padding)[0], "the course's attend gives the same (± 1e-5)", atol=1e-5)

# %% [markdown]
# ## Where the causal diagonal lies
#
# Under a causal mask, query $i$ reads keys $0$ to $i$. With as many queries as keys, that is
# the whole story. With fewer queries than keys it is a choice, and the two choices differ.
# `F.scaled_dot_product_attention(..., is_causal=True)` aligns the mask **top-left**: query $i$
# reads keys $0$ to $i$, whatever $L_k$. A decode step with a cache (chapter 09: one new query
# against every cached key), or a chunk of new queries after a cache, needs it aligned
# **bottom-right**: the last query is the newest token and reads every key, so query $i$ reads
# keys $0$ to $i + L_k - L_q$. FlashAttention aligns it bottom-right since its version 2.1, and
# PyTorch offers that alignment as a mask object, `torch.nn.attention.bias.causal_lower_right`.
# For 3 queries and 10 keys (1: may read):

# %%
for alignment in ("top_left", "bottom_right"):
    offset = 0 if alignment == "top_left" else 10 - 3  # query i reads keys 0 .. i + offset
    keep = torch.arange(10)[None, :] <= torch.arange(3)[:, None] + offset  # (3, 10)
    print(f"{alignment:>12}: " + "  ".join("".join(str(int(x)) for x in row) for row in keep))

# %% [markdown]
# Top-left, the first new query reads key 0 alone: a decode step aligned that way would
# ignore almost its whole cache, without any error. `tiled_attention` takes both
# (`causal_alignment`, top-left by default, as PyTorch's `is_causal`):

# %%
q3, k10, v10 = q[:, :, :3], k[:, :, :10], v[:, :, :10]  # (2, 4, 3, 16), (2, 4, 10, 16), (2, 4, 10, 16)
top_left = tiled_attention(q3, k10, v10, is_causal=True, block_q=2, block_k=4)  # (2, 4, 3, 16)
bottom_right = tiled_attention(q3, k10, v10, is_causal=True, causal_alignment="bottom_right",
                               block_q=2, block_k=4)  # (2, 4, 3, 16)
expect_close(top_left, F.scaled_dot_product_attention(q3, k10, v10, is_causal=True),
             "top-left: F.scaled_dot_product_attention's is_causal (± 1e-5)", atol=1e-5)
expect_close(bottom_right, F.scaled_dot_product_attention(q3, k10, v10, attn_mask=causal_lower_right(3, 10)),
             "bottom-right: PyTorch's causal_lower_right (± 1e-5)", atol=1e-5)
expect_close(top_left[:, :, 0], v10[:, :, 0], "top-left, the first query reads key 0 alone: its output is value 0",
             atol=1e-6)
expect_close(bottom_right[:, :, 2], F.scaled_dot_product_attention(q3[:, :, 2:], k10, v10)[:, :, 0],
             "bottom-right, the last query reads all 10 keys (± 1e-5)", atol=1e-5)

# %% [markdown]
# ## Causal tiles: skipped, not masked
#
# Back to as many queries as keys. A tile whose **first key comes after
# its last query** holds nothing but future keys: every one of its weights would be 0. The
# written-out attention computes those scores and masks them; the tiles can skip them
# altogether. `tile_plan` lists the tiles the loop runs, and `tiled_attention(...,
# return_counts=True)` reports how many it computed and skipped:

# %%
_, counts = tiled_attention(q, k[:, :, :100], v[:, :, :100], is_causal=True, block_q=32, block_k=48,
                            return_counts=True)
print(f"100 queries and keys in blocks of 32 x 48: {counts}, {counts.total} tiles in all")
_, counts = tile_plan(1024, 1024, 64, 64, is_causal=True)
print(f"1,024 in blocks of 64: {counts.computed} computed, {counts.skipped} skipped of {counts.total}")

# %% [markdown]
# With $n$ blocks on each side, the tiles above the diagonal are $n(n-1)/2$ of the $n^2$: for
# $n = 16$, 120 of 256. The diagonal tiles are computed with the causal mask applied inside
# them; the rest below the diagonal need no mask at all. The grids for 256 positions in blocks
# of 32:

# %%
grids = {}
for is_causal in (False, True):
    plan, counts = tile_plan(256, 256, 32, 32, is_causal)
    grids[f"is_causal={is_causal}: {counts.computed} computed, {counts.skipped} skipped"] = plots.plan_states(plan, 256, 32)
fig = plots.tile_grid(grids, 32, 32)

# %% [markdown]
# Are they really skipped, or computed and masked? A test the loop cannot pass by masking:
# make every key and value after the first block NaN. A masked tile still multiplies its zero
# weights by the values, and $0 \times \text{NaN}$ is NaN.

# %%
poisoned_k, poisoned_v = k[:, :, :100].clone(), v[:, :, :100].clone()
poisoned_k[:, :, 48:], poisoned_v[:, :, 48:] = float("nan"), float("nan")
ours = tiled_attention(q, poisoned_k, poisoned_v, is_causal=True, block_q=32, block_k=48)
masked_by_hand = attend(q, poisoned_k, poisoned_v, subsequent_mask(100))[0]
expect(not ours[:, :, :32].isnan().any(), "tiled: queries 0-31 never touch the keys from 48 on (no NaN)")
expect(bool(masked_by_hand[:, :, :32].isnan().all()), "written out and masked: the same queries get NaN everywhere")

# %% [markdown]
# Skipping saves work: with $n$ blocks on each side the tiles computed are $n(n+1)/2$ of
# $n^2$, a little over half. (It saves no memory: each tile is freed before the next one.)
#
# ## Measured: memory
#
# How much memory does one attention call allocate? Python's `tracemalloc` cannot tell:
# PyTorch allocates a tensor's numbers itself, outside Python's allocator. PyTorch's profiler
# can, when asked (`profile_memory=True`): its CPU allocator records every allocation and every
# free. `measure_memory(compute)` runs `compute()` under it and returns the **peak** number of
# bytes the call held at once (its output included), the largest single allocation, and how
# many allocations it made. It sees what a fused kernel allocates inside C++ too, which a
# Python-level hook would not (memory a library such as MKL allocates for itself is not
# counted). Here is a known pattern: 4,000 bytes, then 2,000 more, the first freed, then 3,000:

# %%
def known_pattern():
    first = torch.empty(1000)  # 4,000 bytes of float32
    second = torch.empty(500)  # 2,000 more: 6,000 held
    del first  # back to 2,000
    torch.empty(750)  # 3,000, freed at once: 5,000 at most
    return second


# %% tags=["nbval-ignore-output"]
known = measure_memory(known_pattern)[1]
print(known)

# %%
expect(known == MemoryReport(peak_bytes=6000, largest_bytes=4000, allocations=3),
       "the profiler sees the known pattern: 6,000 bytes at most, 4,000 the largest, 3 allocations", got=known)

# %% [markdown]
# Now attention, three ways, for one head of $d = 64$ and $L$ from 256 to 8,192 queries and
# keys (`attention_memory`): **naive** is the course's `attend`, which writes out the scores
# and the weights; **tiled** is `tiled_attention` in blocks of 128; **fused** is
# `F.scaled_dot_product_attention` as PyTorch runs it on this machine. Each runs on one
# thread, since the fused kernel allocates one working buffer per thread: `measure_memory`
# sets the thread count to one for the call, so the numbers do not depend on how many threads
# PyTorch uses on your machine. One float32 matrix of $8{,}192 \times 8{,}192$ takes 256 MiB.

# %% tags=["nbval-ignore-output"]
LENGTHS = [256, 512, 1024, 2048, 4096, 8192]
peaks = attention_memory(LENGTHS, n_heads=1, d=64, block=128)
print(f"{'L':>6}" + "".join(f"{name:>12}" for name in peaks) + "   (KiB)")
for i, length in enumerate(LENGTHS):
    print(f"{length:>6}" + "".join(f"{peaks[name][i] / 1024:>12,.0f}" for name in peaks))

# %%
fig = plots.memory_by_length(LENGTHS, {name: peaks[name] for name in ("naive", "tiled", "fused")}, peaks["output"])

# %%
expect_all(memory_claims(LENGTHS, peaks))
expect(all(attention_memory([512, 1024], seed=seed) == attention_memory([512, 1024], seed=0) for seed in (1, 2)),
       "the same bytes for seeds 0, 1 and 2: the memory depends on the shapes, not on the numbers drawn")

# %% [markdown]
# The naive peak grows fourfold each time $L$ doubles: it holds at least two $L \times L$
# matrices at once (the scores and the weights; at $L$ = 8,192 that is more than 512 MiB for
# one head of one sequence). The tiled and fused peaks grow like the output, twofold per
# doubling, plus a working memory that hardly depends on $L$: for the tiles, a few
# $128 \times 128$ blocks of scores (64 KiB each) and the per-row statistics; for the fused
# kernel, the buffer it allocates for its thread, sized by its own blocks (with more threads,
# one buffer each). At $L = 256$ the tiles
# save little: a tile of $128 \times 128$ is a quarter of the matrix, and the loop holds a few at once.
#
# Which kernel is "fused" here? `scaled_dot_product_attention` chooses among several
# **backends**, and `torch.nn.attention.sdpa_kernel` restricts the choice. On this machine
# (a CPU) the profiler shows which operation runs by default:

# %% tags=["nbval-ignore-output"]
q1, k1, v1 = (torch.randn(1, 1, 2048, 64, generator=generator) for _ in range(3))  # (1, 1, 2048, 64) each
SDPA_OPS = ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_scaled_dot_product_attention_math",
            "aten::bmm", "aten::_softmax")
default_ops = attention_ops(lambda: F.scaled_dot_product_attention(q1, k1, v1), SDPA_OPS)
with sdpa_kernel(SDPBackend.MATH):
    math_ops = attention_ops(lambda: F.scaled_dot_product_attention(q1, k1, v1), SDPA_OPS)
    math_report = measure_memory(lambda: F.scaled_dot_product_attention(q1, k1, v1), threads=1)[1]
default_report = measure_memory(lambda: F.scaled_dot_product_attention(q1, k1, v1), threads=1)[1]
print("default:         ", default_ops, f"peak {default_report.peak_bytes / 2**20:.1f} MiB")
print("SDPBackend.MATH: ", math_ops, f"peak {math_report.peak_bytes / 2**20:.1f} MiB")

# %%
expect(any("flash_attention" in op for op in default_ops) and "aten::_softmax" not in default_ops,
       "by default the CPU runs PyTorch's FlashAttention kernel for the CPU, with no softmax of its own",
       got=default_ops)
expect(math_report.peak_bytes > 2048 * 2048 * 4 > 10 * default_report.peak_bytes,
       "restricted to the MATH backend, the same call holds more than one L × L matrix; by default under a tenth of one",
       got=(math_report.peak_bytes, default_report.peak_bytes))

# %% [markdown]
# By default PyTorch runs `_scaled_dot_product_flash_attention_for_cpu`, FlashAttention's
# tiles written for the CPU. Restricted to the `MATH` backend, the same call writes the
# matrix out, like our naive attention: "fused" saves memory only when the kernel that runs is
# a tiled one. On a GPU the choice also depends on the dtype, the head size and the mask
# (chapter 10 met one case: a float mask rules out the GPU FlashAttention kernel; the
# memory-efficient backend runs instead, which takes a float mask and computes Rabe and
# Staats' chunked algorithm).
#
# ## Measured: time, honestly
#
# Saving memory is not the same as saving time. The same three ways at $L = 2{,}048$, 4
# heads, on one thread (`torch_threads(1)` sets it for the cell, whatever PyTorch's default
# on your machine), the tiles in four block sizes. Each runs 5 times, taking turns (so
# that a busy moment of the machine does not land on one of them only): the median, with the
# fastest and the slowest run in brackets. The claims below compare the fastest runs, which
# other programs on the machine can only slow down.

# %% tags=["nbval-ignore-output"]
q4, k4, v4 = (torch.randn(1, 4, 2048, 64, generator=generator) for _ in range(3))  # (1, 4, 2048, 64) each
BLOCKS = (32, 64, 128, 256)


contenders = {"naive": lambda: attend(q4, k4, v4), "fused": lambda: F.scaled_dot_product_attention(q4, k4, v4)}
for block in BLOCKS:
    contenders[f"tiled, blocks of {block}"] = lambda block=block: tiled_attention(q4, k4, v4, block_q=block, block_k=block)
runs = {name: [] for name in contenders}
with torch_threads(1), torch.no_grad():
    for compute in contenders.values():
        compute()  # one untimed warm-up run each
    for _ in range(5):
        for name, compute in contenders.items():  # taking turns
            start = time.perf_counter()
            compute()
            runs[name].append(time.perf_counter() - start)
seconds = {name: statistics.median(times) for name, times in runs.items()}
fastest = {name: min(times) for name, times in runs.items()}
for name, times in runs.items():
    print(f"{name:>20}: {seconds[name] * 1000:6.1f} ms ({min(times) * 1000:6.1f}-{max(times) * 1000:6.1f}), "
          f"{seconds[name] / seconds['fused']:4.1f} x the fused kernel")

# %%
tiled_fastest = [fastest[f"tiled, blocks of {block}"] for block in BLOCKS]
expect(min(tiled_fastest[:2]) > fastest["fused"],
       "the Python tiles in blocks of 32 and of 64 (the default) take longer than the fused kernel", got=fastest)
expect(tiled_fastest[0] > 1.5 * tiled_fastest[1], "blocks of 32 take over 1.5 times as long as blocks of 64",
       got=f"{tiled_fastest[0] / tiled_fastest[1]:.2f} times")
expect(tiled_fastest[0] > tiled_fastest[2], "blocks of 32 take longer than blocks of 128", got=tiled_fastest)

# %% [markdown]
# Blocks of 32 make 16 times as many tiles as blocks of 128, for the same multiplications in
# all. What grows with the tiles is the number of PyTorch operations launched: the profiler
# counts them, for $L = 512$ (the same 16-fold ratio of tiles, 256 against 16 per head, and
# quicker to profile):

# %% tags=["nbval-ignore-output"]
q512, k512, v512 = (x[:, :, :512] for x in (q4, k4, v4))  # (1, 4, 512, 64) each
with torch_threads(1):
    launched = {block: op_count(lambda block=block: tiled_attention(q512, k512, v512, block_q=block, block_k=block))
                for block in (32, 128)}
print(f"operations launched at L = 512: blocks of 32 {launched[32]:,}, blocks of 128 {launched[128]:,}")

# %%
expect(launched[32] > 10 * launched[128],
       "blocks of 32 launch more than 10 times as many operations as blocks of 128", got=launched)

# %% [markdown]
# The fused kernel beats the Python tiles at the default blocks of 64, and at 32 by more: the
# fastest of five runs in blocks of 32 takes over 1.5 times as long as in blocks of 64. Each
# tile costs a handful of separate PyTorch operations, each launched from Python and each
# writing a new tensor that the next one reads: a tile of scores is written by the matrix
# product, then read and written again by the subtraction, the exponential, the sum. On a
# CPU a tile this small stays in the processor's caches. With blocks of 32 there are 4,096
# tiles per head, 16 times as many as with blocks of 128, and the operations launched grow
# with them while the arithmetic stays the same: the count above (at $L = 512$, the same
# 16-fold ratio of tiles) shows about 14 times the operations for 16 times the tiles.
# With blocks of 128 or 256 there are few tiles, and on one thread the loop can come close to
# the fused kernel; how close changes from run to run with the machine's load, so we claim
# nothing about it. The naive attention,
# for its part, writes its $2{,}048 \times 2{,}048$ matrices (16 MiB each per head) to main
# memory and reads them back. The fused kernel runs the tiled algorithm in one compiled
# operation, without a Python step between the tiles. Whether it also beats the naive
# attention at this length depends on the processor and the run, so we claim nothing about
# it. These times depend on the processor and on its load.
#
# ## Why a real kernel wins on a GPU
#
# The FLOPs are not what changes: a tiled forward does the same multiplications as the
# written-out one (slightly more, for the rescaling), and the backward below does *more*,
# since it recomputes the scores. What changes is **memory traffic**. Dao et al. describe the
# A100 GPU as 40-80 GB of high-bandwidth memory (HBM) at 1.5-2.0 TB/s, and 192 KB of on-chip
# SRAM in each of its 108 streaming multiprocessors, at about 19 TB/s. Standard attention
# writes the $L \times L$ scores to HBM, reads them back for the softmax, writes the weights,
# reads them again for the product with the values. FlashAttention keeps each tile of scores
# in SRAM and never writes the $L \times L$ scores or weights to HBM. In the 2022 paper the key
# and value blocks form the outer loop, and each query block's partial output and statistics
# go back to HBM after every step; FlashAttention-2 swaps the two loops, as our
# `tiled_attention` does: a block of queries stays on the chip while the key and value blocks
# stream past, and only the output and one log-sum-exp per row are written. Since each query
# block's work is now one self-contained loop, FlashAttention-2 also gives each query block to
# its own group of the GPU's processors, besides the batch and the heads; it reports about 2
# times the speed of FlashAttention.
#
# FlashAttention-2 also changed the work inside one block of the GPU. There, several groups
# of 32 threads (warps) share a tile. In FlashAttention each warp took a slice of the keys and
# values ("split-K"): every warp then held a partial result for the same queries, and the
# warps had to write them to shared memory, wait for each other and add them up, the merge of
# this chapter done between warps. FlashAttention-2 gives each warp a slice of the queries
# instead, with the keys and values shared: each warp's rows are then complete on their own,
# and nothing is exchanged.
#
# The 2022 paper counts the HBM accesses: $\Theta(N^2 d^2 / M)$ for FlashAttention against
# $\Theta(N d + N^2)$ for standard attention, with $N$ the length, $d$ the head size and $M$
# the size of the SRAM. With $d = 64$, $d^2 = 4{,}096$, while 192 KB hold about 98,000
# half-precision numbers: the $N^2$ term shrinks about 24-fold, up to the constants that
# $\Theta$ hides (the tile must also hold blocks of $Q$, $K$, $V$ and the output; the paper's
# Figure 2 measures about 9-fold fewer HBM reads and writes). The paper shows that it needs fewer HBM accesses than standard
# attention, and is optimal for a range of SRAM sizes, and reports it faster although it
# computes more in the backward pass: a 3x training speed-up on GPT-2 at length 1K, and 15%
# end to end on BERT-large at length 512 against the MLPerf 1.1 training record. In its
# analysis the softmax, masking and dropout steps of attention are memory-bound (limited by
# reading and writing HBM, not by arithmetic), and that is what the tiles fix. The paper's own
# example (its Figure 2, forward and backward of one GPT-2 medium attention on an A100):
# standard attention 66.6 GFLOPs, 40.3 GB read and written in HBM, 41.7 ms; FlashAttention
# 75.2 GFLOPs, 4.4 GB, 7.3 ms. More arithmetic, a ninth of the traffic, under a fifth of the
# time.
#
# Rabe and Staats report their chunked implementation within a few percent of the run time of
# standard attention, and the memory overhead of self-attention at length 16,384
# reduced 59-fold for inference and 32-fold for differentiation.
#
# ## Measured on a GPU
#
# The argument above is about GPUs, and so far we measured a CPU. Here are measurements made
# once, on one NVIDIA H200 with PyTorch 2.11, in half precision (float16), 16 heads of 64: one
# run on one machine, so read the sizes of the gaps, not the last digit.
#
# | | peak extra memory, one sequence of 16,384 | forward, 4 sequences of 4,096 | forward and backward, the same |
# |---|---|---|---|
# | written out | 16,416 MiB | 5.6 ms | 12.3 ms |
# | `scaled_dot_product_attention`, its FlashAttention kernel | 32 MiB | 0.64 ms | 2.3 ms |
# | `scaled_dot_product_attention`, its MATH backend | | 16.9 ms | |
# | our Python tiles, blocks of 256 | | 95 ms | 192 ms |
# | our Python tiles, blocks of 64 | 35 MiB | 1,374 ms | |
#
# The memory is this chapter's story at a larger scale. Written out, one sequence of 16,384
# holds two $16 \times 16{,}384 \times 16{,}384$ half-precision matrices, the scores and the
# weights, 8,192 MiB each, beside the 32 MiB output. The FlashAttention kernel holds the
# output and next to nothing else, and our tiles 3 MiB more. The time is what the CPU could not
# show: in this run the kernel ran the forward pass about 9 times as fast as the written-out
# attention, forward and backward about 5 times. The MATH backend, which writes the matrix out
# too, was slower still on this GPU. Our Python tiles need as little memory as the kernel but run about
# 150 times slower than it at blocks of 256, and about 14 times slower again at blocks of 64
# (16 times as many tiles): on a GPU each of a tile's small operations is a kernel of its own,
# launched from Python, and the launches, not the arithmetic, take the time. FlashAttention's
# speed comes from running every tile inside one kernel.
#
# On a machine with a CUDA GPU the next cell measures the same three ways there
# (`gpu_memory`, `gpu_times`: the peak from `torch.cuda.max_memory_allocated`, the times from
# CUDA events after warm-up calls, the ways taking turns), and checks the gaps with wide
# margins, since another GPU gives other numbers: the written-out attention holds over 100
# times the kernel's peak and the tiles under twice it; the kernel runs the forward pass over
# 3 times as fast as the written-out attention, forward and backward over twice; the tiles of
# 256 are over 20 times slower than the kernel, and those of 64 over 4 times slower again. It
# takes a minute or two; without a GPU it measures nothing.

# %% tags=["nbval-ignore-output"]
if torch.cuda.is_available():
    print(f"on {torch.cuda.get_device_name()}, PyTorch {torch.__version__}, float16, 16 heads of 64")
    gpu_peaks = gpu_memory(length=16384, batch=1, blocks=(64,))  # {way: bytes, or None}
    gpu_forward = gpu_times(length=4096, batch=4, blocks=(256, 64))  # {way: ms, or None}
    gpu_both = gpu_times(length=4096, batch=4, blocks=(256,), backward=True,
                         ways=("written out", "SDPA, flash kernel", "tiles of 256"))
    for name in gpu_forward:
        cells = [f"{gpu_peaks[name] / 2**20:,.0f} MiB" if gpu_peaks.get(name) is not None else "-",
                 f"{gpu_forward[name]:,.2f} ms" if gpu_forward[name] is not None else "cannot run",
                 f"{gpu_both[name]:,.2f} ms" if gpu_both.get(name) is not None else "-"]
        print(f"{name:>20}: peak at 16,384 {cells[0]:>11}; forward {cells[1]:>11}; forward and backward {cells[2]}")
    expect_all(gpu_claims(gpu_peaks, gpu_forward, gpu_both))
else:
    print("no CUDA GPU here: nothing to measure")

# %% [markdown]
# FlashAttention-3 (Shah, Bikshandi, Zhang, Thakkar, Ramani and Dao, "FlashAttention-3: Fast
# and Accurate Attention with Asynchrony and Low-precision", 2024) is written for NVIDIA's
# Hopper GPUs, the H100. There the matrix units are so fast that the softmax's exponentials,
# computed by much slower units, take a large share of the time, so FlashAttention-3 overlaps
# the two kinds of work. Some warps only copy tiles in, with Hopper's asynchronous copy unit
# (TMA), while others compute ("warp specialisation"); two groups of warps take turns, the
# softmax of one running while the other's matrix products do ("ping-pong" scheduling); and
# within one group, the softmax of one tile overlaps the matrix products of the next. It also
# runs in 8-bit floating point (FP8), with one scale per block of numbers, and first multiplies
# the queries and the keys by the same random orthogonal matrix, which leaves $q \cdot k$
# unchanged but spreads the rare large entries that FP8 would round badly ("incoherent
# processing"). On an H100 in FP16 it reports 1.5 to 2.0 times the speed of FlashAttention-2,
# up to 740 TFLOP/s, 75% of the GPU's peak.
#
# ## Decoding: one query, many keys
#
# A decode step with a cache (chapter 09) has one new query and every cached key: $L_q = 1$.
# FlashAttention-2 shares the work out by sequence, head and block of queries; with one query
# there is one block per sequence and head, and a batch of one sequence with 16 heads keeps 16
# of the GPU's multiprocessors busy, on a GPU that has over a hundred. Flash-Decoding (Dao,
# Haziza, Massa and Sizov, "Flash-Decoding for long-context inference", 2023) splits the
# **keys** and values into chunks instead: each chunk computes its own partial result
# $(m, l, o)$ on its own processors, and a last small step merges them. That merge is this
# chapter's `merge_partials`. One decode step, 16 heads, 4,096 cached keys in 4 chunks, merged
# in a tree:

# %%
decode_generator = torch.Generator().manual_seed(2)
q_new = torch.randn(1, 16, 1, 64, generator=decode_generator)  # (N, H, 1, d): the new token's query
k_cache, v_cache = (torch.randn(1, 16, 4096, 64, generator=decode_generator) for _ in range(2))  # (N, H, 4096, d)


def chunk_partial(q, k, v):
    """One chunk's partial result: its max m and sum l (N, H, 1), its output o (N, H, 1, d)."""
    s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (N, H, 1, chunk)
    m = s.amax(dim=-1)  # (N, H, 1)
    p = torch.exp(s - m.unsqueeze(-1))  # (N, H, 1, chunk)
    l = p.sum(dim=-1)  # (N, H, 1)
    return m, l, p @ v / l.unsqueeze(-1)  # (N, H, 1), (N, H, 1), (N, H, 1, d)


partials = [chunk_partial(q_new, k_chunk, v_chunk)  # 4 chunks of 1,024 keys: each could run on its own
            for k_chunk, v_chunk in zip(k_cache.chunk(4, dim=2), v_cache.chunk(4, dim=2))]
left, right = merge_partials(*partials[0], *partials[1]), merge_partials(*partials[2], *partials[3])
m, l, o = merge_partials(*left, *right)  # the root of the tree: every key
all_scores = q_new @ k_cache.transpose(-2, -1) / 8  # (1, 16, 1, 4096): for the check only
expect_close(o, F.scaled_dot_product_attention(q_new, k_cache, v_cache),
             "4 chunks merged in a tree give the attention over all 4,096 keys (± 1e-5)", atol=1e-5)
expect_close(m + l.log(), torch.logsumexp(all_scores, dim=-1),
             "and m + log l is the log-sum-exp of all 4,096 scores (± 1e-4)", atol=1e-4)

# %% [markdown]
# The chunks need no causal mask: every cached key comes before the new token. When a chunk
# of several new queries is attended at once (a prompt read in pieces), the mask is the
# bottom-right one of the section on the causal diagonal.
#
# ## The backward pass recomputes
#
# Autograd through the naive attention keeps the $L \times L$ weights for the backward pass:
# the gradient of a softmax needs them. That would undo the saving. FlashAttention stores only
# the output and the softmax's statistics of each query row, its maximum $m$ and sum $l$
# (FlashAttention-2 keeps one number, $\text{lse} = m + \log l$, the log of the row's sum of
# $e^{\text{score}}$), and in the backward pass **recomputes** each tile's weights as
# $e^{\text{score} - \text{lse}}$ from the scores, again one tile at a time. `tiled_attention`
# does the same (a `torch.autograd.Function` whose backward walks the tiles). Dropout on the
# weights (which `tiled_attention` does not have) fits the same scheme: FlashAttention applies
# it inside the kernel and, in the backward pass, regenerates the dropout mask from the saved
# state of the random number generator instead of storing it.
#
# Our backward loop keeps the forward's order: query blocks outside, key blocks inside, so
# every query block adds into the rows of $dK$ and $dV$ of the keys it read. In PyTorch, which
# runs one tile after the other, that is harmless; a GPU kernel running the query blocks in
# parallel would need atomic additions for $dK$ and $dV$. FlashAttention-2's backward swaps the loops: each key block is the outer
# loop of its own group of processors, its $dK$ and $dV$ stay on the chip, and only $dQ$ is
# accumulated in main memory with atomic additions.
#
# Back to the gradient itself: one more term is needed, and it too comes without the weights. Row $i$'s output is
# $o_i = \sum_j p_{ij} v_j$; with $dO_i$ the gradient arriving at it, the gradient of weight
# $p_{ij}$ is $dp_{ij} = dO_i \cdot v_j$, and through the softmax the gradient of score $ij$ is
# $p_{ij}\,(dp_{ij} - \sum_k p_{ik}\, dp_{ik})$. The sum is
# $\sum_k p_{ik}\, dO_i \cdot v_k = dO_i \cdot o_i$: one number per row, from the output and its
# gradient alone (`delta` in the code). Gradients of `tiled_attention` against autograd through
# the course's `attend`, causal, in float32:

# %%
inputs = [torch.randn(2, 2, 200, 16, generator=generator).requires_grad_() for _ in range(3)]  # q, k, v
upstream = torch.randn(2, 2, 200, 16, generator=generator)  # (N, H, L, d): the gradient arriving from above
ours = torch.autograd.grad(tiled_attention(*inputs, is_causal=True, block_q=32, block_k=48), inputs, upstream)
naive = torch.autograd.grad(attend(*inputs, subsequent_mask(200))[0], inputs, upstream)
for name, mine, reference in zip("qkv", ours, naive):
    expect_close(mine, reference, f"the gradient of {name} equals autograd's through attend (± 1e-5)", atol=1e-5)

# %% [markdown]
# And the memory of a forward and backward pass together, one head of 2,048 (one $L \times L$
# matrix: 16 MiB), the gradients of $q$, $k$ and $v$ included:

# %% tags=["nbval-ignore-output"]
train_inputs = [torch.randn(1, 1, 2048, 64, generator=generator).requires_grad_() for _ in range(3)]


def forward_backward(attention):
    def step():
        attention(*train_inputs).sum().backward()
    return measure_memory(step, threads=1)[1].peak_bytes


train_peaks = {"naive": forward_backward(lambda q, k, v: attend(q, k, v)[0]),
               "tiled": forward_backward(lambda q, k, v: tiled_attention(q, k, v, block_q=128, block_k=128))}
print({name: f"{value / 2**20:.1f} MiB" for name, value in train_peaks.items()})

# %%
expect(train_peaks["naive"] > 2 * 2048 * 2048 * 4 > 8 * train_peaks["tiled"],
       "forward and backward: naive holds more than two L × L matrices, tiled under a quarter of one", got=train_peaks)

# %% [markdown]
# ## Try it
#
# The widget steps through the tiles of one query block, for one head of 24 queries and keys
# in blocks of 4. Pick a query row (the black line in the grid marks it); the tiles slider
# moves through its block's key blocks, the orange tile being the one just read (blue: done,
# white: still to do, grey: skipped). On the right, the row's scores (blue: read so far) with
# the current maximum (red line); below, its running sum (green) and maximum (red) after each
# tile, and its
# partial output $\text{acc}/l$ (orange) against the exact one (black crosses): after the last
# tile they coincide. With causal on, the grey tiles are never visited, and a row near the top
# of the grid has fewer tiles to read.

# %% tags=["nbval-ignore-output"]
tiles_explorer()

# %% [markdown]
# ## Recap
#
# - The **safe softmax** subtracts the row's maximum: exponents at most 0, no overflow, the
#   same result.
# - The **online softmax** (Milakov and Gimelshein 2018) reads the scores in blocks with a
#   running maximum $m$ and sum $l$: when the maximum grows from $m$ to $m'$ the old sum is
#   multiplied by $e^{m - m'}$. Two partial results $(m, l, o)$ **merge** exactly, in any order
#   (in floating point, up to rounding: compare tilings with a tolerance).
# - **Tiled attention** (Rabe and Staats 2021; Dao et al. 2022) applies this per query row to
#   tiles of queries and keys; it matches `F.scaled_dot_product_attention` to $10^{-5}$ for any
#   block sizes, padding and causal masks, and gives zeros to a row with no key, as the
#   course's attention does.
# - With fewer queries than keys, a causal mask is aligned **top-left** (query $i$ reads keys
#   $0..i$, PyTorch's `is_causal`) or **bottom-right** (keys $0..i + L_k - L_q$), which new
#   queries after a cache need; `tiled_attention(..., causal_alignment=...)` does both.
# - Under a causal mask, the $n(n-1)/2$ tiles above the diagonal are **skipped**, not masked.
# - **Measured** on one head: the naive peak grows with $L^2$ (over 512 MiB at 8,192); the
#   tiled and the fused peaks grow with $L$, like the output. The fused call is frugal only
#   when its backend is a tiled kernel: PyTorch's FlashAttention kernel for the CPU by
#   default here, while the `MATH` backend writes the matrix out.
# - The Python tiles are **slower** than the fused kernel at the default blocks of 64: many
#   small operations, each launched from Python and each writing its result out before the
#   next reads it. A real kernel wins on a GPU by keeping the tiles in on-chip SRAM: fewer
#   reads and writes of HBM, not fewer FLOPs. Measured once on an H200: at 16,384 tokens the
#   written-out attention held 16,416 MiB, the flash kernel 32 MiB; the kernel's forward pass
#   ran about 9 times as fast; our Python tiles used as little memory but ran about 150 times
#   slower than the kernel.
# - FlashAttention-2 swapped the loops, shared the work out by query block and split each
#   block's queries between warps; FlashAttention-3 overlaps the softmax with the matrix
#   products on Hopper GPUs and adds FP8. **Flash-Decoding** splits one query's keys into
#   chunks and merges their partial results, the merge of this chapter.
# - The **backward pass** keeps the output and one log-sum-exp per row and recomputes the
#   tiles; its gradients match autograd's, without an $L \times L$ matrix. FlashAttention-2
#   runs it with the key blocks outside, so that only $dQ$ needs atomic additions.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: `.check(answer)` says whether your answer is right and, if not,
# what is wrong with it; `.hint()` gives a nudge and `.solution()` a worked answer. The cells
# below run the checkers on placeholders, so they fail until you fill them in.
#
# **1. Merge two partial results, empty ones too.** Write `my_merge(m1, l1, o1, m2, l2, o2)`:
# `m1`, `l1` are numbers, the maximum and the sum $\sum e^{x_j - m_1}$ of one block's scores,
# and `o1` a tensor `(d,)`, its values averaged with the block's softmax; the same for a second
# block. Return `(m, l, o)` over both blocks. A block whose keys are all masked is **empty**:
# `m = -inf`, `l = 0`, `o` zeros. Merged with another block it must leave that block as it is,
# and two empty blocks must merge into an empty one, without a NaN anywhere. Before you run it:
# if both blocks have the same maximum, what weights do $o_1$ and $o_2$ get? And where does the
# formula of this chapter give NaN?

# %%
def my_merge(m1, l1, o1, m2, l2, o2):
    return max(m1, m2), l1 + l2, (o1 + o2) / 2  # replace: the exact merge, empty blocks included


ch14.merge.check(my_merge)

# %% [markdown]
# **2. The running update, kept as a log-sum-exp.** For its backward pass, FlashAttention-2
# saves one number per row, $\text{lse} = m + \log l = \log \sum_j e^{x_j}$, beside the
# normalised output $o = \sum_j e^{x_j - \text{lse}} v_j$ (its loop itself keeps $m$, $l$ and
# the unnormalised acc, as ours does). Write a running update whose whole state is that pair:
# `my_update(lse, o, scores, values)` takes the state of one query row after some blocks (`lse`
# a number, starting at `-inf`; `o` `(d,)`, starting at zeros) and the next block's `scores`
# `(b,)` and `values` `(b, d)`, and returns the new `(lse, o)`. No $m$ and no $l$ this time:
# derive the update from what $\text{lse}$ and $o$ mean. The checker streams blocks through it,
# some with scores near 1,000, and compares `lse` with `torch.logsumexp` and `o` with the
# softmax-weighted values.

# %%
def my_update(lse, o, scores, values):
    return lse, o  # replace: read the block


ch14.running_update.check(my_update)

# %% [markdown]
# **3. Causal tiles skipped.** Write `my_skipped(l_q, l_k, block_q, block_k)`: how many tiles
# a causal tiled attention skips, aligned top-left (query $i$ reads keys $0$ to $i$, as
# `is_causal`), for any lengths and block sizes, the last block possibly shorter. (Then, no
# checker: how does your count change aligned bottom-right? Compare with
# `tile_plan(..., is_causal=True, causal_alignment="bottom_right")`.) Predict first: for 10 queries and keys in blocks of
# 3, how many tiles in all, and how many skipped?

# %%
def my_skipped(l_q, l_k, block_q, block_k):
    n = l_q // block_q
    return n * (n - 1) // 2  # replace: right for equal blocks that divide the lengths only


ch14.skipped_tiles.check(my_skipped)
