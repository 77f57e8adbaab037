# %% [markdown]
# # Chapter 02: self-attention
#
# In chapter 01 a query averaged values, weighting each by how similar its key was to the
# query. This chapter makes every part learnable and lets a sequence attend to itself. We
# build, in small steps, the pieces of an encoder-decoder that reads two corners of a square
# and predicts the other two.
#
# The chapter follows Daniel Voigt Godoy, *Deep Learning with PyTorch Step-by-Step: A Beginner's
# Guide* (2021), chapter 9 ("the book"): its task and its models. Some numbers are the book's (the
# encoded source below is checked against it); the data seeds, the training length and the
# training seeds are the course's own. Scaled dot-product attention, multi-head attention and the
# sinusoidal positional encoding come from Vaswani et al., "Attention Is All You Need" (2017),
# "the paper" below.
#
# By the end of this chapter you will be able to:
#
# - explain why dot-product scores are divided by $\sqrt{d_k}$, with numbers to back it;
# - write **scaled dot-product attention** by hand and check it against PyTorch's
#   `F.scaled_dot_product_attention`;
# - use an attention head (`Attention`) and **wide multi-head attention**, and read their weights;
# - tell apart **encoder self-attention**, **cross-attention** and **decoder self-attention**;
# - train a decoder with **teacher forcing** on the **shifted target**, and explain why it needs
#   the **subsequent (causal) mask**;
# - predict greedily, one step at a time, and hide **padding** with a source mask;
# - show that attention is **blind to order**, and fix it with **sinusoidal positional encoding**.

# %%
import math
import statistics
import timeit

import numpy as np
import torch
import torch.nn.functional as F

from stepbystep import plots
from stepbystep.data import generate_sequences, square_datasets
from stepbystep.exercises import ch02
from stepbystep.expect import expect, expect_all, expect_close
from stepbystep.experiments.attention_kernels import SDPA_BACKENDS, attention_ops
from stepbystep.experiments.square_order import hedging_claims, hedging_share, order_claims, order_study
from stepbystep.models import (
    Attention,
    DecoderPe,
    DecoderSelfAttn,
    EncoderDecoderSelfAttn,
    EncoderPe,
    EncoderSelfAttn,
    WideMultiHeadAttention,
    scaled_dot_product,
    sinusoidal_table,
    subsequent_mask,
)
from stepbystep.widgets import mask_explorer

# %% [markdown]
# ## Scores from dot products
#
# Attention needs a **score** for every (query, key) pair: a number that is large when the
# key is relevant to the query. In chapter 01 the score came from a distance. Here both are
# vectors of the same size $d_k$, and the score is their **dot product**
# $q \cdot k = \sum_{i=1}^{d_k} q_i k_i$: large when they point the same way, negative when
# they point apart. A softmax over the keys turns one query's scores into weights that sum to 1.
#
# There is a catch. If the entries of $q$ and $k$ are independent with mean 0 and variance 1,
# each product $q_i k_i$ has variance 1, and the sum of $d_k$ of them has variance $d_k$. So
# the wider the vectors, the more spread out the scores. Let us measure it on 20,000 random
# pairs at several $d_k$:

# %% tags=["nbval-ignore-output"]
generator = torch.Generator().manual_seed(0)
d_ks = [1, 4, 16, 64, 256]
unscaled_variance, scaled_variance = [], []
for d_k in d_ks:
    q = torch.randn(20_000, d_k, generator=generator)  # (20000, d_k)
    k = torch.randn(20_000, d_k, generator=generator)  # (20000, d_k)
    dots = (q * k).sum(dim=-1)  # (20000,): one score per pair
    unscaled_variance.append(dots.var().item())
    scaled_variance.append((dots / math.sqrt(d_k)).var().item())
    print(f"d_k={d_k:>3}: variance of q·k {unscaled_variance[-1]:7.2f}, of q·k/√d_k {scaled_variance[-1]:.2f}")

# %% [markdown]
# What the argument predicts, with room for the sampling error of 20,000 pairs:

# %%
expect(all(abs(raw / d_k - 1) < 0.1 for d_k, raw in zip(d_ks, unscaled_variance)),
       "the variance of q·k is within 10% of d_k at every d_k", got=unscaled_variance)
expect(all(abs(scaled - 1) < 0.1 for scaled in scaled_variance),
       "the variance of q·k/√d_k is within 10% of 1 at every d_k", got=scaled_variance)

# %%
fig = plots.score_variance(d_ks, unscaled_variance, scaled_variance)

# %% [markdown]
# Why does the spread matter? The softmax exaggerates differences: when the scores are tens of
# units apart, almost all the weight goes to the largest one. The weights then barely move when
# the scores change a little, so the gradients that should teach the model which keys matter
# become tiny (the paper suspects this, section 3.2.1, and gives the variance argument above in
# its footnote 4). Here is one query
# against eight keys at $d_k = 256$:

# %% tags=["nbval-ignore-output"]
q = torch.randn(1, 256, generator=generator)  # (1, d_k)
k = torch.randn(8, 256, generator=generator)  # (8, d_k)
unscaled_weights = torch.softmax(q @ k.T, dim=-1)[0]  # (8,)
scaled_weights = torch.softmax(q @ k.T / math.sqrt(256), dim=-1)[0]  # (8,)
print(f"largest weight without scaling {unscaled_weights.max():.4f}, with scaling {scaled_weights.max():.4f}")

# %%
fig = plots.softmax_rows({"softmax(q·k)": unscaled_weights, "softmax(q·k / √d_k)": scaled_weights})

# %% [markdown]
# One query shows the weights, not the gradients. The gradient of the weights with respect to
# the scores is the softmax's Jacobian, $\operatorname{diag}(p) - p p^\top$; dividing the scores
# by $\sqrt{d_k}$ also divides this gradient by $\sqrt{d_k}$, so we count that factor too. The
# median size (Frobenius norm) of the Jacobian over 4,000 queries, each against eight keys:

# %% tags=["nbval-ignore-output"]
q = torch.randn(4000, 1, 256, generator=generator)  # (4000, 1, d_k)
k = torch.randn(4000, 8, 256, generator=generator)  # (4000, 8, d_k)
raw_scores = (q @ k.transpose(-2, -1))[:, 0]  # (4000, 8)
jacobian_norms = {}
for label, scores, factor in (("unscaled", raw_scores, 1.0), ("scaled", raw_scores / 16, 1 / 16)):
    p = torch.softmax(scores, dim=-1)  # (4000, 8)
    jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # (4000, 8, 8)
    jacobian_norms[label] = (factor * jacobian.norm(dim=(-2, -1))).median().item()  # d weights / d (q·k)
    print(f"{label:>8}: median Jacobian norm, 1/√d_k factor included, {jacobian_norms[label]:.4f}")

# %%
expect(jacobian_norms["scaled"] > 5 * jacobian_norms["unscaled"],
       "with scaling the median gradient is over 5 times larger, even after the 1/√d_k factor",
       got=jacobian_norms)

