# %% [markdown]
# # Chapter 03: multi-head and narrow attention
#
# Chapter 02 gave a model several attention heads by running several full-size attention
# modules side by side. The Transformer does it differently: it projects each vector once,
# to queries, keys and values of $d_{model}$ features, and gives every head a slice of
# $d_k$ features of each projection. The input itself is not cut: every head still reads all
# $d_{model}$ input features, through its own rows of the projection. This chapter takes that
# apart, one reshape at a time, and then looks at what separate heads make possible.
#
# We follow Daniel Voigt Godoy, *Deep Learning with PyTorch Step-by-Step: A Beginner's Guide*
# (2021), chapter 9 (wide heads) and chapter 10 (narrow heads), "the book" from here on. Narrow
# heads come from Vaswani et al., "Attention Is All You Need" (2017), section 3.2.2.
#
# By the end of this chapter you will be able to:
#
# - tell the book's two multi-head modules apart by their names, `WideMultiHeadAttention` and
#   `NarrowMultiHeadAttention`, and by the layout of their weights;
# - split `d_model` features into `n_heads` chunks of `d_k` with `view` and `transpose`, say
#   why the order of those two calls matters, and merge the heads back;
# - count the parameters of **wide** heads and **narrow** heads, and explain why only the
#   wide ones grow with the number of heads;
# - rebuild each head's attention map from its own chunk, and build two heads that answer
#   two different questions about the same sequence;
# - say what **attention dropout** does to a row of weights, where it comes from, and why
#   this course stores the weights *before* dropout (the book stores them after);
# - show numerically that self-attention without positions is **permutation equivariant**;
# - switch to the **fused** kernel (`store_alphas=False`), check that it computes the same
#   outputs, and measure what the fused kernel saves, in memory and time.

# %%
import math
import timeit

import torch

from stepbystep import plots
from stepbystep.book import MultiHeadAttention, MultiHeadedAttention
from stepbystep.exercises import ch03
from stepbystep.expect import expect, expect_close
from stepbystep.experiments.attention_kernels import SDPA_BACKENDS, attention_ops
from stepbystep.models import (
    NarrowMultiHeadAttention,
    PositionalEncoding,
    WideMultiHeadAttention,
    padding_mask,
    subsequent_mask,
)
from stepbystep.widgets import divisors, heads_explorer

# %% [markdown]
# ## Wide heads and narrow heads
#
# Write $X$ for a sequence of $L$ vectors of $d_{model}$ features, an $(L, d_{model})$ matrix,
# and $h$ for the number of heads.
#
# **Wide heads** (chapter 02's multi-head attention): each of the $h$ heads has its own query,
# key and value projections, each $d_{model} \to d_{model}$. Head $i$ computes
# $\mathrm{softmax}\big(Q_i K_i^\top / \sqrt{d_{model}}\big)\, V_i$, an $(L, d_{model})$
# context; the $h$ contexts are concatenated into $h \cdot d_{model}$ features and one linear
# layer maps them back to $d_{model}$. Every extra head adds a full-size head.
#
# **Narrow heads** (the Transformer's): project once, $Q = X W^Q$, $K = X W^K$, $V = X W^V$
# with $(d_{model}, d_{model})$ matrices, then cut the $d_{model}$ columns into $h$ consecutive
# chunks of $d_k = d_{model} / h$ columns. Head $i$ works on its chunk $Q_i, K_i, V_i$, each
# $(L, d_k)$:
#
# $$
# \mathrm{head}_i = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_k}}\right) V_i ,
# $$
#
# and the $h$ contexts of $d_k$ features sit side by side again as $d_{model}$ features, which
# a last $(d_{model}, d_{model})$ layer mixes. So $h$ must divide $d_{model}$, and the heads
# share the work of one full-size head instead of multiplying it.

# %% [markdown]
# ## Two names, two letters apart
#
# The book calls the wide module `MultiHeadAttention` (chapter 9) and the narrow one
# `MultiHeadedAttention` (chapter 10). The names differ by two letters, both take
# `(n_heads, d_model)` as their first two arguments, and they keep their attention weights
# `alphas` in **different layouts**: heads first for wide heads, $(h, N, L_q, L_k)$, batch first
# for narrow heads, $(N, h, L_q, L_k)$. Mixing them up runs without an error and reads the
# wrong numbers. The package names them by what they are, `WideMultiHeadAttention` and
# `NarrowMultiHeadAttention`, and we use these names from now on; the book's names live in
# `stepbystep.book`, for the book's own code. They also take their keys differently. The wide
# module follows the book's two steps: `init_keys(keys)` keeps the keys, then each call
# `module(query)` attends to them. The narrow module takes everything at each call,
# `module(x, key=None, mask=None)`: queries from `x`, keys and values from `key`, or from `x`
# itself when `key` is `None` (self-attention), and keeps nothing between calls. The book's
# `MultiHeadedAttention` is the narrow module with the book's two steps added.

