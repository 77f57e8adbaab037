# %% [markdown]
# # 04 · Stacking layers and sublayer wrappers
#
# Chapter 03 gave us multi-head attention. A Transformer does not use it once: it stacks layers,
# each one attention plus a small feed-forward network, and wraps every one of these sublayers in
# a **residual connection** and a **layer norm**. This chapter is about that wrapping and that
# stacking: what each piece does and why a deep stack trains at all.
#
# By the end of this chapter you will be able to:
#
# - explain why residual connections let gradients reach the first layers of a deep stack;
# - write layer normalisation by hand, check it against `nn.LayerNorm`, and say why sequence
#   models use it rather than batch normalisation;
# - write the sublayer wrapper in both placements, **norm-first** and **norm-last**, and check
#   them against `SubLayerWrapper`;
# - build `EncoderLayer`, `DecoderLayer` and stacks of them, and know what each part holds;
# - see why two-dimensional features are projected to a larger `d_model` before any layer norm;
# - measure the gradient that reaches every layer of a 6-layer stack, and read from it why
#   norm-last stacks need a learning-rate warm-up while norm-first stacks train without one.

# %%
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from stepbystep import plots
from stepbystep.data import square_datasets
from stepbystep.gradient_norms import layer_gradient_norms
from stepbystep.models import (
    DecoderLayer,
    EncoderLayer,
    EncoderTransf,
    SubLayerWrapper,
    feed_forward,
    padding_mask,
    subsequent_mask,
)

# %% [markdown]
# ## 1. Residual connections
#
# A stack of $n$ layers computes $x_{l+1} = F_l(x_l)$ for $l = 0, \dots, n-1$. Backpropagation
# multiplies the gradient by every layer's Jacobian $\partial F_l / \partial x_l$ on its way
# down, so if these matrices shrink vectors a little, the gradient reaching the first layer is
# shrunk $n$ times: it *vanishes*.
#
# A **residual connection** adds the layer's input back to its output:
#
# $$x_{l+1} = x_l + F_l(x_l), \qquad \frac{\partial x_{l+1}}{\partial x_l} = I + \frac{\partial F_l}{\partial x_l}.$$
#
# The identity $I$ is a direct path for the gradient, whatever $F_l$ does. The running sum
# $x_l$ is often called the **residual stream**: each layer reads it and *adds* its contribution.
#
# Let us measure it on twenty small blocks (a linear layer and a tanh), with and without the
# skip. We record the gradient of a loss with respect to each block's input.

# %%
torch.manual_seed(0)
blocks = nn.ModuleList([nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(20)])
inputs = torch.randn(32, 16)  # (N, features)


def stream_gradient_norms(blocks, x, residual):
    """The gradient norm of a loss w.r.t. each block's input, with or without the skip."""
    x = x.clone().requires_grad_(True)  # (N, features)
    states = []
    for block in blocks:
        x.retain_grad()
        states.append(x)
        x = x + block(x) if residual else block(x)  # (N, features)
    x.pow(2).mean().backward()
    return [state.grad.norm().item() for state in states]


with_skip = stream_gradient_norms(blocks, inputs, residual=True)
without_skip = stream_gradient_norms(blocks, inputs, residual=False)
print(f"gradient at block 1 / gradient at block 20: with the skip {with_skip[0] / with_skip[-1]:.2f}, "
      f"without it {without_skip[0] / without_skip[-1]:.1e}")

# %%
fig = plots.depth_profile({"x + F(x) (residual)": with_skip, "F(x) (plain)": without_skip},
                          "gradient norm at the block's input", xlabel="block",
                          title="how much gradient reaches each block")

# %% [markdown]
# Without the skip the gradient shrinks by orders of magnitude on its way to the first block,
# so the first blocks barely learn. With the skip it stays within a small factor of the top.
# Every sublayer of the Transformer is wrapped in such a connection.