# %% [markdown]
# The one query above was no accident. Over the same 4,000 queries, the share in which a single
# key takes over 90% of the weight, and the share in which no key takes half of it:

# %% tags=["nbval-ignore-output"]
largest_unscaled = torch.softmax(raw_scores, dim=-1).max(dim=-1).values  # (4000,)
largest_scaled = torch.softmax(raw_scores / 16, dim=-1).max(dim=-1).values  # (4000,)
one_key_share = (largest_unscaled > 0.9).float().mean().item()
soft_share = (largest_scaled < 0.5).float().mean().item()
print(f"without scaling, one key over 90%: {one_key_share:.1%} of queries; "
      f"with scaling, no key over half: {soft_share:.1%}")

# %%
expect(one_key_share > 0.7, "without scaling, one key takes over 90% of the weight for most queries (over 70%)",
       got=one_key_share)
expect(soft_share > 0.75, "with scaling, no key takes half of it for most queries (over 75%)", got=soft_share)

# %% [markdown]
# The saturation shrinks the gradient exponentially in the gap between the scores, while the
# scaling costs only the polynomial factor $1/\sqrt{d_k}$: scaling wins by far.

# %% [markdown]
# Dividing by $\sqrt{d_k}$ brings the variance back to about 1 whatever the width (within
# 10% at every $d_k$ above), and the softmax stays soft. That is **scaled
# dot-product attention**, as the paper defines it:
#
# $$
# \text{Attention}(Q, K, V) = \text{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V ,
# $$
#
# where the rows of $Q$ are the $L_q$ queries, the rows of $K$ the $L_k$ keys and the rows of
# $V$ the values, one per key. The softmax runs along each row, over the keys.

# %% [markdown]
# ## Scaled dot-product attention by hand
#
# The formula is three lines of PyTorch. A **mask** (`True` = may attend, one entry per
# query and key) blocks some keys: their scores become $-\infty$ before the softmax, so their
# weight is exactly 0. From here on, shapes start with $N$, the number of sequences in a batch.