# %%
print(f"WideMultiHeadAttention is MultiHeadAttention: {WideMultiHeadAttention is MultiHeadAttention}")
print(f"MultiHeadedAttention adds the book's steps to NarrowMultiHeadAttention: "
      f"{issubclass(MultiHeadedAttention, NarrowMultiHeadAttention)}")
pair = torch.randn(2, 4, 6, generator=torch.Generator().manual_seed(0))  # (N, L, d_model) = (2, 4, 6)
wide, narrow = WideMultiHeadAttention(3, 6), NarrowMultiHeadAttention(3, 6)
wide.init_keys(pair)  # the book's two steps: keys first,
wide(pair)  # then the queries
narrow(pair)  # one call: self-attention
for name, module in (("wide", wide), ("narrow", narrow)):
    print(f"{name:>6s} heads: alphas {tuple(module.alphas.shape)}")

# %% [markdown]
# Three heads, a batch of two sequences of four: the wide module's `alphas` starts with the 3
# heads, the narrow one's with the 2 sequences.

# %% [markdown]
# ## Chunking, one reshape at a time
#
# Take one sequence ($N = 1$) of $L = 4$ vectors with $d_{model} = 6$ features, numbered so
# that every feature can be followed, and cut it for $h = 3$ heads. (A real layer cuts the
# projected queries, keys and values, not the input; the numbered input just makes the
# reshapes easy to follow. We come back to the projections below.)

# %%
n_heads, d_model = 3, 6
d_k = d_model // n_heads
x = torch.arange(24.0).view(1, 4, d_model)  # (N, L, d_model) = (1, 4, 6)
print(f"d_k = {d_k}, x: {tuple(x.shape)}")
print(x[0])

# %% [markdown]
# **Step 1, `view`:** cut the last dimension of every vector into $h$ chunks of $d_k$. The
# numbers stay where they are in memory; only the way we index them changes. Position 0 now
# holds three chunks of two features:

# %%
chunked = x.view(1, 4, n_heads, d_k)  # (N, L, h, d_k)
print(f"after view: {tuple(chunked.shape)}")
print(chunked[0, 0])  # position 0: one row per head

# %% [markdown]
# **Step 2, `transpose`:** swap the position and head dimensions, so that each head holds its
# own $(L, d_k)$ matrix. Head 1 has features 2 and 3 of every position:

# %%
heads = chunked.transpose(1, 2)  # (N, h, L, d_k)
print(f"after transpose: {tuple(heads.shape)}")
print(heads[0, 1])  # head 1: (L, d_k)

# %% [markdown]
# Why not `view` straight to $(N, h, L, d_k)$? The shape would be right, but `view` reads the
# numbers in memory order, position after position, so "head 0" would get the first
# $L \cdot d_k = 8$ numbers: all of position 0 and part of position 1. Every head would see a
# mix of positions and features, and attention would compare the wrong things.

# %%
wrong = x.view(1, n_heads, 4, d_k)  # (N, h, L, d_k) in shape only
print(wrong[0, 0])  # "head 0": rows 0-2 are position 0, row 3 is part of position 1

# %% [markdown]
# The package's `NarrowMultiHeadAttention.make_chunks` does exactly steps 1 and 2:

# %%
torch.manual_seed(7)
mha = NarrowMultiHeadAttention(n_heads, d_model, dropout=0.0)
print(f"make_chunks gives the same tensor: {torch.equal(mha.make_chunks(x), heads)}")

# %% [markdown]
# After attention, each head's context is $(N, h, L, d_k)$ and the heads go back side by side:
# transpose again, then `view` as $(N, L, d_{model})$. Whether that `view` works depends on
# how the tensor sits in memory. Transposing our `heads` back simply undoes the first
# transpose, so the numbers are in index order again (the tensor is *contiguous*) and `view`
# merges them without a copy:

# %%
print(f"heads.is_contiguous(): {heads.is_contiguous()}")
print(f"heads.transpose(1, 2).is_contiguous(): {heads.transpose(1, 2).is_contiguous()}")
merged = heads.transpose(1, 2).view(1, 4, d_model)  # (N, L, d_model)
print(f"merging the heads gives x back: {torch.equal(merged, x)}")

# %% [markdown]
# A real context is different: it is computed, `alphas @ values`, and a freshly computed
# $(N, h, L, d_k)$ tensor is laid out head after head. Its transpose $(N, L, h, d_k)$ is only a
# new way of indexing that memory, not in index order, and `view` refuses to reinterpret it.
# Here the context of uniform weights (every position averages its head's values):