# %% [markdown]
# ## 2. Layer normalisation, by hand
#
# The residual stream is a sum, and sums drift: their scale changes from layer to layer and
# during training. **Layer normalisation** rescales each token's vector on its own. For one
# token $x \in \mathbb{R}^{d}$ (here $d$ = `d_model`):
#
# $$\mu = \frac{1}{d}\sum_{i=1}^{d} x_i, \qquad \sigma^2 = \frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2,
# \qquad \mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta,$$
#
# where $\gamma, \beta \in \mathbb{R}^{d}$ are learned (a scale and a shift, starting at 1 and 0)
# and $\varepsilon$ (`1e-5`) keeps the division safe. Two details matter: the statistics are over
# the **features of one token**, and the variance divides by $d$, not $d - 1$.

# %%
# NBVAL_CHECK_OUTPUT
def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1): one mean per token
    var = x.var(dim=-1, unbiased=False, keepdim=True)  # (..., 1): divides by d, not d - 1
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta  # (..., d)


torch.manual_seed(1)
tokens = torch.randn(2, 3, 8) * torch.tensor([0.5, 2.0, 5.0]).view(1, 3, 1) + 3  # (N, L, d_model)
torch_norm = nn.LayerNorm(8)
with torch.no_grad():  # give the scale and shift other values than 1 and 0, to check them too
    torch_norm.weight.uniform_(0.5, 1.5)
    torch_norm.bias.uniform_(-0.5, 0.5)
ours = layer_norm(tokens, torch_norm.weight, torch_norm.bias)  # (2, 3, 8)
theirs = torch_norm(tokens)  # (2, 3, 8)
print(f"same as nn.LayerNorm: {torch.allclose(ours, theirs, atol=1e-6)}; "
      f"largest difference below 1e-5: {(ours - theirs).abs().max().item() < 1e-5}")

# %% [markdown]
# Here it is on the three tokens of the first sequence, with $\gamma = 1$ and $\beta = 0$ so
# that we see the normalisation alone: whatever the token's mean and spread, it comes out
# centred with unit standard deviation.

# %%
plain = layer_norm(tokens[0], torch.ones(8), torch.zeros(8))  # (3, 8)
fig = plots.layer_norm_by_hand(tokens[0], plain, F.layer_norm(tokens[0], (8,)))

# %% [markdown]
# ## 3. Why not batch normalisation?
#
# Batch normalisation, the standard in convolutional networks, computes $\mu$ and $\sigma^2$ the
# other way round: **per feature, over the batch** (and, for sequences, over all positions).
# Sequences make that a poor fit:
#
# - batches of sequences are **padded**, and the padding's zeros enter the statistics;
# - sequences differ (a quiet one, a loud one), and each token is normalised with statistics
#   that its batch-mates decide, so the same sentence comes out differently in another batch;
# - at inference batch norm switches to running averages, another source of mismatch.
#
# Here is a padded batch of eight sequences of 8 features: four *quiet* ones (small values)
# and four *loud* ones (large values around 2), of different lengths, padded with zeros.

# %%
generator = torch.Generator().manual_seed(0)
n_seq, max_len, d_model = 8, 6, 8
lengths = torch.tensor([6, 3, 5, 2, 6, 4, 3, 5])  # (N,)
scale = torch.tensor([0.3] * 4 + [3.0] * 4).view(n_seq, 1, 1)  # (N, 1, 1): quiet, then loud
shift = torch.tensor([0.0] * 4 + [2.0] * 4).view(n_seq, 1, 1)  # (N, 1, 1)
real = torch.arange(max_len) < lengths.unsqueeze(1)  # (N, L): True = a real token
batch = (shift + scale * torch.randn(n_seq, max_len, d_model, generator=generator)) * real.unsqueeze(-1)  # (N, L, D)

batch_norm = nn.BatchNorm1d(d_model)  # normalises each feature over the N * L tokens
batch_normed = batch_norm(batch.reshape(-1, d_model)).view_as(batch)  # (N, L, D)
layer_normed = nn.LayerNorm(d_model)(batch)  # (N, L, D)

