# %% [markdown]
# # Chapter 03: multi-head and narrow attention
#
# Chapter 02 gave a model several attention heads by running several full-size attention
# modules side by side. The Transformer does it differently: it cuts each vector into
# pieces and gives every head one piece. This chapter takes that apart, one reshape at a
# time, and then looks at what the heads of a trained model do.
#
# By the end of this chapter you will be able to:
#
# - split `d_model` features into `n_heads` chunks of `d_k` with `view` and `transpose`, say
#   why the order of those two calls matters, and merge the heads back;
# - count the parameters of **wide** heads and **narrow** heads, and explain why only the
#   wide ones grow with the number of heads;
# - read the per-head attention maps of a trained encoder-decoder model;
# - say what **attention dropout** does to a row of weights, and why the stored weights are
#   the ones *before* dropout;
# - show numerically that self-attention without positions is **permutation equivariant**;
# - switch to the **fused** kernel (`store_alphas=False`), check that it computes the same
#   outputs, and measure what keeping the weights costs.

# %%
import copy
import timeit

import torch
from torch import nn
from torch.utils.data import DataLoader

from stepbystep import StepByStep
from stepbystep import plots
from stepbystep.data import square_datasets
from stepbystep.exercises import ch03
from stepbystep.models import (
    DecoderLayer,
    DecoderTransf,
    EncoderDecoderTransf,
    EncoderLayer,
    EncoderTransf,
    MultiHeadAttention,
    MultiHeadedAttention,
)
from stepbystep.widgets import divisors, heads_explorer

torch.set_num_threads(1)  # the tensors here are tiny: one thread beats coordinating several

# %% [markdown]
# ## Wide heads and narrow heads
#
# Write $X$ for a sequence of $L$ vectors of $d_{model}$ features, an $(L, d_{model})$ matrix.
#
# **Wide heads** (chapter 02's `MultiHeadAttention`): each of the $h$ heads has its own query,
# key and value projections, each $d_{model} \to d_{model}$. Head $i$ computes
# $\mathrm{softmax}\big(Q_i K_i^\top / \sqrt{d_{model}}\big)\, V_i$, an $(L, d_{model})$
# context; the $h$ contexts are concatenated into $h \cdot d_{model}$ features and one linear
# layer maps them back to $d_{model}$. Every extra head adds a full-size head.
#
# **Narrow heads** (the Transformer's, our `MultiHeadedAttention`): project once,
# $Q = X W^Q$, $K = X W^K$, $V = X W^V$ with $(d_{model}, d_{model})$ matrices, then cut the
# $d_{model}$ columns into $h$ consecutive chunks of $d_k = d_{model} / h$ columns. Head $i$
# works on its chunk $Q_i, K_i, V_i$, each $(L, d_k)$:
#
# $$
# \mathrm{head}_i = \mathrm{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_k}}\right) V_i ,
# $$
#
# and the $h$ contexts of $d_k$ features sit side by side again as $d_{model}$ features, which
# a last $(d_{model}, d_{model})$ layer mixes. So $h$ must divide $d_{model}$, and the heads
# share the work of one full-size head instead of multiplying it.

# %% [markdown]
# ## Chunking, one reshape at a time
#
# Take one sequence ($N = 1$) of $L = 4$ vectors with $d_{model} = 6$ features, numbered so
# that every feature can be followed, and cut it for $h = 3$ heads.

# %%
# NBVAL_CHECK_OUTPUT
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
# NBVAL_CHECK_OUTPUT
chunked = x.view(1, 4, n_heads, d_k)  # (N, L, h, d_k)
print(f"after view: {tuple(chunked.shape)}")
print(chunked[0, 0])  # position 0: one row per head

# %% [markdown]
# **Step 2, `transpose`:** swap the position and head dimensions, so that each head holds its
# own $(L, d_k)$ matrix. Head 1 has features 2 and 3 of every position:

# %%
# NBVAL_CHECK_OUTPUT
heads = chunked.transpose(1, 2)  # (N, h, L, d_k)
print(f"after transpose: {tuple(heads.shape)}")
print(heads[0, 1])  # head 1: (L, d_k)

# %% [markdown]
# Why not `view` straight to $(N, h, L, d_k)$? The shape would be right, but `view` reads the
# numbers in memory order, position after position, so "head 0" would get the first
# $L \cdot d_k = 8$ numbers: all of position 0 and part of position 1. Every head would see a
# mix of positions and features, and attention would compare the wrong things.