# %%
uniform = torch.full((1, n_heads, 4, 4), 0.25)  # (N, h, L_q, L_k): every row averages all 4 positions
context = uniform @ heads  # (N, h, L, d_k), a new tensor in memory order
swapped = context.transpose(1, 2)  # (N, L, h, d_k)
print(f"context.is_contiguous(): {context.is_contiguous()}, after transpose: {swapped.is_contiguous()}")
try:
    swapped.view(1, 4, d_model)
    view_error = None
except RuntimeError as error:
    view_error = str(error)
print(f"view raised an error: {view_error is not None}")
expect(view_error is not None and "view size is not compatible" in view_error,
       "view refuses the transposed context: its size and stride do not allow it", got=view_error)

# %% [markdown]
# `contiguous()` copies the numbers into the new index order, after which `view` works;
# `reshape` does the same in one call (it copies only when it has to). Both give the heads
# side by side, head 0's $d_k$ features first, at every position. `output_function` merges
# with `flatten(2)`, which, like `reshape`, copies when it has to, and then applies the last
# linear layer.

# %%
merged_context = swapped.contiguous().view(1, 4, d_model)  # (N, L, d_model)
expect(torch.equal(merged_context, swapped.reshape(1, 4, d_model)), "contiguous().view and reshape merge alike",
       got="different tensors")
expect(torch.equal(merged_context[0, :, :d_k], context[0, 0]), "the first d_k features of every position are head 0's",
       got=merged_context[0, :, :d_k])

# %% [markdown]
# In a real layer the chunks are cut from the projected queries, keys and values, not from
# the input. Here are the projected queries $Q = XW^Q$ of a random sequence (colour and number
# give each value), and the three $(L, d_k)$ matrices the heads get from them: the same numbers, regrouped.

# %%
sequence = torch.randn(1, 4, d_model, generator=torch.Generator().manual_seed(0))  # (N, L, d_model)
with torch.no_grad():
    queries = mha.linear_query(sequence)  # (N, L, d_model)
fig = plots.head_chunks(queries[0], n_heads, name="Q")

# %% [markdown]
# A chunk of a projection is itself a projection: head $i$'s queries are $X$ times the rows
# $i d_k, \dots, (i+1) d_k - 1$ of `linear_query`'s weight (plus those bias entries), a small
# $d_{model} \to d_k$ layer of its own. So narrow heads are $h$ independent small heads, and
# together their projections have the parameters of one full-size projection. Head 1's
# queries, computed with its own small layer, are the chunk (up to float rounding):

# %%
head = 1
rows = slice(head * d_k, (head + 1) * d_k)
with torch.no_grad():
    head_queries = sequence @ mha.linear_query.weight[rows].T + mha.linear_query.bias[rows]  # (N, L, d_k)
    from_chunks = mha.make_chunks(queries)[:, head]  # (N, L, d_k)
expect_close(head_queries, from_chunks, "head 1's own small layer gives its chunk of the queries", atol=1e-6, rtol=1e-5)

# %% [markdown]
# ## Parameter counts
#
# A linear layer $d_{in} \to d_{out}$ has $d_{in} d_{out}$ weights and $d_{out}$ biases.
# Narrow heads have four $(d_{model}, d_{model})$ layers (queries, keys, values, output)
# whatever $h$ is: $4(d_{model}^2 + d_{model})$ parameters. Wide heads have three full-size
# layers per head, and an output layer that reads $h \cdot d_{model}$ features, so their count
# grows linearly with $h$ (exercise 2 asks for the formula). Counting the parameters of the
# modules themselves, for every head count that divides $d_{model} = 12$:

# %%
def count_parameters(module):
    return sum(p.numel() for p in module.parameters())


d_big = 12
head_counts = divisors(d_big)
wide_counts = [count_parameters(WideMultiHeadAttention(h, d_big)) for h in head_counts]
narrow_counts = [count_parameters(NarrowMultiHeadAttention(h, d_big)) for h in head_counts]
for h, wide, narrow in zip(head_counts, wide_counts, narrow_counts):
    print(f"{h:>2} heads (d_k = {d_big // h:>2}): wide {wide:>5,}, narrow {narrow:>4,}")
print(f"the narrow formula 4(d² + d) gives {4 * (d_big**2 + d_big):,}")

# %% [markdown]
# The three claims, on these counts: the narrow count is the formula for every $h$,
# one wide head is the same module size as narrow heads, and each extra wide head adds the
# same number of parameters.

# %%
per_head = [(wide - wide_counts[0]) / (h - 1) for h, wide in zip(head_counts[1:], wide_counts[1:])]
expect(all(count == 4 * (d_big**2 + d_big) for count in narrow_counts), "the narrow count is 4(d² + d) for every h",
       got=narrow_counts)
expect(wide_counts[0] == narrow_counts[0], "one wide head is the same size as narrow heads",
       got=(wide_counts[0], narrow_counts[0]))
expect(len(set(per_head)) == 1 and per_head[0] > 0, "each extra wide head adds the same number of parameters",
       got=per_head)