quiet = real & (torch.arange(n_seq) < 4).unsqueeze(1)  # (N, L)
groups = {"quiet tokens": quiet, "loud tokens": real & ~quiet, "padding": ~real}
print(f"{(~real).sum().item()} of {real.numel()} positions are padding")

# %%
fig = plots.batch_vs_layer_norm(batch, batch_normed, layer_normed, groups)

# %% [markdown]
# After batch norm the quiet tokens are still squeezed together and the loud ones still
# spread out, and the padding sits at a value of its own (the mean it helped compute). After
# layer norm every real token has mean 0 and standard deviation 1, whatever its sequence.
#
# And the batch-mates: normalise the first sequence in a batch of the quiet ones only, then in
# the whole batch. Batch norm gives two different answers; layer norm cannot, since it never
# looks beyond the token.

# %%
def batch_normalise(x):
    return F.batch_norm(x.reshape(-1, d_model), None, None, training=True).view_as(x)  # (N, L, D)


first_alone = batch_normalise(batch[:4])[0]  # (L, D): with the quiet batch-mates only
first_in_all = batch_normalise(batch)[0]  # (L, D): with every sequence
print(f"batch norm, sequence 0 in two batches: largest difference {(first_alone - first_in_all).abs().max():.3f}")
print(f"layer norm, sequence 0 in two batches: largest difference "
      f"{(F.layer_norm(batch[:4], (d_model,))[0] - F.layer_norm(batch, (d_model,))[0]).abs().max():.3f}")

# %% [markdown]
# ## 4. The sublayer wrapper: norm-first and norm-last
#
# Every sublayer $S$ (self-attention, cross-attention or the feed-forward network) is wrapped
# in the same three things: a residual connection, a layer norm and dropout ("drop"). There are
# two ways to place the norm:
#
# $$\text{norm-first:}\quad x + \mathrm{drop}\big(S(\mathrm{LN}(x))\big), \qquad
# \text{norm-last:}\quad \mathrm{LN}\big(x + \mathrm{drop}(S(x))\big).$$
#
# **Norm-last** is the original paper's ("post-norm"): the residual stream itself is normalised
# after every sublayer. **Norm-first** ("pre-norm", the book's default and most modern models')
# normalises only what goes *into* the sublayer; the stream is a plain sum of the input and
# every sublayer's output. In code:

# %%
def norm_first_sublayer(x, sublayer, norm, drop):
    return x + drop(sublayer(norm(x)))  # (N, L, d_model)


def norm_last_sublayer(x, sublayer, norm, drop):
    return norm(x + drop(sublayer(x)))  # (N, L, d_model)


# %% [markdown]
# `SubLayerWrapper(d_model, dropout, norm_first)` holds the norm and the dropout and takes the
# sublayer as an argument. We check both placements on the feed-forward network, reusing the
# wrapper's own norm and dropout (the wrapper and the sublayer in eval mode, so that dropout is
# off and both sides compute the same thing).

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(2)
ffn = feed_forward(d_model=8, ff_units=16, dropout=0.1).eval()
x = torch.randn(2, 3, 8)  # (N, L, d_model)
for norm_first, by_hand in ((True, norm_first_sublayer), (False, norm_last_sublayer)):
    wrapper = SubLayerWrapper(d_model=8, dropout=0.1, norm_first=norm_first).eval()
    expected = wrapper(x, sublayer=ffn)  # (2, 3, 8)
    ours = by_hand(x, ffn, wrapper.norm, wrapper.drop)  # (2, 3, 8)
    print(f"norm_first={norm_first}: same as SubLayerWrapper: {torch.allclose(ours, expected)}")

# %% [markdown]
# ## 5. Encoder and decoder layers
#
# An **encoder layer** is two wrapped sublayers: self-attention (every element of the source
# attends to every other, except padding) and the position-wise feed-forward network (the same
# small network applied to each element). Input and output are `(N, L, d_model)`, so layers can
# be chained.