# %%
# NBVAL_CHECK_OUTPUT
wrong = x.view(1, n_heads, 4, d_k)  # (N, h, L, d_k) in shape only
print(wrong[0, 0])  # "head 0": rows 0-2 are position 0, row 3 is part of position 1

# %% [markdown]
# The package's `MultiHeadedAttention.make_chunks` does exactly steps 1 and 2:

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(7)
mha = MultiHeadedAttention(n_heads, d_model, dropout=0.0)
print(f"make_chunks gives the same tensor: {torch.equal(mha.make_chunks(x), heads)}")

# %% [markdown]
# After attention, each head's context is $(N, h, L, d_k)$ and the heads go back side by side:
# transpose again, then `view` as $(N, L, d_{model})$. The transposed tensor is no longer laid
# out in memory in index order (it is not *contiguous*), and `view` refuses to reinterpret it;
# `contiguous()` makes a copy in the right order first. That is `output_function`'s first step.

# %%
# NBVAL_CHECK_OUTPUT
print(f"heads.is_contiguous(): {heads.is_contiguous()}")
merged = heads.transpose(1, 2).contiguous().view(1, 4, d_model)  # (N, L, d_model)
print(f"merging the heads gives x back: {torch.equal(merged, x)}")

# %% [markdown]
# In a real layer the chunks are cut from the projected queries, keys and values, not from
# the input. Here are the projected queries $Q = XW^Q$ of a random sequence, coloured by value,
# and the three $(L, d_k)$ matrices the heads get from them: the same numbers, regrouped.

# %%
sequence = torch.randn(1, 4, d_model, generator=torch.Generator().manual_seed(0))  # (N, L, d_model)
with torch.no_grad():
    queries = mha.linear_query(sequence)  # (N, L, d_model)
fig = plots.head_chunks(queries[0], n_heads, name="Q")

# %% [markdown]
# A chunk of a projection is itself a projection: head $i$'s queries are $X$ times the rows
# $i d_k, \dots, (i+1) d_k - 1$ of `linear_query`'s weight (plus those bias entries), a small
# $d_{model} \to d_k$ layer of its own. So narrow heads are $h$ independent small heads, and
# together their projections have the parameters of one full-size projection.

# %%
# NBVAL_CHECK_OUTPUT
head = 1
rows = slice(head * d_k, (head + 1) * d_k)
with torch.no_grad():
    head_queries = sequence @ mha.linear_query.weight[rows].T + mha.linear_query.bias[rows]  # (N, L, d_k)
    from_chunks = mha.make_chunks(queries)[:, head]  # (N, L, d_k)
print(f"head {head}'s queries from its own small projection: {torch.allclose(head_queries, from_chunks)}")

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
# NBVAL_CHECK_OUTPUT
def count_parameters(module):
    return sum(p.numel() for p in module.parameters())


d_big = 12
head_counts = divisors(d_big)
wide_counts = [count_parameters(MultiHeadAttention(h, d_big)) for h in head_counts]
narrow_counts = [count_parameters(MultiHeadedAttention(h, d_big)) for h in head_counts]
for h, wide, narrow in zip(head_counts, wide_counts, narrow_counts):
    print(f"{h:>2} heads (d_k = {d_big // h:>2}): wide {wide:>5,}, narrow {narrow:>4,}")
print(f"the narrow formula 4(d² + d) gives {4 * (d_big**2 + d_big):,}")

# %%
fig = plots.head_parameter_counts(head_counts, wide_counts, narrow_counts, d_model=d_big)

# %% [markdown]
# With one head the two designs are the same module. With more, narrow heads keep both the
# parameters and the work of one full-size head, while wide heads multiply both. The price of
# narrow heads is that each head compares queries and keys in only $d_k$ dimensions.

# %% [markdown]
# ## The heads of a trained model
#
# To see what heads learn, we train a small encoder-decoder Transformer on the square-corners
# task of chapter 02: given the first two (noisy) corners of a square, predict the other two.
# Its layers are the subject of chapters 04 and 05; here it is enough that every attention
# inside is a `MultiHeadedAttention` with $d_{model} = 6$ and 3 heads ($d_k = 2$). The training
# set has 256 sequences, the test set 128 others drawn from a different seed.