# %%
fig = plots.head_parameter_counts(head_counts, wide_counts, narrow_counts, d_model=d_big)

# %% [markdown]
# With one head the two designs are the same size. The head counts sit at their values on the
# axis, so the wide heads' straight line is their linear growth. With more heads, narrow heads
# keep both the parameters and the work of one full-size head, while wide heads multiply both.
# The price of narrow heads is that each head compares queries and keys in only $d_k$
# dimensions: a head's $(L, L)$ score matrix $Q_i K_i^\top$ is a product through $d_k$ columns, so its rank is at
# most $d_k$ (Bhojanapalli et al., "Low-Rank Bottleneck in Multi-head Attention Models", 2020,
# study this limit). At $d_k = 1$ each score is a product of two numbers, $q_i k_j$, so every
# query attends most to the key with the largest $k_j$ (if $q_i > 0$) or the smallest (if
# $q_i < 0$). The explorer at the end of the chapter shows each head's rank.

# %% [markdown]
# ## Each head, its own map
#
# Head $i$'s weights are $\mathrm{softmax}\big(Q_i K_i^\top / \sqrt{d_k}\big)$, computed from
# its chunks alone. The narrow module stores all of them in `alphas`, $(N, h, L_q, L_k)$. We
# rebuild every head's map by hand, from the rows of the projections that belong to it, and
# compare with what the module stored for the random sequence above (self-attention):

# %%
maps = []
with torch.no_grad():
    mha(sequence)
    for head in range(n_heads):
        rows = slice(head * d_k, (head + 1) * d_k)
        q = sequence @ mha.linear_query.weight[rows].T + mha.linear_query.bias[rows]  # (N, L, d_k)
        k = sequence @ mha.linear_key.weight[rows].T + mha.linear_key.bias[rows]  # (N, L, d_k)
        maps.append(torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1))  # (N, L, L)
by_hand = torch.stack(maps, dim=1)  # (N, h, L, L)
expect_close(mha.alphas, by_hand, "every head's stored map is the softmax of its own chunks' scores",
             atol=1e-6, rtol=1e-5)

# %% [markdown]
# Since each head scores its own slice of the features, two heads can look at the same
# sequence for different reasons. To see it without training, we build such heads by hand.
# Four tokens of $d_{model} = 4$ features: features 0-1 say **what** a token is (type A or B,
# one-hot), features 2-3 say **where** it is, as a point on a circle of 4 positions
# ($\cos$ and $\sin$ of $p\pi/2$ for position $p$; chapter 02's table pairs them the other way
# round, $\sin$ first, which changes nothing here).

# %%
what = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])  # (L, 2): types A, B, A, B
where = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])  # (L, 2): (cos, sin) of p·π/2
tokens = torch.cat([what, where], dim=-1).unsqueeze(0)  # (N, L, d_model) = (1, 4, 4)
print(tokens[0])

# %% [markdown]
# Now two narrow heads of $d_k = 2$ with hand-set projections (no biases; the values and the
# output layer are identities). Head 0's chunk of the queries and keys is the **what**
# features: its score is large for keys of the query's type. Head 1's chunk is the **where**
# features, with the query's point turned back by a quarter circle: its score is largest for
# the key one position **before** the query (position 0's predecessor, on the circle, is 3).
# The queries are multiplied by $c = 8$, which makes both softmaxes sharp.

# %%
def hand_built_heads(n_heads, sharpness=8.0):
    """Narrow attention over (what, where) tokens: queries ask 'same type?' and 'one step back?'."""
    module = NarrowMultiHeadAttention(n_heads, 4, dropout=0.0).eval()
    turn_back = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])  # (cos θ, sin θ) -> (cos(θ - π/2), sin(θ - π/2))
    query_weight = torch.block_diag(torch.eye(2), turn_back)  # (4, 4): what as is, where turned back
    with torch.no_grad():
        module.linear_query.weight.copy_(sharpness * query_weight)
        for layer in (module.linear_key, module.linear_value, module.linear_out):
            layer.weight.copy_(torch.eye(4))
        for layer in (module.linear_query, module.linear_key, module.linear_value, module.linear_out):
            layer.bias.zero_()
    return module


two_heads = hand_built_heads(n_heads=2)
with torch.no_grad():
    two_heads(tokens)
fig = plots.attention_maps(two_heads.alphas[0], titles=["head 0: same type?", "head 1: one step back?"],
                           query_labels=["A0", "B1", "A2", "B3"], key_labels=["A0", "B1", "A2", "B3"], n_cols=2)

# %% [markdown]
# Head 0 splits each row evenly between the two tokens of the query's type; head 1 puts
# nearly all of a row on the previous position. Each map is the ideal one within 0.01 (the
# softmax never reaches exactly 0 or 1):