# %%
def attention_by_hand(q, k, v, mask=None):
    """softmax(q kᵀ / √d_k) v for q (N, L_q, d_k), k (N, L_k, d_k), v (N, L_k, d_v)."""
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (N, L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # (N, L_q, L_k)
    weights = torch.softmax(scores, dim=-1)  # (N, L_q, L_k): each row sums to 1
    return weights @ v, weights  # (N, L_q, d_v), (N, L_q, L_k)


# %% [markdown]
# PyTorch ships the same computation as one fused function, `F.scaled_dot_product_attention`
# (a **fused kernel**: one routine that does all the steps, instead of one call per step).
# Its boolean `attn_mask` follows the same convention as ours (`True` = takes part), so we can
# pass our mask as it is. (PyTorch's `nn.MultiheadAttention` uses the *opposite* convention;
# chapter 06 deals with that.) Let us compare the two, and the package's tested
# `scaled_dot_product`, on a batch of 16 sequences of length 5, with and without a causal mask:

# %%
q = torch.randn(16, 5, 8, generator=generator)  # (N, L_q, d_k)
k = torch.randn(16, 5, 8, generator=generator)  # (N, L_k, d_k)
v = torch.randn(16, 5, 3, generator=generator)  # (N, L_k, d_v)
causal = subsequent_mask(5)  # (1, L_q, L_k): query i may read keys 0..i
for mask in (None, causal):
    context, weights = attention_by_hand(q, k, v, mask)  # (16, 5, 3), (16, 5, 5)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (16, 5, 3)
    package_context, package_weights = scaled_dot_product(q, k, v, mask)  # (16, 5, 3), (16, 5, 5)
    label = "no mask" if mask is None else "the causal mask"
    expect_close(fused, context, f"{label}: the fused kernel computes our context", atol=1e-5, rtol=1e-5)
    expect_close(package_context, context, f"{label}: scaled_dot_product computes our context", atol=1e-5, rtol=1e-5)
    expect_close(package_weights, weights, f"{label}: and our weights", atol=1e-5, rtol=1e-5)

# %% [markdown]
# Same numbers. Is the fused kernel faster? It runs in one call, without Python between the
# steps, and it chooses among several implementations, its **backends**; the fastest ones
# (memory-efficient attention, Rabe and Staats, "Self-attention Does Not Need O(n²) Memory",
# 2021; Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with
# IO-Awareness", 2022) work through the keys in blocks and never store the
# $L_q \times L_k$ weights, which saves memory and memory traffic on long sequences. Which
# backend runs depends on the hardware and on the inputs, so before timing anything we ask
# PyTorch's profiler which one ran (`attention_ops` lists the backend operations a call makes;
# chapter 06 uses it on whole layers). Our tensors so far are 3-D, $(N, L, d_k)$. The layers of
# chapter 03 hand the function 4-D tensors, $(N, h, L, d_k)$, one slice per head. Here are 8
# sequences of length 256 with $d_k = d_v = 64$, as 3-D tensors and as 4-D ones with one
# head, $h = 1$:

# %% tags=["nbval-ignore-output"]
long_q, long_k, long_v = torch.randn(3, 8, 256, 64, generator=generator)  # each (N, L, d_k)
long_causal = subsequent_mask(256)  # (1, L, L)
long_q4, long_k4, long_v4 = long_q[:, None], long_k[:, None], long_v[:, None]  # (N, 1, L, d_k) each: one head
calls = {  # label -> a call of the fused function
    "3-D inputs, mask (1, L, L)":
        lambda: F.scaled_dot_product_attention(long_q, long_k, long_v, attn_mask=long_causal),
    "4-D inputs, mask (1, 1, L, L)":
        lambda: F.scaled_dot_product_attention(long_q4, long_k4, long_v4, attn_mask=long_causal[None]),
    "4-D inputs, is_causal=True": lambda: F.scaled_dot_product_attention(long_q4, long_k4, long_v4, is_causal=True),
}
steps = ("aten::bmm", "aten::_softmax")  # matrix products and a softmax, each its own operation
backends = {label: attention_ops(call, SDPA_BACKENDS + steps) for label, call in calls.items()}
for label, ops in backends.items():
    print(f"{label:>30}: {', '.join(op.removeprefix('aten::') for op in ops)}")

# %%
fused = set(SDPA_BACKENDS) - {"aten::_scaled_dot_product_attention_math"}  # the backends that tile the keys
three_d = set(backends["3-D inputs, mask (1, L, L)"])
expect(set(steps) <= three_d and not fused & three_d,
       "given 3-D inputs, the function falls back to its math backend: bmm and softmax, step by step", got=backends)
expect(all(fused & set(backends[label]) and not set(steps) & set(backends[label])
           for label in ("4-D inputs, mask (1, 1, L, L)", "4-D inputs, is_causal=True")),
       "given 4-D inputs, with the mask or with is_causal, it runs a fused kernel, no bmm or softmax of its own",
       got=backends)
expect_close(calls["4-D inputs, is_causal=True"]()[:, 0], attention_by_hand(long_q, long_k, long_v, long_causal)[0],
             "is_causal=True computes our context under the causal mask", atol=1e-5, rtol=1e-5)

# %% [markdown]
# On a CPU the fused kernel (in current releases `_scaled_dot_product_flash_attention_for_cpu`,
# FlashAttention's tiling) takes 4-D inputs; 3-D ones go to the `math` backend: the same
# matrix products (`bmm`) and softmax as our function, one operation each. (The kernel has
# more conditions, on a GPU even more, such as the dtype and the head size; chapter 14 comes
# back to them.)
#
# Now the times of the same calls, and of our code, all under the causal mask. `is_causal=True`
# tells the function that the mask is the lower triangle (PyTorch documents it as the same
# computation as a `tril` mask, and it may not be combined with `attn_mask`), instead of
# handing it $L \times L$ entries. Each is the best of three rounds of 10 calls:

# %% tags=["nbval-ignore-output"]
timed = {"by hand": lambda: attention_by_hand(long_q, long_k, long_v, long_causal), **calls}
seconds = {label: min(timeit.repeat(call, number=10, repeat=3)) / 10 for label, call in timed.items()}
for label, elapsed in seconds.items():
    print(f"{label:>30}: {elapsed * 1e3:6.2f} ms per call, {elapsed / seconds['by hand']:.2f} × the time by hand")

# %% [markdown]
# Read your own numbers: the times depend on the machine, its load, the sizes and the PyTorch
# release, so the chapter checks which backend ran, not how fast. The 3-D call runs the same
# steps as our code. The 4-D calls run the fused kernel, which never writes out the
# $8 \times 256 \times 256$ weights. With a boolean mask it is handed $L^2$ entries to read;
# with `is_causal=True` there is no mask to build, store or read. A kernel that knows the mask
# is causal could also skip the blocks of keys that lie wholly in the future (chapter 14 builds
# such a tiled loop), but whether a backend does is not part of what PyTorch documents, and one
# machine's best of three rounds cannot settle it: compare the two 4-D lines on yours. So to get the
# fused kernel, give it $(N, h, L, d_k)$ tensors, and for a causal mask pass `is_causal=True`
# rather than a materialised mask. We keep the step-by-step version in this course anyway,
# because we want to *look* at the weights.

# %% [markdown]
# ## The data: corners of a square
#
# Our task for the next chapters: each sequence holds the four corners of the square
# $[-1, 1]^2$, starting at a random corner and going clockwise or counter-clockwise, each point
# with a little Gaussian noise (standard deviation 0.1). Given the first two corners (the
# **source**), predict the last two (the **target**). Two corners fix the direction, so the
# task is solvable, if the model can tell which corner came first.

# %%
points, directions = generate_sequences(n=8, seed=13)  # 8 arrays (4, 2), directions (8,)
fig = plots.square_sequences(np.stack(points), directions)
_ = fig.suptitle("grey: the square [-1, 1]²; the numbers give the order of the corners")

# %% [markdown]
# `square_datasets` makes the training set (256 sequences, seed 13) and a test set (128
# sequences drawn with another seed, 17). A training example is the *whole* sequence, because
# the decoder will read part of the target while training (more on that soon), and its
# target; a test example is just the source and its target. Seven of the eight squares drawn
# above go counter-clockwise; the training set draws the two directions about equally often
# (`generate_sequences` with the same seed gives its directions):

# %%
train_data, test_data = square_datasets(n_train=256, n_test=128, train_seed=13, test_seed=17)
full_train, target_train = train_data.tensors  # (256, 4, 2), (256, 2, 2)
source_test, target_test = test_data.tensors  # (128, 2, 2), (128, 2, 2)
_, train_directions = generate_sequences(n=256, seed=13)  # (256,): the same draw, 1 = clockwise
print(f"training: full {tuple(full_train.shape)}, target {tuple(target_train.shape)}; "
      f"{int(train_directions.sum())} of {len(train_directions)} clockwise")
print(f"test: source {tuple(source_test.shape)}, target {tuple(target_test.shape)}")

# %% [markdown]
# ## An attention head: `Attention`
#
# Attention by itself has no parameters. A **head** learns three linear maps from each input
# vector $x$ (here $n_{features} = 2$: a point) to a query, a key and a value. We use the
# package's `Attention(hidden_dim, input_dim)`: `init_keys(keys)` projects the keys once,
# then `forward(query)` projects the queries, computes the scaled scores and the weighted sum,
# and keeps the weights in `alphas` `(N, L_q, L_k)`; `hidden_dim` is $d_k$, the size of the
# projected queries and keys. In this class's default (the book's) the values are the raw
# inputs handed to `init_keys`, not projected at all.
#
# When the queries and the keys are the *same* sequence, it is **self-attention**: every
# element of the source reads every element of the source, itself included.

# %% tags=["nbval-ignore-output"]
torch.manual_seed(11)
head = Attention(hidden_dim=2, input_dim=2)
source = full_train[:, :2]  # (256, 2, 2): the first two corners
head.init_keys(source)
context = head(source)  # (256, 2, 2): one context vector per source element
print(f"context {tuple(context.shape)}, weights {tuple(head.alphas.shape)}")
print(f"weights of the first sequence:\n{head.alphas[0]}")

# %%
expect(context.shape == (256, 2, 2) and head.alphas.shape == (256, 2, 2),
       "one context vector per source element, and a 2 × 2 weights matrix per sequence",
       got=(tuple(context.shape), tuple(head.alphas.shape)))
expect_close(head.alphas.sum(dim=-1), 1.0, "every row of weights sums to 1", atol=1e-6)

# %% [markdown]
# How many parameters does the head have? Three linear maps from 2 to 2 features, each with
# $2 \times 2$ weights and 2 biases: 18. But with the values being the keys, `linear_value`
# is never called; it exists because the book creates it (and creating it keeps the seeded
# numbers the book's). Backpropagating through the output shows which parameters it used:

# %%
context.sum().backward()  # any function of the output will do: which parameters receive a gradient?
n_single = sum(p.numel() for p in head.parameters())
n_used = sum(p.numel() for p in head.parameters() if p.grad is not None)
unused = [name for name, p in head.named_parameters() if p.grad is None]
print(f"one head: {n_single} parameters, {n_used} of them used; never used: {unused}")

# %% [markdown]
# ## Wide multi-head attention
#
# One head computes one set of weights. Several heads, each with its own projections, can
# look for different things at once. In **wide** multi-head attention (the book's chapter 9)
# every head projects to the full model size `d_model`; the heads' contexts are concatenated,
# `(N, L, n_heads · d_model)`, and a linear layer brings them back to `d_model`. (Chapter 03
# splits `d_model` between the heads instead: narrow heads.) `WideMultiHeadAttention` (the
# book's `MultiHeadAttention`) stacks its heads' weights along a first dimension,
# `(n_heads, N, L_q, L_k)`.

# %%
torch.manual_seed(11)
multi_head = WideMultiHeadAttention(n_heads=3, d_model=2, input_dim=2)
multi_head.init_keys(source)
context = multi_head(source)  # (256, 2, d_model)
n_multi = sum(p.numel() for p in multi_head.parameters())
context.sum().backward()
n_multi_used = sum(p.numel() for p in multi_head.parameters() if p.grad is not None)
print(f"context {tuple(context.shape)}, weights {tuple(multi_head.alphas.shape)}")
print(f"parameters: three wide heads (18 each) and the output layer (6 × 2 + 2) = {n_multi}, "
      f"{n_multi_used} of them used")

# %% [markdown]
# The wide heads do project their values (`WideMultiHeadAttention`'s default), so every one of
# their parameters is used. Here are the three heads' weights for the first sequence:

# %%
fig = plots.attention_maps(multi_head.alphas[:, 0], titles=["head 0", "head 1", "head 2"], n_cols=3)

# %% [markdown]
# These heads are untrained: their projections are random, so the weights mean nothing yet.
# They are soft, though: no key takes nearly all of a query's weight (every weight of the first
# sequence lies between 0.2 and 0.8), because random projections of these small
# points give scores at most about one unit apart, and the softmax of close scores stays far
# from 0 and 1. The three heads differ only by their random starting weights; training is what
# makes each choose what to look at.

# %%
first_sequence = multi_head.alphas[:, 0]  # (n_heads, L_q, L_k)
expect(((first_sequence > 0.2) & (first_sequence < 0.8)).all(),
       "every untrained weight of the first sequence lies between 0.2 and 0.8",
       got=(first_sequence.min(), first_sequence.max()))

# %% [markdown]
# ## Encoder self-attention
#
# The **encoder** is multi-head self-attention over the source followed by a small
# feed-forward network applied to every position on its own (`d_model → ff_units → d_model`).
# Its output, one vector per source element, is the **encoded source** (the "states").
# With the book's settings (`d_model=2`, 3 heads, 10 hidden units) and seed 11, the perfect
# square's first two corners give the encoded source the book prints,
# `[[-0.0498, 0.2193], [-0.0642, 0.2258]]` (to four decimals). These are the book's first,
# simplest layers: the encoder here, and the decoder below, have **no residual connections and
# no layer normalisation** yet; chapter 04 adds both.

# %% tags=["nbval-ignore-output"]
torch.manual_seed(11)
encoder = EncoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2)
perfect_source = torch.tensor([[[-1.0, -1.0], [-1.0, 1.0]]])  # (1, 2, 2)
states = encoder(perfect_source)  # (1, 2, d_model)
print(states.detach().numpy().round(4))