# %%
torch.manual_seed(3)
encoder_layer = EncoderLayer(n_heads=2, d_model=8, ff_units=16, dropout=0.1).eval()
for name, child in encoder_layer.named_children():
    print(f"{name:16s} {type(child).__name__:22s} {sum(p.numel() for p in child.parameters()):4d} parameters")

source = torch.randn(2, 4, 8)  # (N, L_source, d_model)
source_mask = padding_mask(torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]))  # (N, 1, L_source): last of seq 1 is padding
states = encoder_layer(source, mask=source_mask)  # (N, L_source, d_model)
print("encoder states:", tuple(states.shape))

# %% [markdown]
# A **decoder layer** has three: masked self-attention over the target (the subsequent mask keeps
# each position from seeing later ones), **cross-attention** whose queries come from the target
# and whose keys and values are the encoder's states, and the feed-forward network.
# `init_keys(states)` hands the encoder's states to the cross-attention.

# %%
# NBVAL_CHECK_OUTPUT
decoder_layer = DecoderLayer(n_heads=2, d_model=8, ff_units=16, dropout=0.1).eval()
print([name for name, _ in decoder_layer.named_children()], "with", len(decoder_layer.sublayers), "wrappers")
target = torch.randn(2, 3, 8)  # (N, L_target, d_model)
decoder_layer.init_keys(states)
out = decoder_layer(target, source_mask=source_mask, target_mask=subsequent_mask(3))  # (N, L_target, d_model)
print("decoder output:", tuple(out.shape))
print("cross-attention weights (N, n_heads, L_target, L_source):", tuple(decoder_layer.cross_attn_heads.alphas.shape))

# %% [markdown]
# ## 6. Stacking copies of a layer
#
# `EncoderTransf(encoder_layer, n_layers)` adds positional encoding and then applies
# `n_layers` **deep copies** of the layer you give it (`DecoderTransf` does the same for decoder
# layers). Deep copies start with the *same* weights, but they are separate tensors: training
# moves each one on its own.

# %%
# NBVAL_CHECK_OUTPUT
torch.manual_seed(4)
stack = EncoderTransf(EncoderLayer(n_heads=2, d_model=8, ff_units=16), n_layers=3)
w0, w1 = stack.layers[0].ffn[0].weight, stack.layers[1].ffn[0].weight
print(f"layers 0 and 1 start equal: {torch.equal(w0, w1)}; same tensor: {w0 is w1}")
with torch.no_grad():
    w0.add_(1.0)  # change layer 0 only
print(f"after changing layer 0, layer 1 is unchanged: {torch.equal(w1 + 1.0, w0)}")
print(f"parameters: one layer {sum(p.numel() for p in stack.layers[0].parameters())}, "
      f"the stack {sum(p.numel() for p in stack.parameters())}")

# %% [markdown]
# The stack has a little more than three times one layer's parameters: the extra
# `2 * d_model` belong to a **final layer norm**. A norm-first stack needs it: its sublayers
# only ever *add* to the residual stream, which nobody normalises, so the stack normalises it
# once at the end. A norm-last stack already ends with a norm (its last wrapper's) and gets none.
#
# The residual stream's size, layer after layer, shows the difference. We run a norm-first and
# a norm-last 6-layer stack (same weights, `d_model = 16`) and record the root-mean-square of
# the stream after positional encoding (layer 0) and after every layer.

# %%
def stream_sizes(encoder, x):
    """Root-mean-square of the residual stream: after positional encoding, then after each layer."""
    sizes = []
    with torch.no_grad():
        h = encoder.pe(x)  # (N, L, d_model)
        sizes.append(h.pow(2).mean().sqrt().item())
        for layer in encoder.layers:
            h = layer(h)  # (N, L, d_model)
            sizes.append(h.pow(2).mean().sqrt().item())
        final = encoder.norm(h) if encoder.norm is not None else h  # (N, L, d_model)
    return sizes, final.pow(2).mean().sqrt().item()