# %%
# NBVAL_CHECK_OUTPUT
train_data, test_data = square_datasets()
train_loader = DataLoader(train_data, batch_size=32, shuffle=True, generator=torch.Generator())
test_loader = DataLoader(test_data, batch_size=len(test_data))
source, target = test_data.tensors  # (128, 2, 2) each
print(f"training sequences {tuple(train_data.tensors[0].shape)}, test sources {tuple(source.shape)}")

# %% [markdown]
# Two encoder and two decoder layers, Xavier initialisation and Adam, as the book's
# chapter 10 does, but for only 25 epochs to keep this notebook quick. The test loss is
# measured on greedy predictions from the sources alone.

# %%
torch.manual_seed(42)
encoder = EncoderTransf(EncoderLayer(n_heads=3, d_model=6, ff_units=10, dropout=0.1), n_layers=2, max_len=2)
decoder = DecoderTransf(DecoderLayer(n_heads=3, d_model=6, ff_units=10, dropout=0.1), n_layers=2, max_len=2)
model = EncoderDecoderTransf(encoder, decoder, input_len=2, target_len=2, n_features=2)
for parameter in model.parameters():
    if parameter.dim() > 1:
        nn.init.xavier_uniform_(parameter)

sbs = StepByStep(model, nn.MSELoss(), torch.optim.Adam(model.parameters(), lr=0.01))
sbs.set_loaders(train_loader, test_loader)
sbs.train(25, progress=False)
print(f"{sbs.count_parameters():,} parameters")
print(f"after {sbs.total_epochs} epochs: training loss {sbs.losses[-1]:.4f}, test loss {sbs.val_losses[-1]:.4f}")

# %%
fig = sbs.plot_losses()

# %% [markdown]
# (The test loss ends below the training loss: training runs with dropout, testing without.
# Chapter 05 looks at this closely.) The predictions for the first few test squares:

# %%
predicted = sbs.predict(source)  # (128, 2, 2), greedy decoding in eval mode
fig = plots.sequence_predictions(source, target, predicted, n=4)

# %% [markdown]
# Every `MultiHeadedAttention` kept the weights of its last call in `alphas`,
# $(N, h, L_q, L_k)$. After `predict`, the encoder's self-attention holds the weights of the
# two source corners attending to each other, and the decoder's cross-attention those of the
# two target positions attending to the two source corners. Here are the first decoder
# layer's cross-attention heads for three test squares (one row per square, one column per
# head); the rows of each map are the target positions t0 and t1 (queries), its columns the
# source corners c0 and c1 (keys):

# %%
n_show = 3
cross_alphas = model.decoder.layers[0].cross_attn_heads.alphas  # (N, h, L_target, L_source)
fig = plots.attention_maps(
    cross_alphas[:n_show].flatten(0, 1),  # (n_show * h, 2, 2)
    titles=[f"#{i}, head {h}" for i in range(n_show) for h in range(3)],
    query_labels=["t0", "t1"], key_labels=["c0", "c1"], n_cols=3,
    suptitle="decoder layer 0, cross-attention",
)

# %% [markdown]
# What should a head read? The target corners are the *opposite* corners of the source ones:
# the first target corner is (up to noise) minus source corner 0, the second is minus source
# corner 1. So target $t$ is best served by the **matching** source corner $t$, the diagonal
# of these maps. The table gives, for every layer and head, the weight each target position
# puts on its matching corner, averaged over the 128 test squares (above 0.5: the head
# favours the matching corner):

# %%
for index, layer in enumerate(model.decoder.layers):
    alphas = layer.cross_attn_heads.alphas  # (N, h, L_target, L_source)
    matching = alphas.diagonal(dim1=-2, dim2=-1).mean(dim=0)  # (h, L_target)
    for h, (first, second) in enumerate(matching.tolist()):
        print(f"decoder layer {index}, head {h}: target 0 -> corner 0: {first:.2f}, "
              f"target 1 -> corner 1: {second:.2f}")

# %% [markdown]
# In the first decoder layer every head favours the matching corner. The second layer's heads
# read a decoder stream that already carries what the first layer found, and they divide the
# work differently. The encoder's self-attention heads, for the same squares:

# %%
encoder_alphas = model.encoder.layers[0].self_attn_heads.alphas  # (N, h, L_source, L_source)
fig = plots.attention_maps(
    encoder_alphas[:n_show].flatten(0, 1),  # (n_show * h, 2, 2)
    titles=[f"#{i}, head {h}" for i in range(n_show) for h in range(3)],
    query_labels=["c0", "c1"], key_labels=["c0", "c1"], n_cols=3,
    suptitle="encoder layer 0, self-attention",
)

# %% [markdown]
# One number sums up how decided a head is: the largest weight in each row, averaged over
# rows and squares. It is 0.5 for a head that spreads its weight evenly over the two keys and
# 1 for one that always puts all of it on a single key. Compare it with the table above: a
# head can be fully decided in every square and still read the matching corner in only some
# of them, when the key it picks depends on the square. The heads do not behave alike, and
# that is the point of having several: each can specialise, and the output layer combines
# what they found.

# %%
def decisiveness(alphas):
    """Each head's largest weight per row, averaged over sequences and rows: (h,)."""
    return alphas.max(dim=-1).values.mean(dim=(0, 2))  # (h,)


for name, layers, attribute in (("encoder self-attention", model.encoder.layers, "self_attn_heads"),
                                ("decoder cross-attention", model.decoder.layers, "cross_attn_heads")):
    for index, layer in enumerate(layers):
        values = decisiveness(getattr(layer, attribute).alphas)
        print(f"{name}, layer {index}: " + ", ".join(f"head {h} {v:.2f}" for h, v in enumerate(values.tolist())))

# %% [markdown]
# ## Attention dropout
#
# `MultiHeadedAttention(..., dropout=p)` applies dropout to the attention weights during
# training: each weight is zeroed with probability $p$, and the survivors are multiplied by
# $1/(1-p)$. So a row no longer sums to 1; it sums to 1 only *on average*, which keeps the
# expected context the same as without dropout. Take a module with $p = 0.3$, still in
# training mode, and one row of its weights:

# %%
# NBVAL_CHECK_OUTPUT
p = 0.3
torch.manual_seed(0)
noisy = MultiHeadedAttention(n_heads=3, d_model=6, dropout=p)  # a new module is in training mode
x5 = 3 * torch.randn(1, 5, 6, generator=torch.Generator().manual_seed(1))  # (N, L, d_model), scaled: uneven weights
noisy.init_keys(x5)
context = noisy(x5)  # (N, L, d_model)
row = noisy.alphas[0, 0, 0]  # (L_k,): head 0, query 0
dropped = torch.stack([noisy.dropout(row) for _ in range(3)])  # (3, L_k): three dropout draws
print(f"stored row:     {[round(w, 2) for w in row.tolist()]}, sum {row.sum():.2f}")
for draw, values in enumerate(dropped):
    print(f"after dropout {draw + 1}: {[round(w, 2) for w in values.tolist()]}, sum {values.sum():.2f}")

# %%
fig = plots.attention_dropout(row, dropped, p)

# %% [markdown]
# On average over many draws, each weight comes back to its value before dropout:

# %%
# NBVAL_CHECK_OUTPUT
many = noisy.dropout(row.expand(20_000, -1))  # (20000, L_k)
print(f"mean of 20,000 draws: {[round(w, 2) for w in many.mean(dim=0).tolist()]}")
print(f"before dropout:       {[round(w, 2) for w in row.tolist()]}")

# %% [markdown]
# Why store the weights *before* dropout in `alphas`? Because they are the model's answer to
# "where does this query look": deterministic, each row summing to 1, and exactly the weights
# used in eval mode, when dropout is off. The dropped weights are a fresh random draw on every
# call. Two calls in training mode give two different outputs, but the same stored weights:

# %%
# NBVAL_CHECK_OUTPUT
first_out, first_alphas = noisy(x5), noisy.alphas
second_out, second_alphas = noisy(x5), noisy.alphas
print(f"same outputs: {torch.allclose(first_out, second_out)}, same stored weights: "
      f"{torch.equal(first_alphas, second_alphas)}")
print(f"every stored row sums to 1: {torch.allclose(first_alphas.sum(-1), torch.ones(1, 3, 5))}")

# %% [markdown]
# ## Permutation equivariance
#
# Attention has no notion of order: every query is compared with every key by a dot product,
# wherever they sit. Shuffle the positions of a sequence and self-attention returns the same
# outputs, shuffled the same way (that is *equivariance*); its weights are shuffled along both
# the query and the key axes.