# %%
book_states = torch.tensor([[[-0.0498, 0.2193], [-0.0642, 0.2258]]])  # (1, 2, 2), printed in the book
expect_close(states, book_states, "the encoded source is the book's, to four decimals (± 1e-4)", atol=1e-4)

# %% [markdown]
# ## Cross-attention and decoder self-attention
#
# The **decoder** produces the target. It has two attention modules:
#
# 1. **self-attention** over what it has *already* seen of the target;
# 2. **cross-attention**: its queries come from the decoder, but its keys and values are the
#    encoder's states. This is how the target reads the source; attention between a decoder
#    and an encoder comes from Bahdanau, Cho and Bengio, "Neural Machine Translation by
#    Jointly Learning to Align and Translate" (2015). `init_keys(states)` hands the states
#    over before decoding.
#
# Then a feed-forward network maps each position to a 2-D point. The weights of the
# cross-attention have one row per target position and one column per *source* position:

# %%
torch.manual_seed(13)
decoder = DecoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2)
decoder_input = torch.tensor([[[-1.0, 1.0], [1.0, 1.0]]])  # (1, 2, 2): what the decoder reads
decoder.init_keys(states)  # cross-attention keys and values: the encoded source (1, 2, d_model)
output = decoder(decoder_input)  # (1, 2, n_features)
print(f"decoder output {tuple(output.shape)}")
print(f"self-attention weights {tuple(decoder.self_attn_heads.alphas.shape)} (heads, N, target, target)")
print(f"cross-attention weights {tuple(decoder.cross_attn_heads.alphas.shape)} (heads, N, target, source)")

# %% [markdown]
# ## Teacher forcing and the shifted target
#
# What does the decoder read? While training we know the whole target, so we let the decoder
# read the **true** previous point at every position: this is **teacher forcing** (Williams
# and Zipser, "A Learning Algorithm for Continually Running Fully Recurrent Neural Networks",
# 1989). The
# decoder's input is the target **shifted right by one**: the last source corner, then every
# target corner but the last. Position $i$ reads corner $i$ of the shifted sequence and must
# predict target corner $i$, the *next* corner.

# %%
sequence = full_train[:1]  # (1, 4, 2)
source_seq = sequence[:, :2]  # (1, 2, 2): corners 0 and 1
shifted_target = sequence[:, 1:3]  # (1, 2, 2): corners 1 and 2, the decoder's input
target_seq = sequence[:, 2:]  # (1, 2, 2): corners 2 and 3, what it must predict
for name, part in (("source", source_seq), ("shifted target", shifted_target), ("target", target_seq)):
    print(f"{name:>14}: " + ", ".join(f"({x:+.2f}, {y:+.2f})" for x, y in part[0].tolist()))

# %% [markdown]
# ## The subsequent mask
#
# There is a leak. Self-attention lets every position read *every* position of its input, and
# the shifted target holds, at position 1, target corner 0: the very answer position 0 must
# predict. Without a mask, position 0 can copy it. We can see the leak in the decoder's
# self-attention: change its input at position 1 only, and watch what position 0 reads.

# %% tags=["nbval-ignore-output"]
self_attn = decoder.self_attn_heads
changed_input = decoder_input.clone()  # (1, 2, 2)
changed_input[0, 1] = torch.tensor([5.0, -5.0])  # another point at position 1 only
target_mask = subsequent_mask(2)  # (1, 2, 2)
leak = {}  # label -> (weights query 0 gives key 1 in each head, how far query 0's output moves)
for mask, label in ((None, "no mask"), (target_mask, "subsequent mask")):
    self_attn.init_keys(decoder_input)
    before = self_attn(decoder_input, mask)  # (1, 2, d_model)
    weights = self_attn.alphas[:, 0, 0, 1]  # (n_heads,): how much query 0 reads key 1 in each head
    self_attn.init_keys(changed_input)
    after = self_attn(changed_input, mask)  # (1, 2, d_model)
    leak[label] = (weights, (after[0, 0] - before[0, 0]).abs().max().item())
    shares = ", ".join(f"{w:.2f}" for w in weights.tolist())
    print(f"{label:>15}: query 0 gives key 1 the weights [{shares}], its output moves by {leak[label][1]:.4f}")

# %%
weights, moved = leak["no mask"]
expect((weights > 0.05).all() and moved > 0.1,
       "without the mask, query 0 reads key 1 in every head (over 0.05) and its output moves by over 0.1",
       got=leak["no mask"])