x = 0.25 * torch.randn(16, 4, 16)  # (N, L, d_model): small, like projections of 2-D points
sizes = {}
for norm_first in (True, False):
    torch.manual_seed(5)
    encoder = EncoderTransf(EncoderLayer(2, 16, 32, dropout=0.0, norm_first=norm_first), n_layers=6).eval()
    label = "norm-first" if norm_first else "norm-last"
    sizes[label], after_final = stream_sizes(encoder, x)
    print(f"{label}: final norm {encoder.norm is not None}, stream size after the last layer "
          f"{sizes[label][-1]:.2f}, stack output {after_final:.2f}")

# %%
fig = plots.depth_profile(sizes, "RMS of the residual stream", xlabel="layer (0 = input)", first=0, log=False,
                          title="the stream grows in a norm-first stack; norm-last keeps it at 1")

# %% [markdown]
# ## 7. Projecting features to `d_model`, and what layer norm does to two features
#
# The square-corners points have two features. Why not use `d_model = 2` and skip the input
# projection? Layer norm on two numbers $a, b$: their mean is $(a+b)/2$, they sit $\pm(a-b)/2$
# from it, so the variance is $\big((a-b)/2\big)^2$ and
#
# $$\mathrm{LN}(a, b) = \frac{\pm (a-b)/2}{\sqrt{\big((a-b)/2\big)^2 + \varepsilon}} \approx (\pm 1, \mp 1).$$
#
# Unless $a$ and $b$ are nearly equal (within a few times $\sqrt{\varepsilon}$), every point
# becomes $(1, -1)$ or $(-1, 1)$: only the sign of $a - b$ survives.

# %%
train_data, _ = square_datasets()
corners = train_data.tensors[0].reshape(-1, 2)  # (N * 4, 2): every corner of every sequence
normed = nn.LayerNorm(2)(corners).detach()  # (N * 4, 2)
on_corner = ((normed.abs() - 1).abs() < 0.05).all(dim=1)  # (N * 4,): within 0.05 of (±1, ∓1)
gap = (corners[:, 0] - corners[:, 1]).abs()  # (N * 4,): |a - b|
print(f"{len(corners)} points in, all on the line feature 1 = -feature 0: "
      f"{normed.sum(dim=1).abs().max().item() < 1e-4}")
print(f"within 0.05 of (-1, 1): {(on_corner & (normed[:, 0] < 0)).sum().item()}, "
      f"of (1, -1): {(on_corner & (normed[:, 0] > 0)).sum().item()}")
print(f"the other {(~on_corner).sum().item()} have nearly equal features: |a - b| at most {gap[~on_corner].max():.3f}")

# %% [markdown]
# That is why `EncoderDecoderTransf` starts with a linear layer `proj` from `n_features` to
# `d_model` (and ends with `linear`, back to `n_features`). After projecting to six features,
# layer norm keeps the points apart. Below, colours mark the corner each point is near; the
# right panel shows the six normalised features through their two principal components.

# %%
torch.manual_seed(6)
proj = nn.Linear(2, 6)  # n_features -> d_model
projected_normed = nn.LayerNorm(6)(proj(corners)).detach()  # (N * 4, 6)
nearest_corner = (corners[:, 0] > 0).long() * 2 + (corners[:, 1] > 0).long()  # (N * 4,): 0..3
names = ["(-1, -1)", "(-1, 1)", "(1, -1)", "(1, 1)"]
fig = plots.layer_norm_collapse(corners, normed, nearest_corner, projected_normed, label_names=names)

# %% [markdown]
# The corners $(-1, 1)$ and $(1, -1)$ each land on one point, and the corners $(-1, -1)$ and
# $(1, 1)$, whose two features are about equal, are scattered over *both* by the noise.