# %%
# NBVAL_CHECK_OUTPUT
noisy.eval()  # no dropout, so outputs can be compared
order = torch.tensor([3, 0, 4, 1, 2])
with torch.no_grad():
    noisy.init_keys(x5)
    out = noisy(x5)  # (N, L, d_model)
    alphas = noisy.alphas  # (N, h, L, L)
    shuffled = x5[:, order]  # (N, L, d_model)
    noisy.init_keys(shuffled)
    out_shuffled = noisy(shuffled)  # (N, L, d_model)
print(f"outputs shuffled the same way: {torch.allclose(out_shuffled, out[:, order], atol=1e-6)}")
print(f"weights shuffled on both axes: "
      f"{torch.allclose(noisy.alphas, alphas[:, :, order][..., order], atol=1e-6)}")

# %% [markdown]
# Shuffling only the keys (and their values) changes nothing at all for a fixed query: the
# weighted sum does not care in which order its terms come.

# %%
# NBVAL_CHECK_OUTPUT
with torch.no_grad():
    noisy.init_keys(shuffled)
    out_keys_shuffled = noisy(x5)  # original queries, shuffled keys
print(f"same outputs with shuffled keys: {torch.allclose(out_keys_shuffled, out, atol=1e-6)}")

# %% [markdown]
# That is why the Transformer adds positional encodings (chapter 02) before its first layer.
# The trained encoder above has them, and swapping its two source corners no longer just swaps
# its outputs:

# %%
# NBVAL_CHECK_OUTPUT
swap = torch.tensor([1, 0])
with torch.no_grad():
    projected = model.proj(source[:4].to(sbs.device))  # (4, 2, d_model)
    states = model.encoder(projected)  # (4, 2, d_model)
    states_swapped = model.encoder(projected[:, swap])  # (4, 2, d_model)
print(f"with positional encoding, outputs just swapped: {torch.allclose(states_swapped, states[:, swap], atol=1e-4)}")

# %% [markdown]
# ## The fused kernel
#
# Everything so far used the teaching path, which computes the scores, the softmax and the
# weighted sum as separate steps and keeps the weights. PyTorch's
# `F.scaled_dot_product_attention` does the same computation in one fused call and may pick an
# implementation that never builds the whole $(N, h, L_q, L_k)$ weights tensor.
# `store_alphas=False` switches a module to it, and then `alphas` stays `None`. We switch every
# attention module in a copy of the trained model:

# %%
# NBVAL_CHECK_OUTPUT
fused_model = copy.deepcopy(model)
for module in fused_model.modules():
    if isinstance(module, MultiHeadedAttention):
        module.store_alphas = False
with torch.no_grad():
    fused_predicted = fused_model(source.to(sbs.device)).cpu()  # (128, 2, 2), eval mode: greedy decoding
print(f"fused model keeps weights: {fused_model.encoder.layers[0].self_attn_heads.alphas is not None}")

# %% [markdown]
# The predictions agree up to floating-point rounding (the exact difference depends on the
# machine):

# %%
# NBVAL_IGNORE_OUTPUT
difference = (fused_predicted - torch.as_tensor(predicted)).abs().max().item()
print(f"largest difference between the two models' predictions: {difference:.1e}")

# %% [markdown]
# What does keeping the weights cost? Memory first: for a batch of 16 sequences of 128
# positions with $d_{model} = 64$ and 8 heads, the weights tensor alone holds
# $N \cdot h \cdot L^2$ numbers, growing with the square of the sequence length.

# %%
# NBVAL_CHECK_OUTPUT
n_seq, length, d_wide, h_wide = 16, 128, 64, 8
batch = torch.randn(n_seq, length, d_wide, generator=torch.Generator().manual_seed(2))  # (N, L, d_model)
torch.manual_seed(3)
teaching = MultiHeadedAttention(h_wide, d_wide).eval()
fused = MultiHeadedAttention(h_wide, d_wide, store_alphas=False).eval()
fused.load_state_dict(teaching.state_dict())


def self_attend(module):
    with torch.no_grad():
        module.init_keys(batch)
        return module(batch)  # (N, L, d_model)


same = torch.allclose(self_attend(teaching), self_attend(fused), atol=1e-5)
weights_mib = teaching.alphas.numel() * teaching.alphas.element_size() / 2**20
print(f"same outputs: {same}; weights {tuple(teaching.alphas.shape)}: {weights_mib:.1f} MiB")