weights, moved = leak["subsequent mask"]
expect((weights == 0).all() and moved == 0, "with the mask, query 0 gives key 1 no weight and its output does not move",
       got=leak["subsequent mask"])

# %% [markdown]
# The **subsequent mask** (also called causal) lets query $i$ attend to keys $0..i$ only:
# its lower triangle is `True`. Its shape is `(1, L, L)`, one mask shared by every sequence of
# the batch. With it, what the decoder learns with teacher forcing is what it can do when it
# has to predict for real, one step at a time, without seeing the future.

# %%
fig = plots.mask_map(subsequent_mask(4))

# %%
decoder(decoder_input, target_mask=target_mask)  # (1, 2, 2); refreshes the weights
fig = plots.attention_maps(decoder.self_attn_heads.alphas[:, 0], titles=["head 0", "head 1", "head 2"],
                           n_cols=3, suptitle="decoder self-attention with the subsequent mask")

# %% [markdown]
# This decoder is untrained too, so the weights of query 1 are arbitrary. What is not
# arbitrary is the top row: query 0 may read key 0 only, so in every head its weight there is
# exactly 1, and exactly 0 on key 1.

# %%
decoder_weights = decoder.self_attn_heads.alphas[:, 0]  # (n_heads, L, L)
expect((decoder_weights[:, 0, 0] == 1).all() and (decoder_weights[:, 0, 1] == 0).all(),
       "in every head, query 0 gives key 0 a weight of exactly 1 and key 1 exactly 0", got=decoder_weights[:, 0])

# %% [markdown]
# ## Greedy prediction, one step at a time
#
# At test time there is no target to read. The decoder starts from the last source corner,
# predicts the next point, appends its own prediction to its input and goes again: **greedy**
# decoding. The whole encoder-decoder is `EncoderDecoderSelfAttn`; it keeps the subsequent
# mask as a buffer, `trg_masks`, and slices it to the length decoded so far. Here are the two
# steps written out. The model is not trained yet, so its predictions are arbitrary; this
# cell shows only the loop.

# %% tags=["nbval-ignore-output"]
torch.manual_seed(23)
model = EncoderDecoderSelfAttn(
    EncoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2),
    DecoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2),
    input_len=2, target_len=2,
)
model.eval()
source_seq = source_test[:4]  # (4, 2, 2)
model.encode(source_seq)  # the decoder's cross-attention now holds the encoded source
inputs = source_seq[:, -1:]  # (4, 1, 2): the last source corner starts the decoding
outputs = []
for step in range(model.target_len):
    out = model.decode(inputs, target_mask=model.trg_masks[:, : step + 1, : step + 1])  # (4, step+1, 2)
    outputs.append(out)
    inputs = torch.cat([inputs, out[:, -1:]], dim=1)  # (4, step+2, 2): append the newest point
for step, out in enumerate(outputs):
    x, y = out[0, 0].tolist()
    print(f"first predicted point after step {step}: ({x:+.4f}, {y:+.4f})")
greedy = torch.cat([outputs[0][:, :1], outputs[1][:, 1:]], dim=1)  # (4, 2, 2)
print(f"same as model.predict: {torch.allclose(greedy, model.predict(source_seq), atol=1e-5)}")

# %%
expect_close(greedy, model.predict(source_seq), "the two steps are what model.predict does", atol=1e-5)

# %% [markdown]
# The whole model in one picture, its sizes read from `model`: an encoder and a decoder made of
# attention and feed-forward networks only, with no residual connections or norms yet (the
# parts this chapter builds are in yellow).

# %%
fig = plots.architecture_diagram(model, highlight=("self-attention", "cross-attention"))

# %% [markdown]
# (In eval mode `model(source)` runs this same loop; in training mode it takes the whole
# sequence and uses teacher forcing.) What the mask does to this loop cannot be seen on an
# untrained decoder: its outputs hardly depend on its input yet, so appending a point barely
# moves anything, mask or no mask. We come back to it with a trained model at the end of the
# chapter.

# %% [markdown]
# ## Padding and the source mask
#
# Real sequences have different lengths. To stack them in one tensor we **pad** the short
# ones, here with zeros at the end. The padded positions are not data, so no query should
# attend to them: a **source mask** `(N, 1, L)` is `False` at the padding, and the same row
# serves every query of the sequence. Let us draw four sequences of random lengths, from 2 to
# 4 corners (this draw gives three of 4 corners and one of 2):

# %%
ragged, _ = generate_sequences(n=4, variable_len=True, seed=2)  # 4 arrays (length, 2)
lengths = torch.tensor([len(points) for points in ragged])  # (4,)
padded = torch.zeros(4, 4, 2)  # (N, L_max, 2)
for row, points in enumerate(ragged):
    padded[row, : len(points)] = torch.as_tensor(points, dtype=torch.float32)
source_mask = (torch.arange(4) < lengths.unsqueeze(1)).unsqueeze(1)  # (N, 1, L_max): True on real points
print(f"lengths {lengths.tolist()}")
print(f"source mask {tuple(source_mask.shape)}:\n{source_mask.int()}")

# %% [markdown]
# With the mask, the encoder gives the padded keys zero weight, and the outputs at the real
# positions do not depend on what the padding holds. The padded positions are still *queries*:
# they get weights and outputs like any other row (hatched in the maps below), and later layers
# and the loss ignore those outputs.

# %%
torch.manual_seed(11)
encoder = EncoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2)
states = encoder(padded, mask=source_mask)  # (4, 4, d_model)
other_padding = padded.masked_fill(~source_mask.transpose(1, 2), 9.0)  # (4, 4, 2): padding = 9 now
other_states = encoder(other_padding, mask=source_mask)  # (4, 4, d_model)
alphas = encoder.self_attn_heads.alphas  # (n_heads, N, L, L)
real = source_mask.transpose(1, 2).expand_as(states)  # (4, 4, d_model): True at real positions
print(f"largest weight on a padded key: {alphas.masked_select(~source_mask).max():.4f}")
print(f"real positions unchanged when the padding changes: {torch.allclose(states[real], other_states[real])}")

# %%
fig = plots.padded_attention_maps(alphas[0], lengths, titles=[f"length {n}" for n in lengths.tolist()],
                                  suptitle="head 0, with the source mask")

# %% [markdown]
# ## Attention is blind to order
#
# Nothing in self-attention knows *where* an element sits: the scores depend only on the
# vectors, and the weighted sum does not care in which order its terms come. So if we shuffle
# the input sequence, the encoder's outputs come out shuffled the same way, and otherwise
# unchanged (the encoder is **permutation equivariant**):

# %%
torch.manual_seed(11)
encoder = EncoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2)
sequence = full_train[:1]  # (1, 4, 2)
order = torch.tensor([2, 0, 3, 1])
shuffled_then_encoded = encoder(sequence[:, order])  # (1, 4, d_model)
encoded_then_shuffled = encoder(sequence)[:, order]  # (1, 4, d_model)
print(f"shuffling commutes with the encoder: {torch.allclose(shuffled_then_encoded, encoded_then_shuffled, atol=1e-5)}")