# %% [markdown]
# ## 8. The experiment: gradient norms by depth, norm-first vs norm-last
#
# Does the placement of the norm matter for training? We take a **6-layer** encoder stack
# (`d_model = 16`, 2 heads, no dropout) that reads the first two corners of a square and
# predicts the last two, and train it on 64 squares with Adam for 50 full-batch steps at a learning rate of
# 0.03. At every step we record the norm of the gradient of each layer's parameters, and the
# loss. `layer_gradient_norms` does exactly this (read it in `stepbystep/gradient_norms.py`); the
# gradient at step 0 is the one at initialisation.
#
# We run it four times: norm-first and norm-last, each with the full learning rate from the
# first step and with a **warm-up**: a learning rate that rises linearly over the first 20
# steps, $\text{lr}_k = 0.03 \cdot \min\!\big(1, (k+1)/20\big)$ for step $k$ (PyTorch's `LambdaLR`).
# Both placements start from the same weights.

# %%
runs = [layer_gradient_norms(n_layers=6, norm_first=norm_first, steps=50, lr=0.03, warmup_steps=warmup)
        for norm_first in (True, False) for warmup in (0, 20)]

# %% [markdown]
# First, the gradients at initialisation, layer by layer:

# %%
# NBVAL_CHECK_OUTPUT
for run in runs[::2]:
    placement = "norm-first" if run.norm_first else "norm-last"
    print(f"{placement:10s} layers 1..6:", "  ".join(f"{g:.2f}" for g in run.norms[0]),
          f"  last / first = {run.norms[0, -1] / run.norms[0, 0]:.2f}")

# %% [markdown]
# In the norm-first stack the gradient is about the same in every layer (slightly larger in the
# first ones); in the norm-last stack it is **largest in the last layers**, next to the output.
# In norm-last, what a lower layer adds reaches the output only through the norm of every
# wrapper above it. Each norm divides by the standard deviation of the sum it normalises, which
# is above 1 once a sublayer's output is added to a normalised stream, so the gradient shrinks a
# little at every wrapper on its way down. In norm-first, the residual path skips every norm.
#
# Now training:

# %%
# NBVAL_IGNORE_OUTPUT
# (50 training steps: the last digits may differ on other hardware; the picture does not)
for run in runs:
    lower = run.norms[-1, :3].max()  # the largest gradient of layers 1-3 at the last step
    print(f"{run.label:28s} loss: start {run.losses[0]:.4f}, end {run.losses[-1]:.4f}; "
          f"gradient of layers 1-3 at the end {lower:.1e}")
targets = square_datasets(n_train=64)[0].tensors[1]  # (64, 2, 2): the experiment's targets
baseline = ((targets - targets.mean(dim=0)) ** 2).mean()
print(f"for comparison, always predicting the average target gives a loss of {baseline:.4f}")

# %%
fig = plots.gradient_norms_by_layer(runs)

# %% [markdown]
# What the runs say (the figure reads column by column; rows: gradients at initialisation,
# gradients per step, loss and learning rate):
#
# - **norm-first** trains with or without warm-up: the gradients stay of similar size across
#   layers, and the loss falls steadily.
# - **norm-last without warm-up** gets stuck: after a few full-size steps the gradient reaching
#   the lower layers collapses by orders of magnitude, and the loss stalls far above the other
#   runs, closer to a constant prediction's than to theirs. Adam's first steps move every
#   parameter by about the learning rate, however small its gradient; in a norm-last stack those
#   large early moves throw the network into a region where it stops learning.
# - **norm-last with warm-up** trains: small first steps let it settle before the learning rate
#   is at full size.
#
# This is one reason the original, norm-last Transformer was trained with a warm-up, and why many
# later models put the norm first. One run per setting is an anecdote, though: the widget below and the exercises let
# you vary depth, and `layer_gradient_norms(seed=...)` other initialisations.

# %% [markdown]
# ## 9. Explore: placement and depth
#
# Toggle the placement and move the depth slider. Each setting trains the stack twice (no
# warm-up, warm-up) and redraws the figure; the runs above are reused, other settings take a few
# seconds the first time. Watch how the norm-last gradients at initialisation grow towards the
# output more as the stack deepens, and from which depth the run without warm-up fails.