# %% [markdown]
# And time: the average of a few calls of each path on this machine.

# %%
# NBVAL_IGNORE_OUTPUT
calls = 10
teaching_time = min(timeit.repeat(lambda: self_attend(teaching), number=calls, repeat=3)) / calls
fused_time = min(timeit.repeat(lambda: self_attend(fused), number=calls, repeat=3)) / calls
print(f"teaching path {1e3 * teaching_time:.2f} ms, fused {1e3 * fused_time:.2f} ms per call; "
      f"the teaching path takes {teaching_time / fused_time:.1f}x the fused time")

# %% [markdown]
# The fused path is the one to use for training and inference at scale; the teaching path is
# the one to use when you want to look at the weights. The package lets every module choose.

# %% [markdown]
# ## Try it: the heads explorer
#
# The slider runs over the head counts that divide $d_{model} = 12$. For each, the line below
# it gives $d_k$ and the parameter counts of narrow and wide heads, and the figure shows each
# head's self-attention map for the same random sequence. The module is built from the same
# seed every time, and its projections are $(12, 12)$ whatever the head count, so the
# projected queries and keys never change: only the way they are cut does. With one head, a
# single map scores all 12 features at once; with 12 heads, each map scores one feature.

# %%
# NBVAL_IGNORE_OUTPUT
heads_explorer(d_model=12)

# %% [markdown]
# ## Recap
#
# - Wide heads give each head full-size projections and multiply parameters and work by $h$;
#   narrow heads cut one full-size projection into $h$ chunks of $d_k = d_{model}/h$, so the
#   cost stays that of one head and $h$ must divide $d_{model}$.
# - Chunking is `view(N, L, h, d_k)` then `transpose(1, 2)`; viewing straight to
#   $(N, h, L, d_k)$ mixes positions. Merging is the reverse, with `contiguous()` before `view`.
# - A chunk of a projection is a small $d_{model} \to d_k$ projection: narrow heads are
#   independent heads that share a weight matrix's storage.
# - The heads of a trained model differ: in the square task, the first decoder layer's
#   cross-attention heads favour the source corner that the target mirrors, and heads differ
#   in how decisively they choose.
# - Attention dropout zeroes weights and scales the survivors by $1/(1-p)$; rows sum to 1
#   only on average. `alphas` keeps the weights before dropout: deterministic, rows summing
#   to 1, the ones used in eval mode.
# - Without positional encoding, self-attention is permutation equivariant, and the order of
#   the keys does not matter at all.
# - `store_alphas=False` computes the same outputs with `F.scaled_dot_product_attention` and
#   keeps no weights; keeping them costs memory that grows with $L^2$.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: call `.check(...)` on your answer to get a verdict, or a hint
# when something is off. When you are stuck, `.solution()` prints a worked solution. The
# cells below run the checkers on placeholders, so they fail until you fill them in.
#
# **1. Split into heads.** Write `my_split_heads(x, n_heads)` turning `x` of shape
# $(N, L, d_{model})$ into $(N, h, L, d_k)$, without `make_chunks`.

# %%
def my_split_heads(x, n_heads):
    return x  # replace: return a (N, n_heads, L, d_k) tensor


ch03.split_heads.check(my_split_heads)

# %% [markdown]
# **2. Wide parameters.** Write `my_wide_parameter_count(n_heads, d_model)` returning the
# number of parameters of `MultiHeadAttention(n_heads, d_model)` from a formula, without
# building the module. For which $h$ do wide and narrow heads have the same count?

# %%
def my_wide_parameter_count(n_heads, d_model):
    return 4 * (d_model**2 + d_model)  # replace: this is the narrow count


ch03.wide_parameter_count.check(my_wide_parameter_count)

# %% [markdown]
# **3. Weights from a fused module.** A module with `store_alphas=False` keeps no weights.
# Write `my_fused_weights(mha, query)` that returns them anyway, $(N, h, L_q, L_k)$, for a
# module whose keys were already set with `init_keys` (no mask). Which method of
# `MultiHeadedAttention` does most of the work?

# %%
def my_fused_weights(mha, query):
    return torch.zeros(query.shape[0], mha.n_heads, query.shape[1], mha.proj_key.shape[2])  # replace


ch03.fused_weights.check(my_fused_weights)