# %%
same_type = 0.5 * (what @ what.T)  # (L, L): 1/2 on each key of the query's type
one_back = torch.eye(4).roll(shifts=-1, dims=1)  # (L, L): row p has its 1 at column p - 1 (mod 4)
expect_close(two_heads.alphas[0, 0], same_type, "head 0 gives half a row to each token of the query's type", atol=0.01)
expect_close(two_heads.alphas[0, 1], one_back, "head 1 puts the whole row on the previous position", atol=0.01)

# %% [markdown]
# With the **same** projections and a single head ($d_k = 4$), the two questions can no longer
# be asked separately: the one score adds both answers, and for every query three keys tie,
# the two of its type and the one before it (of the other type), each with a third of the weight.

# %%
one_head = hand_built_heads(n_heads=1)
with torch.no_grad():
    one_head(tokens)
ties = (1 - torch.eye(4).roll(shifts=1, dims=1)) / 3  # (L, L): 1/3 everywhere but one step ahead
expect_close(one_head.alphas[0, 0], ties, "one head: three keys tie, with a third of the weight each", atol=0.01)
fig = plots.attention_maps(one_head.alphas[0], titles=["one head: both questions at once"],
                           query_labels=["A0", "B1", "A2", "B3"], key_labels=["A0", "B1", "A2", "B3"])

# %% [markdown]
# A trained model finds roles for its heads by itself, and they are rarely this clean.
# Chapter 05 trains the book's encoder-decoder Transformer and reads its heads' maps.

# %% [markdown]
# ## Attention dropout
#
# `NarrowMultiHeadAttention(..., dropout=p)` applies dropout to the attention weights during
# training, as the book's module does. This dropout is not in Vaswani et al. (2017): the
# paper's section 5.4 applies dropout only to each sublayer's output and to the sums of
# embeddings and positional encodings. Dropout on the attention weights is found in
# implementations: the authors' tensor2tensor library has an `attention_dropout` setting, and
# Rush's "The Annotated Transformer" (2018) and the book drop the weights right after the
# softmax. Each weight is zeroed with probability $p$, and the
# survivors are multiplied by $1/(1-p)$. So a row no longer sums to 1; it sums to 1 only *on
# average*, which keeps the expected context the same as without dropout. Take a module with
# $p = 0.3$, still in training mode, and one row of its weights (seeded, so the draws repeat; another PyTorch build may draw others):

# %% tags=["nbval-ignore-output"]
p = 0.3
torch.manual_seed(0)
noisy = NarrowMultiHeadAttention(n_heads=3, d_model=6, dropout=p)  # a new module is in training mode
x5 = 3 * torch.randn(1, 5, 6, generator=torch.Generator().manual_seed(1))  # (N, L, d_model), scaled: uneven weights
context = noisy(x5)  # (N, L, d_model)
row = noisy.alphas[0, 0, 0]  # (L_k,): head 0, query 0
dropped = torch.stack([noisy.dropout(row) for _ in range(3)])  # (3, L_k): three dropout draws
print(f"stored row:     {[round(w, 2) for w in row.tolist()]}, sum {row.sum():.2f}")
for draw, values in enumerate(dropped):
    print(f"after dropout {draw + 1}: {[round(w, 2) for w in values.tolist()]}, sum {values.sum():.2f}")

# %% [markdown]
# What the printout shows: the stored row sums to 1, and every weight after dropout is either
# 0 or the stored weight times $1/(1-p)$.

# %%
survived = dropped != 0  # (3, L_k)
expect_close(row.sum(), 1.0, "the stored row sums to 1", atol=1e-6)
expect_close(dropped[survived], (row / (1 - p)).expand_as(dropped)[survived],
             "every weight that survives dropout is the stored one times 1/(1 - p)", atol=1e-6, rtol=1e-5)

# %%
fig = plots.attention_dropout(row, dropped, p)

# %% [markdown]
# Over many draws, a fraction $p$ of the weights is zeroed, and each weight comes back on
# average to its value before dropout. With 20,000 draws the average of a weight $w$ has a
# standard deviation of about $0.005\,w$, so a tolerance of 0.03 leaves a wide margin:

# %% tags=["nbval-ignore-output"]
many = noisy.dropout(row.expand(20_000, -1))  # (20000, L_k)
zeroed = (many == 0).float().mean().item()
print(f"zeroed: {zeroed:.3f} of the weights (p = {p})")
print(f"mean of 20,000 draws: {[round(w, 3) for w in many.mean(dim=0).tolist()]}")
print(f"before dropout:       {[round(w, 3) for w in row.tolist()]}")

# %%
expect(abs(zeroed - p) < 0.01, "dropout zeroes a share p of the weights (± 0.01)", got=zeroed)
expect_close(many.mean(dim=0), row, "on average over 20,000 draws, the weights are the stored ones (± 0.03)", atol=0.03)