# %%
# NBVAL_IGNORE_OUTPUT
from stepbystep.widgets import gradient_norms_explorer

gradient_norms_explorer(runs=runs)

# %% [markdown]
# ## Recap
#
# - A **residual connection** $x + F(x)$ gives the gradient an identity path: deep stacks keep
#   their gradients, and each layer adds to a shared residual stream.
# - **Layer norm** normalises each token over its own features (biased variance, a learned scale
#   and shift); our version matches `nn.LayerNorm`. **Batch norm** shares statistics across the
#   batch, lets padding in and makes a sequence's output depend on its batch-mates.
# - The **sublayer wrapper** is norm-first $x + \mathrm{drop}(S(\mathrm{LN}(x)))$ or norm-last
#   $\mathrm{LN}(x + \mathrm{drop}(S(x)))$: `SubLayerWrapper(d_model, dropout, norm_first)`.
# - `EncoderLayer` wraps self-attention and a feed-forward network; `DecoderLayer` adds
#   cross-attention to the encoder's states (`init_keys`). `EncoderTransf` / `DecoderTransf`
#   stack independent deep copies, plus a final norm when norm-first.
# - Layer norm on two features leaves only $(\pm 1, \mp 1)$: project the features to `d_model` first.
# - In a deep stack, norm-last gradients grow towards the output at initialisation, and without
#   a learning-rate warm-up the stack can get stuck; norm-first trains without one.

# %% [markdown]
# ## Your turn
#
# Each exercise has a checker: `.check(your_answer)` says what is wrong and gives a hint;
# `.solution()` prints a worked solution.
#
# **1. Count a stack's parameters.** Write `stack_parameter_count(n_layers, d_model, ff_units,
# norm_first)` returning the number of parameters of `EncoderTransf(EncoderLayer(n_heads,
# d_model, ff_units, norm_first=norm_first), n_layers)` (the number of heads does not change it:
# why?). The starter below counts only the attention of one layer.

# %%
from stepbystep.exercises import ch04


def stack_parameter_count(n_layers, d_model, ff_units, norm_first):
    return 4 * (d_model * d_model + d_model)  # the attention's four projections: a start


ch04.stack_parameter_count.check(stack_parameter_count)

# %% [markdown]
# **2. Batch norm without the padding.** Write `masked_batch_norm(x, mask)` for a padded batch
# `x` `(N, L, D)` and `mask` `(N, L)` (`True` = real token): normalise each feature with the mean
# and (biased) variance of the **real** tokens only, and leave the padding at zero. The starter
# is plain batch norm, padding included.

# %%
def masked_batch_norm(x, mask, eps=1e-5):
    d = x.shape[-1]
    return F.batch_norm(x.reshape(-1, d), None, None, training=True, eps=eps).view_as(x)  # (N, L, D)


ch04.masked_batch_norm.check(masked_batch_norm)

# %% [markdown]
# **3. Layer norm on two features, in closed form.** Write `layer_norm_pair(a, b)` taking two
# tensors `(n,)` and returning the `(n, 2)` layer norm of the pairs $(a_i, b_i)$ (no scale or
# shift) from the formula of section 7, without calling a norm. Careful with pairs whose two
# values are (almost) equal. The starter returns the signs only.

# %%
def layer_norm_pair(a, b, eps=1e-5):
    return torch.stack([torch.sign(a - b), torch.sign(b - a)], dim=-1)  # (n, 2)


ch04.layer_norm_pair.check(layer_norm_pair)

# %% [markdown]
# **4. Warm-up, longer or shorter.** With `layer_gradient_norms(n_layers=6, norm_first=False,
# warmup_steps=w)`, try a few warm-up lengths `w` (and a few `seed`s). How short can the
# warm-up be before the norm-last stack gets stuck again? Does an 8-layer stack need a longer one?