# %% [markdown]
# Whether that matters depends on the task. The direction of a square is the order of its
# corners, but the encoder sees the two source corners as a *set*: if the model has to learn
# the direction from the encoder alone, it cannot. We test exactly that below.

# %% [markdown]
# ## Positional encoding
#
# The fix is to add to each element a vector that depends on its position $t$: a
# **positional encoding**. The Transformer's is made of sinusoids. For a model of size $d$
# ($d_{model}$ in the paper), dimension pair $(2i, 2i+1)$ holds a sine and a cosine of the same
# **angular speed** $\omega_i = 10000^{-2i/d}$, the angle in radians that the pair turns per position:
#
# $$
# PE(t)_{2i} = \sin(\omega_i t), \qquad PE(t)_{2i+1} = \cos(\omega_i t).
# $$
#
# The first pair turns fast (one radian per position), later pairs ever more slowly, so
# together they give every position a distinct code. (The paper picked these sinusoids; the
# book draws them the same way.) Vaswani et al. also tried *learned* positional embeddings
# and "found that the two versions produced nearly identical results" (section 3.5, Table 3
# row E). They chose the sinusoids because they "may allow the model to extrapolate to
# sequence lengths longer than the ones encountered during training": a hope, not a result
# the paper reports. Here with $d = 8$ over 20 positions:

# %%
table = sinusoidal_table(20, 8)  # (max_len, d)
omegas = [10000 ** (-2 * i / 8) for i in range(4)]
print("angular speeds ω_i:", ", ".join(f"{omega:.4f}" for omega in omegas))
print(f"values between {table.min():.2f} and {table.max():.2f}")

# %%
fig = plots.sinusoids(table, dims=(0, 1, 2, 3))

# %%
fig = plots.encoding_heatmap(table)

# %% [markdown]
# Over these 20 positions the slow pairs (dimensions 4 to 7) hardly change: they tell
# positions apart only in long sequences, hundreds or thousands of positions long.

# %% [markdown]
# **A shift is a rotation.** Each pair $(\sin \omega_i t, \cos \omega_i t)$ is a point on the
# unit circle, at angle $\omega_i t$. Moving $k$ positions ahead adds $\omega_i k$ to the
# angle, wherever you start: it is the same rotation, a fixed $2 \times 2$ matrix that depends
# on $k$ but not on $t$. So "the element $k$ steps back" is a simple, linear relation between
# encodings. The paper chose the sinusoids for this reason: its authors "hypothesized it would
# allow the model to easily learn to attend by relative positions" (section 3.5), a
# hypothesis, not a result. The arrows below all jump
# $k = 2$ positions:

# %%
fig = plots.relative_shift(table, pairs=(0, 1), shift=2, starts=(0, 4, 8))

# %% [markdown]
# **Distances between positions.** For the same reason, the distance between the encodings of
# positions $s$ and $t$ depends only on how far apart they are, $|t - s|$, not on where they are:
# every diagonal of the left map is constant.

# %% tags=["nbval-ignore-output"]
distances = torch.cdist(table, table)  # (max_len, max_len)
print(f"distance between positions 0 and 3: {distances[0, 3]:.4f}; between 10 and 13: {distances[10, 13]:.4f}")
print(f"from position 0: to position 1 {distances[0, 1]:.4f}, to position 6 {distances[0, 6]:.4f}")

# %%
spread = max((along - along[0]).abs().max() for along in (distances.diagonal(o) for o in range(1, len(table))))
expect(spread < 1e-4, "every pair of positions the same offset apart is the same distance apart (± 1e-4)", got=spread)
expect(distances[0, 6] < distances[0, 1], "position 6 is closer to position 0 than position 1 is",
       got=(distances[0, 6], distances[0, 1]))

# %%
fig = plots.position_distances(table, references=(0, 5, 10))

# %% [markdown]
# The right panel shows that the distance is *not* a steadily growing function of the
# offset: position 6 is closer to position 0 than position 1 is. The first pair turns one
# radian per position, so after about $2\pi \approx 6.3$ positions it is nearly back where it
# started, and its contribution to the distance drops; the slower pairs grow with the offset,
# but slowly. So equal offsets give equal distances, but a larger offset does not always give
# a larger distance: the fast sinusoids wrap around.

# %% [markdown]
# `EncoderPe` and `DecoderPe` put a `PositionalEncoding` in front of the encoder and decoder:
# it multiplies the input by $\sqrt{d}$, as the book does, and adds the table's first $L$
# rows. The paper multiplies its embeddings the same way (section 3.4: "In the embedding
# layers, we multiply those weights by $\sqrt{d_{model}}$") and gives no reason. A common
# reading is about size: the input and the encoding should be **comparable**, so that neither
# drowns the other, and embedding weights that start small (standard deviation
# $1/\sqrt{d_{model}}$, as in the paper's reference implementation, tensor2tensor) are about
# 1 once multiplied, like the sinusoids. The book keeps the multiplication for the square
# corners: here they enter the encoding as they are ($d = 2$); from chapter 05 on, as a
# learned projection. Let us measure the root-mean-square (RMS) size of the entries, with and
# without the factor, against the table's:

# %% tags=["nbval-ignore-output"]
def rms(t):
    return t.pow(2).mean().sqrt().item()


d_paper = 512
paper_embeddings = torch.randn(1000, d_paper, generator=generator) / math.sqrt(d_paper)  # std 1/√d_model
sizes = {  # name: (input, d)
    "square corners": (full_train, 2),
    "embeddings of std 1/√d": (paper_embeddings, d_paper),
}
print(f"{'RMS of the entries':>32} {'input':>6} {'× √d':>6} {'table':>6}")
size_ratios = {}
for name, (inputs, d) in sizes.items():
    table_rms = rms(sinusoidal_table(100, d))
    size_ratios[name] = (rms(inputs) / table_rms, rms(inputs * math.sqrt(d)) / table_rms)
    print(f"{name + f' (d = {d})':>32} {rms(inputs):6.2f} {rms(inputs * math.sqrt(d)):6.2f} {table_rms:6.2f}")

# %%
# sin² + cos² = 1 in every pair: the table's RMS is 1/√2 whatever d
expect_close([rms(sinusoidal_table(100, d)) for d in (2, d_paper)], 2**-0.5, "the table's RMS is 1/√2 at d = 2 and 512",
             atol=1e-6)
plain_ratio, scaled_ratio = size_ratios["square corners"]
expect(1.2 < plain_ratio < 1.6 and 1.8 < scaled_ratio < 2.2,
       "the corners are 1.2-1.6 times the table's size, 1.8-2.2 times once scaled", got=size_ratios["square corners"])
plain_ratio, scaled_ratio = size_ratios["embeddings of std 1/√d"]
expect(plain_ratio < 0.1 and 1.2 < scaled_ratio < 1.6,
       "embeddings of std 1/√d are under a tenth of the table's size, 1.2-1.6 times once scaled",
       got=size_ratios["embeddings of std 1/√d"])