# %% [markdown]
# Why store the weights *before* dropout in `alphas`? Here the course departs from the book:
# the book's `MultiHeadedAttention.attn` applies dropout first and then stores the dropped
# weights, so in training mode its stored rows do not sum to 1 (in eval mode the two agree).
# We keep the weights before dropout because they are the model's answer to
# "where does this query look": deterministic, each row summing to 1, and exactly the weights
# used in eval mode, when dropout is off. The dropped weights are a fresh random draw on every
# call. Two calls in training mode give two different outputs, but the same stored weights:

# %%
first_out, first_alphas = noisy(x5), noisy.alphas
second_out, second_alphas = noisy(x5), noisy.alphas
expect(not torch.allclose(first_out, second_out), "two calls in training mode give different outputs",
       got="the same outputs")
expect_close(first_alphas, second_alphas, "and the same stored weights", atol=1e-6)
expect_close(first_alphas.sum(-1), 1.0, "each row of the stored weights sums to 1", atol=1e-6)

# %% [markdown]
# ## Permutation equivariance
#
# Attention has no notion of order: every query is compared with every key by a dot product,
# wherever they sit. Shuffle the positions of a sequence and self-attention returns the same
# outputs, shuffled the same way (that is *equivariance*); its weights are shuffled along both
# the query and the key axes, up to float rounding (the sums run in another order):

# %%
noisy.eval()  # no dropout, so outputs can be compared
order = torch.tensor([3, 0, 4, 1, 2])


def self_attention(module, x):
    with torch.no_grad():
        return module(x)  # (N, L, d_model)


out = self_attention(noisy, x5)  # (N, L, d_model)
alphas = noisy.alphas  # (N, h, L, L)
shuffled = x5[:, order]  # (N, L, d_model)
out_shuffled = self_attention(noisy, shuffled)  # (N, L, d_model)
expect_close(out_shuffled, out[:, order], "shuffled inputs give the same outputs, shuffled", atol=1e-5, rtol=1e-5)
expect_close(noisy.alphas, alphas[:, :, order][..., order], "and the weights shuffled along both axes",
             atol=1e-6, rtol=1e-5)

# %% [markdown]
# Shuffling only the keys (and their values) changes nothing at all for a fixed query: the
# weighted sum does not care in which order its terms come.

# %%
with torch.no_grad():
    out_keys_shuffled = noisy(x5, key=shuffled)  # original queries, shuffled keys
expect_close(out_keys_shuffled, out, "shuffling the keys alone changes no output", atol=1e-5, rtol=1e-5)

# %% [markdown]
# That is why the Transformer adds positional encodings (chapter 02) before its first layer.
# Shuffle the tokens, then add the sinusoidal encodings: position $p$ gets encoding $p$,
# whatever token now sits there. The outputs are no longer the old ones shuffled: they move by
# more than 0.1, far beyond rounding. (Adding the encodings first and then shuffling would move
# each encoding with its token, and the outputs would again be the old ones, shuffled.)

# %% tags=["nbval-ignore-output"]
positions = PositionalEncoding(max_len=5, d_model=6, scale_input=False)
out_positioned = self_attention(noisy, positions(x5))  # (N, L, d_model)
out_positioned_shuffled = self_attention(noisy, positions(shuffled))  # (N, L, d_model)
change = (out_positioned_shuffled - out_positioned[:, order]).abs().max().item()
print(f"with positions, largest change from a plain shuffle: {change:.2f}")

# %%
expect(change > 0.1, "with positional encoding, shuffling moves the outputs by more than 0.1", got=change)

# %% [markdown]
# ## The fused kernel
#
# Everything so far used the teaching path, which computes the scores, the softmax and the
# weighted sum as separate steps and keeps the weights. PyTorch's
# `F.scaled_dot_product_attention` does the same computation in one fused call and may pick an
# implementation that never builds the whole $(N, h, L_q, L_k)$ weights tensor.
# `store_alphas=False` switches a module to it, and then `alphas` stays `None`. Both paths
# run one function, `attend(q, k, v, mask, ..., store_alphas)`, so a mask means the same on
# both.
#
# Take a batch of 16 sequences of 128 positions with $d_{model} = 64$ and 8 heads, and two
# modules with the same weights, one on each path. The weights tensor of the teaching path
# holds $N \cdot h \cdot L^2$ numbers, growing with the square of the sequence length:

# %%
n_seq, length, d_wide, h_wide = 16, 128, 64, 8
batch = torch.randn(n_seq, length, d_wide, generator=torch.Generator().manual_seed(2))  # (N, L, d_model)
torch.manual_seed(3)
teaching = NarrowMultiHeadAttention(h_wide, d_wide).eval()
fused = NarrowMultiHeadAttention(h_wide, d_wide, store_alphas=False).eval()
fused.load_state_dict(teaching.state_dict())


def self_attend(module, mask=None):
    with torch.no_grad():
        return module(batch, mask=mask)  # (N, L, d_model)