# %% [markdown]
# What the numbers show: the table's entries have an RMS of $1/\sqrt{2} \approx 0.71$ at every
# size. Embeddings that start at standard deviation $1/\sqrt{d_{model}}$ are tiny next to it,
# and the factor $\sqrt{d_{model}}$ makes them comparable. Our corners, in contrast, are
# already about 1.4 times the table's size, and $\times\sqrt{2}$ makes them about twice its
# size: for them the factor does not bring the two closer. We keep it to follow the book, and
# the experiment below has a control that keeps the factor without the table. For an input that
# already starts at size 1 in a wider model, the factor drowns the encoding and makes the
# inputs large: `nn.Embedding` starts with standard deviation 1, so chapter 07 does not scale
# its embeddings, and its controls measure which of the two hurts.
#
# Now shuffling the input changes more than the order of the outputs:

# %% tags=["nbval-ignore-output"]
torch.manual_seed(11)
encoder_pe = EncoderPe(n_heads=3, d_model=2, ff_units=10, n_features=2, max_len=4)
difference = (encoder_pe(sequence[:, order]) - encoder_pe(sequence)[:, order]).abs().max()  # scalar
print(f"with positional encoding, shuffling changes the outputs by up to {difference:.4f}")

# %%
expect(difference > 0.01, "with positional encoding, shuffling changes the outputs by more than 0.01", got=difference)

# %% [markdown]
# ## Training, with and without positional encoding
#
# Does the model need to know the order of the source? In the book's setup the decoder starts
# from the *last* source corner, so the decoder's own first input already says something about
# the order (exercise 4 asks what). So that the test measures what positions give the encoder
# alone, we change one thing: the decoder starts from a **fixed start vector** (the
# origin, the squares' centre) instead of the last source corner. `FixedStartSeq2Seq` is
# `EncoderDecoderSelfAttn` with that change; the decoder never reads a source corner, so the
# order of the source can reach it only through the encoder.
#
# We compare three models, each built after the same seed:
#
# - **no PE**: `EncoderSelfAttn` and `DecoderSelfAttn`;
# - **PE**: `EncoderPe` and `DecoderPe`, which multiply the input by $\sqrt{2}$ and add the table;
# - **scale only**: `EncoderPe` and `DecoderPe` with the table zeroed, the control: it keeps the
#   $\times\sqrt{2}$ but is as blind to the order of the source as "no PE".
#
# Each is trained with the book's settings (`d_model=2`, 3 heads, 10 hidden units, Adam with
# learning rate 0.01, mean squared error, batches of 16) for 20 epochs, at five seeds; a seed
# sets both the initial weights and the order of the mini-batches, so each seed is a full
# repeat of the run. In training mode the model uses teacher forcing; `StepByStep` evaluates in eval mode, so the
# test loss is measured on *greedy* predictions from the test sources alone. (This takes about
# half a minute.)

# %%
seeds = range(5)
runs = order_study(train_data, test_data, seeds, n_epochs=20)  # {variant: [trainer per seed]}
test_losses = {variant: [sbs.val_losses[-1] for sbs in trainers] for variant, trainers in runs.items()}

# %% tags=["nbval-ignore-output"]
for variant, losses in test_losses.items():
    print(f"{variant:>10}: test loss per seed " + ", ".join(f"{loss:.3f}" for loss in losses)
          + f"   median {statistics.median(losses):.3f}")

# %%
fig = plots.seed_dots(test_losses, ylabel="test loss after 20 epochs (greedy)",
                      title="five seeds each: one dot per seed, bar at the median")

# %% [markdown]
# One dot per seed: the spread between seeds is why the claims below are about medians and
# orderings, not exact values. What the five seeds show:

# %%
expect_all(order_claims(test_losses))

# %% [markdown]
# Why can the order-blind models not get much below 0.5? They see the source corners as a
# set, and every set of two adjacent corners belongs to two squares, one drawn each way. The first
# target corner is then one of two corners a side apart, and the best an order-blind model can
# do is to predict between them. That gives the 0.5: the corners are $(\pm 1, \pm 1)$, so the
# two candidates differ by 2 in one coordinate and agree in the other, and their midpoint
# misses the right one by 1 in that coordinate and by 0 in the other. `MSELoss` averages the
# squared errors over the coordinates: $(1^2 + 0^2)/2 = 0.5$. The second target corner is
# ambiguous in the same way, so the best whole loss is 0.5, plus a little from the noise
# (standard deviation 0.1) on the corners: about 0.51. That is a floor, not where the runs
# end: after 20 epochs they sit near it or above it (their medians are printed above), and
# none gets below 0.45 at any seed (on a finite test set a run could land a little under the
# floor by chance). The model with positions can tell the two squares apart,
# and at every seed it does better, although after 20 epochs of this tiny model it is far from
# perfect. The $\times\sqrt{2}$ on its own does not close the gap. Here are the losses of the
# seed-0 runs; note that the training loss is teacher-forced while the test loss comes from
# greedy decoding, so the two curves measure different things:

# %%
fig = plots.compare_runs({variant: (trainers[0].losses, trainers[0].val_losses) for variant, trainers in runs.items()})

# %% [markdown]
# And the predictions for the first test squares: blue dots are the source corners, green
# circles the true target, red crosses the prediction, each numbered (in red) and joined by a
# dotted line to the corner it predicts. Without positions, the first cross (for corner 2) lands between the two
# corners it could be, hedging between the two directions:

# %%
fig = plots.sequence_predictions(source_test, target_test, runs["no PE"][0].predict(source_test), numbered=True)
_ = fig.suptitle("no PE (seed 0); grey: the square [-1, 1]²")

# %% [markdown]
# Corner 2 is opposite corner 0: it is $-x_0$ if the square goes the way the source says, and
# $-x_1$ if the two source corners came the other way round. `hedging_share` counts the test
# squares whose first predicted corner lies nearer the midpoint of these two than to either,
# for every run:

# %% tags=["nbval-ignore-output"]
hedging = {variant: [hedging_share(source_test, sbs.predict(source_test)) for sbs in trainers]
           for variant, trainers in runs.items()}
for variant, shares in hedging.items():
    print(f"{variant:>10}: first corner between the two possible ones in "
          + ", ".join(f"{share:.0%}" for share in shares) + " of the test squares")

# %%
expect_all(hedging_claims(hedging))

# %%
fig = plots.sequence_predictions(source_test, target_test, runs["PE"][0].predict(source_test), numbered=True)
_ = fig.suptitle("with positional encoding (seed 0); grey: the square [-1, 1]²")

# %% [markdown]
# These are five runs of a tiny model trained briefly, on a task built so that order is the
# information; the claims above are about their medians and about these seeds, not a law.
#
# **The mask and greedy decoding, now with a trained model.** Decode one point, append it,
# decode again, with and without the subsequent mask, and see whether the first predicted point
# stays where it was:

# %% tags=["nbval-ignore-output"]
model = runs["PE"][0].model
model.eval()
moves = {}  # label -> largest move of the first prediction
with torch.no_grad():
    model.encode(source_test.to(runs["PE"][0].device))  # where the trainer put the model
    start = model.start.expand(len(source_test), 1, 2)  # (128, 1, 2): the fixed start vector
    first_step = model.decode(start, target_mask=model.trg_masks[:, :1, :1])  # (128, 1, 2)
    inputs = torch.cat([start, first_step], dim=1)  # (128, 2, 2)
    for mask, label in ((model.trg_masks, "subsequent mask"), (None, "no mask")):
        second_step = model.decode(inputs, target_mask=mask)  # (128, 2, 2)
        moved = (second_step[:, 0] - first_step[:, 0]).norm(dim=-1)  # (128,)
        moves[label] = moved.max().item()
        print(f"{label:>15}: appending a point moves the first prediction by up to {moves[label]:.4f}")

# %%
expect(moves["subsequent mask"] < 1e-5, "with the mask, the first prediction stays where it was",
       got=moves["subsequent mask"])
expect(moves["no mask"] > 0.1, "without the mask, appending a point moves the first prediction by more than 0.1",
       got=moves["no mask"])

# %% [markdown]
# Without the mask, every point we append rewrites the points already predicted, and the model
# would be decoding under conditions it never saw in training.

# %% [markdown]
# ## Explore the masks
#
# Switch the causal and padding masks on and off, change the length, and pick a query row.
# The left panel is the mask, the right one the weights of a fixed random sequence attending
# to itself. Things to try: with the causal mask, query 0 always puts all its weight on
# itself; with padding, the padded columns are zero in every row, padded queries included
# (their outputs are computed but ignored downstream); with both, the two masks combine.

# %% tags=["nbval-ignore-output"]
mask_explorer()

# %% [markdown]
# ## Recap
#
# - Dot products of $d_k$-dimensional vectors have variance about $d_k$; dividing by
#   $\sqrt{d_k}$ keeps it near 1, so the softmax does not saturate.
# - The paper multiplies its embeddings by $\sqrt{d_{model}}$ without saying why; for
#   embeddings that start small, the factor makes them comparable in size to the encoding.
# - Scaled dot-product attention is `softmax(q kᵀ / √d_k) v`; `F.scaled_dot_product_attention`
#   computes the same in one call, without keeping the weights. Its fused kernel runs only for
#   4-D inputs $(N, h, L, d_k)$ (on a CPU, 3-D inputs fall back to the step-by-step `math`
#   backend), and `is_causal=True` spares it a materialised causal mask.
# - An attention head learns the projections to queries and keys (and, in the multi-head
#   layer, values); wide multi-head attention runs several full-size heads and mixes them with
#   a linear layer.
# - The encoder attends to the source (self-attention); the decoder attends to its own input
#   (self-attention) and to the encoded source (cross-attention).
# - Training uses teacher forcing on the target shifted right by one; the subsequent mask
#   keeps each position from reading the answer, and keeps greedy predictions stable as
#   points are appended.
# - A source mask `(N, 1, L)` hides padding from every query.
# - Attention is blind to order; sinusoidal positional encoding adds it back. On a task where
#   only the encoder can know the order, the model with positions beat both order-blind
#   models at all five seeds, and the $\times\sqrt{2}$ alone did not. A shift by $k$
#   positions is a rotation of each (sin, cos) pair, and distances depend only on the offset
#   (but do not grow steadily with it: the fast pairs wrap around).
# - The order experiment starts the decoder from a fixed vector on purpose. In the book's
#   setup the decoder's first input is the last source corner, which, with the set of both
#   corners that cross-attention reads, already gives the order away: a comparison there
#   cannot isolate what positions give the encoder (exercise 4 trains that setup).
#
# Next, chapter 03 splits `d_model` between narrow heads.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: call `.check(...)` on your answer to get a verdict; when
# something is off, it says what, without giving the answer away. When you are stuck,
# `.hint()` gives a nudge and `.solution()` prints a worked solution. The cells below run the
# checkers on placeholders, so they fail until you fill them in.
#
# **1. Causal and padding together.** A decoder reading a batch of padded targets needs both
# masks at once: query $i$ may read key $j$ only if $j$ comes no later than $i$ *and* $j$ is a
# real position of its sequence. Write `my_decoder_mask(lengths, size)` returning a bool
# tensor `(N, size, size)`, `True` where a query may attend, for the `N` sequences whose real
# lengths are in `lengths` (a tensor), padded to `size`; without `subsequent_mask`. Before you
# check: what should the row of a padded query look like? (The mask explorer above shows the
# combination.)

# %%
def my_decoder_mask(lengths, size):
    return torch.ones(len(lengths), size, size, dtype=torch.bool)  # replace: every query sees every key


ch02.decoder_mask.check(my_decoder_mask)

# %% [markdown]
# **2. Find the bug.** `ch02.suspect_attention(q, k, v, mask=None)` is a scaled dot-product
# attention with a bug that shows only when there is a mask. Run it on a small example with
# `subsequent_mask` and look at its weights (after `import inspect`,
# `print(inspect.getsource(ch02.suspect_attention))` shows its code). What is wrong, and why does it matter for the output? Then write
# `my_attention(q, k, v, mask=None)`, returning `(context, weights)`, that repairs it.

# %%
def my_attention(q, k, v, mask=None):
    return None, None  # replace with the repaired attention: (context, weights)


ch02.masked_attention.check(my_attention)

# %% [markdown]
# **3. A shift is a rotation.** Write `my_rotation(omega, k)` returning the $2 \times 2$ matrix
# $R$ with $R \, [\sin \omega t, \cos \omega t]^\top = [\sin \omega (t+k), \cos \omega (t+k)]^\top$
# for every $t$. The checker tests it on every pair of an 8-dimensional `sinusoidal_table`.

# %%
def my_rotation(omega, k):
    return torch.eye(2)  # replace with the rotation by the angle omega * k


ch02.shift_rotation.check(my_rotation)

# %% [markdown]
# **4. Where the decoder starts.** The experiment above starts the decoder from a fixed vector.
# In the book's setup, `EncoderDecoderSelfAttn`, it starts from the last source corner. Predict
# first: in that setup, will the order-blind models still stall around 0.5? Then train
# `EncoderDecoderSelfAttn` with `EncoderSelfAttn`/`DecoderSelfAttn` and with
# `EncoderPe`/`DecoderPe` (`max_len=2`) at five seeds each, as the study above did (seeding
# both the weights and the batch order, `sbs.train(20, seed=seed)`, with the test set as the
# validation loader), and compare the median test losses with the study's. Before you train,
# think about what the decoder knows from its first input and, through cross-attention, from
# the encoded source. (If you swap the source corners of a test square, note that the
# decoder's first input changes too.) The checker takes your trained runs, one `StepByStep`
# per seed, and reads their test losses itself.

# %%
book_runs = None  # replace with {"no PE": [trainer per seed], "PE": [trainer per seed]}
ch02.decoder_start.check(book_runs)