teaching_out, fused_out = self_attend(teaching), self_attend(fused)
weights_mib = teaching.alphas.numel() * teaching.alphas.element_size() / 2**20
print(f"teaching path keeps alphas {tuple(teaching.alphas.shape)}: {weights_mib:.1f} MiB; "
      f"fused path keeps {fused.alphas}")

# %% [markdown]
# The two paths agree up to float rounding, with no mask, with the causal mask of chapter 02,
# and with a padding mask (random lengths from 1 to 128):

# %%
lengths = torch.randint(1, length + 1, (n_seq,), generator=torch.Generator().manual_seed(4))  # (N,)
real = torch.arange(length) < lengths.unsqueeze(1)  # (N, L): True = a real token
masks = {"no mask": None, "the causal mask": subsequent_mask(length), "a padding mask": padding_mask(real.long())}
for name, mask in masks.items():
    expect_close(self_attend(fused, mask), self_attend(teaching, mask), f"the fused and teaching paths agree, {name}",
                 atol=1e-5, rtol=1e-5)

# %% [markdown]
# Which backend does the fused path run? Chapter 02 found that on a CPU the fused kernel takes
# only 4-D inputs, and that 3-D ones fall back to the step-by-step `math` backend. The module
# hands the function its chunks, $(N, h, L, d_k)$, so it gets the fused kernel:

# %% tags=["nbval-ignore-output"]
fused_ops = attention_ops(lambda: self_attend(fused, masks["the causal mask"]), SDPA_BACKENDS + ("aten::_softmax",))
print(f"the fused path, under the causal mask, runs: {', '.join(op.removeprefix('aten::') for op in fused_ops)}")

# %%
expect(fused_ops == ["aten::_scaled_dot_product_flash_attention_for_cpu"],
       "the fused path runs the FlashAttention kernel for the CPU, and no softmax of its own", got=fused_ops)

# %% [markdown]
# And time: for each path, the best of three averages of 10 calls, on this machine.

# %% tags=["nbval-ignore-output"]
calls = 10
teaching_time = min(timeit.repeat(lambda: self_attend(teaching), number=calls, repeat=3)) / calls
fused_time = min(timeit.repeat(lambda: self_attend(fused), number=calls, repeat=3)) / calls
print(f"teaching path {1e3 * teaching_time:.2f} ms, fused {1e3 * fused_time:.2f} ms per call; "
      f"the teaching path takes {teaching_time / fused_time:.1f}x the fused time")

# %% [markdown]
# How much the fused kernel saves depends on the machine, the sizes and the PyTorch release, so
# compare the two times on yours. The fused path is the one to use for training and inference
# at scale; the teaching path is the one to use when you want to look at the weights. The
# package lets every module choose.

# %% [markdown]
# ## Try it: the heads explorer
#
# The slider runs over the head counts that divide $d_{model} = 12$. For each, the line below
# it gives $d_k$ and the parameter counts of narrow and wide heads, and the figure, titled with
# the head count, $d_k$ and the score ranks, shows each head's self-attention map for the same
# random sequence. The module is built from the same
# seed every time, and its projections are $(12, 12)$ whatever the head count, so the
# projected queries and keys never change: only the way they are cut does. With one head, a
# single map scores all 12 features at once; with 12 heads, each map scores one feature.
# The label also gives the rank of each head's $4 \times 4$ score matrix: 4 while
# $d_k \ge 4$, then $d_k$, down to 1 at 12 heads. The module is untrained, so the maps show
# how the cut changes, not what trained heads look at.

# %% tags=["nbval-ignore-output"]
heads_explorer(d_model=12)

# %% [markdown]
# ## Recap
#
# - `WideMultiHeadAttention` (the book's `MultiHeadAttention`) gives each head full-size
#   projections and multiplies parameters and work by $h$; its `alphas` is $(h, N, L_q, L_k)$.
#   `NarrowMultiHeadAttention` cuts one full-size projection into $h$ chunks of
#   $d_k = d_{model}/h$, so the cost stays that of one head and $h$ must divide $d_{model}$;
#   its `alphas` is $(N, h, L_q, L_k)$. It takes its keys at each call (`key=`, or `x` itself);
#   the book's `MultiHeadedAttention` adds the book's two steps to it.
# - Chunking is `view(N, L, h, d_k)` then `transpose(1, 2)`; viewing straight to
#   $(N, h, L, d_k)$ mixes positions. Merging is the reverse; a computed context is no longer
#   contiguous after its transpose, so it needs `contiguous()` before `view`, or `reshape`.
# - A chunk of a projection is a small $d_{model} \to d_k$ projection: narrow heads are
#   independent heads that share a weight matrix's storage, and each head's map is the softmax
#   of its own chunk's scores.
# - Separate heads can ask separate questions (same type? one step back?); one head with the
#   same projections adds the scores and cannot keep the questions apart.
# - Attention dropout zeroes weights and scales the survivors by $1/(1-p)$; rows sum to 1
#   only on average. It comes from implementations (tensor2tensor, the Annotated Transformer,
#   the book), not from the paper. `alphas` keeps the weights before dropout (the book keeps
#   them after): deterministic, rows summing to 1, the ones used in eval mode.
# - Without positional encoding, self-attention is permutation equivariant, and the order of
#   the keys does not matter at all.
# - `store_alphas=False` computes the same outputs with `F.scaled_dot_product_attention` and
#   keeps no weights; the module hands it 4-D chunks $(N, h, L, d_k)$, so on a CPU its fused
#   kernel runs. Keeping the weights costs memory that grows with $L^2$.

# %% [markdown]
# ## The narrow module's methods
#
# `NarrowMultiHeadAttention` splits the work into methods, each a step of this chapter:
#
# - `make_chunks(x)` is the split of this chapter, $(N, L, d_{model}) \to (N, h, L, d_k)$;
# - `project_keys(key)` projects the keys and values and cuts them into chunks,
#   $(N, h, L_k, d_k)$ each;
# - `forward(x, key=None, mask=None)` projects and chunks the queries, hands queries, keys,
#   values and mask to `attend`, which scales the scores, masks them, takes the softmax
#   (keeping `alphas`), applies dropout and takes the weighted sum of the values, then calls
#   `output_function`, which merges the heads and applies the last linear layer, `linear_out`.
#
# The book's `MultiHeadedAttention` adds its own steps: `init_keys(key)` keeps the keys for the
# calls that follow, `proj_key` and `proj_value` are their chunks, and `score_function(query)`
# returns every head's scaled scores $Q_i K_i^\top / \sqrt{d_k}$, $(N, h, L_q, L_k)$.

# %%
print([name for name in ("make_chunks", "project_keys", "output_function") if callable(getattr(mha, name))])
print([name for name in ("init_keys", "score_function")
       if hasattr(MultiHeadedAttention, name) and not hasattr(NarrowMultiHeadAttention, name)])

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: `.check(your_answer)` says whether the answer is right and, if
# not, what is wrong with it. When you are stuck, `.hint()` gives a nudge and `.solution()`
# prints a worked solution. The cells below run the checkers on placeholders, so they fail
# until you fill them in.
#
# **1. Split a fused projection.** Many implementations (PyTorch's `nn.MultiheadAttention`
# among them) compute the queries, keys and values with *one* linear layer of
# $3 d_{model}$ outputs, whose weight is the three projections' weights stacked: its output,
# $(N, L, 3 d_{model})$, holds all $d_{model}$ query features of a position, then its key
# features, then its value features. Write `my_split_qkv(qkv, n_heads)` returning `(q, k, v)`,
# each $(N, h, L, d_k)$, the chunks that `make_chunks` would give from three separate
# projections. Predict first: if you `view` the output for the heads first, as
# $(N, L, h, 3 d_k)$, and then cut every head's $3 d_k$ features into three, what does head 0's
# "query" hold? And which of your three results are contiguous? Check both predictions, then
# make the checker pass.

# %%
def my_split_qkv(qkv, n_heads):
    return qkv, qkv, qkv  # replace: three (N, n_heads, L, d_k) tensors, the queries', keys' and values'


ch03.split_qkv.check(my_split_qkv)

# %% [markdown]
# **2. Wide parameters.** Write `my_wide_parameter_count(n_heads, d_model)` returning the
# number of parameters of `WideMultiHeadAttention(n_heads, d_model)` from a formula, without
# building the module. Then predict, before computing it: at $d_{model} = 512$, how does what
# one extra wide head adds compare with the whole parameter count of a narrow module?

# %%
def my_wide_parameter_count(n_heads, d_model):
    return 4 * (d_model**2 + d_model)  # replace: this is the narrow count


ch03.wide_parameter_count.check(my_wide_parameter_count)

# %% [markdown]
# **3. Weights from a fused module.** A module with `store_alphas=False` keeps no weights.
# Write `my_fused_weights(mha, query, key, mask)` that returns them anyway, $(N, h, L_q, L_k)$,
# for a `NarrowMultiHeadAttention` in eval mode: the weights that `mha(query, key, mask)` would
# use. `mask` is `None`, a padding mask
# $(N, 1, L_k)$ or the causal mask $(1, L_q, L_k)$, `True` where a query may attend. Which of
# the methods listed above does most of the work? The mask has no dimension for the heads:
# where does it need one, and at which step must it act so that every row still sums to 1?

# %%
def my_fused_weights(mha, query, key, mask):
    return torch.zeros(1)  # replace: return a (N, n_heads, L_q, L_k) tensor


ch03.fused_weights.check(my_fused_weights)
