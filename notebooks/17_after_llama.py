# %% [markdown]
# # Chapter 17: after Llama: mixtures of experts, latent and sliding-window attention, attention sinks and QK-norm
#
# Chapter 12 ended with Llama's block: RMSNorm, SwiGLU, no biases, rotary positions and
# grouped-query attention. In 2023 most open models followed it. The models a learner meets
# since 2024 keep that block and change four things in it:
#
# - a **mixture of experts** in place of the one feed-forward network: many networks, each token
#   sent to a few (Mixtral, DeepSeek-V3, Qwen3's MoE models);
# - **multi-head latent attention**, which caches one small latent vector per token instead of
#   every head's keys and values (DeepSeek-V2 and V3);
# - **sliding-window attention**, where a query reads only the most recent tokens, so the cache
#   stops growing (Mistral 7B in every layer; Gemma 2 in every other layer, Gemma 3 in five of
#   six), and **attention
#   sinks**, the first tokens kept readable beside the window (StreamingLLM);
# - **QK-norm**, an RMSNorm on the queries and keys before the rotation (OLMo 2, Qwen3, Gemma 3).
#
# Each is an option of the course's `DecoderConfig`, so the model of chapters 09 and 12 takes
# them. For each, this chapter writes the idea out in a few lines of tensor code, shows that the
# package's tested module computes the same, and loads models that use it from `transformers`
# (Qwen3, OLMo 2, Mistral, DeepSeek-V3, Mixtral, Qwen3-MoE; each built from a configuration with
# random weights: nothing is downloaded), with the same logits and the same greedy tokens.
#
# By the end of this chapter you will be able to:
#
# - say what each of the four changes does to the block, the parameters and the KV cache, and
#   compute the cache of a published configuration from its config file;
# - write **QK-norm** before the rotation, the **window mask with sinks**, the **latent
#   projection** and what the cache holds, and **top-k routing with renormalisation** and the
#   balancing loss, each in a few lines, and check them against the package;
# - load Qwen3, OLMo 2, Mistral, DeepSeek-V3 (dense), Mixtral and Qwen3-MoE into the course's
#   model;
# - read four experiments over seeds, each against a control: QK-norm at a high learning
#   rate, a window with and without a sink far past the window, what the latent's rank costs,
#   and a mixture of experts against dense blocks of its compute and of its parameters.

# %%
import math

import torch
import torch.nn.functional as F

from stepbystep import plots
from stepbystep.exercises import ch17
from stepbystep.experiments.after_llama.experts import (SUB_TASKS, experts_claims, experts_live, experts_table,
                                                        load_experts_study, routing_pairs_table, task_distance)
from stepbystep.experiments.after_llama.latent import (bytes_table, latent_claims, latent_live, latent_table,
                                                       load_latent_study)
from stepbystep.experiments.after_llama.qk_norm import PROBE_EVERY, load_qk_study, qk_claims, qk_live, qk_table
from stepbystep.experiments.after_llama.window import load_window_study, window_claims, window_live, window_table
from stepbystep.expect import expect, expect_close
from stepbystep.models import (
    PUBLISHED_CONFIGS,
    DecoderConfig,
    LatentAttention,
    MixtureOfExperts,
    NarrowMultiHeadAttention,
    RotaryEmbedding,
    from_transformers,
    generate,
    kv_cache_bytes,
    latent_cache_bytes,
    parameter_counts,
    published_attention,
    published_cache_bytes,
    subsequent_mask,
    window_mask,
)
from stepbystep.widgets import memory_explorer

# %% [markdown]
# ## The blocks after Llama
#
# | feature | first models | what it changes |
# |---|---|---|
# | mixture of experts | Shazeer et al. 2017 (between LSTM layers); Switch Transformer 2021; in open decoders Mixtral 8x7B (2024), DeepSeek-V2/V3, Qwen3-MoE | the feed-forward network becomes E networks and a router; each token uses k of them: more parameters at the same compute per token; the cache does not change |
# | multi-head latent attention | DeepSeek-V2 (2024), DeepSeek-V3 | keys and values are rebuilt from a cached latent of rank r per token, plus one shared rotated key: the cache holds r + d_rope numbers per layer and token, whatever the number of heads |
# | sliding window | Sparse Transformer 2019, Longformer 2020 (local attention); Mistral 7B (2023, every layer); Gemma 2 (every other layer), Gemma 3 (five layers in six) | each query reads only its w most recent tokens: a windowed layer's cache holds at most w tokens |
# | attention sinks | StreamingLLM (Xiao et al. 2023), on models trained without them | the first few tokens stay readable beside the window |
# | QK-norm | Henry et al. 2020 (ℓ2 norm, a learned scale in place of $1/\sqrt{d_k}$); ViT-22B (2023, LayerNorm); OLMo 2 (2024), Qwen3 and Gemma 3 (2025) | an RMSNorm on the queries and keys before the rotation bounds the attention scores; the cache does not change |
#
# `PUBLISHED_CONFIGS` keeps, for a few released models, the fields of their `config.json` files
# that the cache depends on, named as the files name them; `published_cache_bytes` computes the
# cache from them with chapter 12's `kv_cache_bytes`, or with `latent_cache_bytes` for latent
# attention. (For DeepSeek-V3 and Mistral 7B v0.1, `transformers`' own `DeepseekV3Config()` and
# `MistralConfig()` defaults give the same attention sizes; its `Qwen3Config()` and
# `Gemma3TextConfig()` defaults are not Qwen3 8B's or any Gemma 3's.) In bfloat16:

# %%
for name, fields in PUBLISHED_CONFIGS.items():
    print(f"{name}: {fields}")
print()
print(f"{'model':<16} {'attention':<14} {'window':>7} {'per token':>10} {'cache at its context':>22}")
for name in PUBLISHED_CONFIGS:
    a = published_attention(name)
    window = "-" if a["window"] is None else f"{a['window']:,}"
    per_token = published_cache_bytes(name, 1)
    full = published_cache_bytes(name, a["context"])
    print(f"{name:<16} {a['kind']:<14} {window:>7} {per_token / 1024:>6,.1f} KiB {full / 2 ** 30:>8,.2f} GiB "
          f"of {a['context']:,}")

# %%
expect(published_cache_bytes("DeepSeek-V3", 1) == 61 * (512 + 64) * 2 == 70_272,
       "DeepSeek-V3 caches 61 layers x (512 + 64) numbers x 2 bytes = 70,272 bytes per token")
expect(published_cache_bytes("Mistral 7B v0.1", 4096) == published_cache_bytes("Mistral 7B v0.1", 32768) == 2 ** 29,
       "Mistral 7B v0.1's cache stops growing at its window: 512 MiB at 4,096 tokens and at 32,768")
expect(published_cache_bytes("Gemma 3 4B", 131072) < kv_cache_bytes(34, 4, 256, 131072, dtype=torch.bfloat16) / 6,
       "Gemma 3 4B's windows in 29 of 34 layers cut its cache at 131,072 tokens to less than a sixth")
expect(published_cache_bytes("Qwen3 8B", 1) == published_cache_bytes("Mixtral 8x7B", 1) * 9 // 8,
       "Qwen3 8B (36 layers) caches 9/8 of Mixtral's or Llama 3 8B's 128 KiB per token (32 layers)")

# %% [markdown]
# Three things to read in it. DeepSeek-V3 has 128 query heads, yet caches about half of what
# Llama 3 8B does per token: 576 numbers per layer, where grouped-query attention with 8 KV heads
# of 128 caches 2,048. Mistral 7B's cache is Llama 3 8B's per token, but stops at its window of
# 4,096 tokens. Gemma 3 4B keeps a window of 1,024 in five layers of every six, so at 131,072
# tokens its cache is mostly the five global layers'. A mixture of experts (Mixtral) and QK-norm
# (Qwen3) change nothing in the cache; what they change is the parameters and the training.
#
# The sections below take the four changes in the order a layer meets them: QK-norm and the
# window inside the attention, then latent attention, then the mixture of experts after it.
#
# ## QK-norm: normalised queries and keys, before the rotation
#
# Henry et al. ("Query-Key Normalization for Transformers", 2020) first normalised the queries
# and keys, for translation: each head's query and key are scaled to unit ℓ2 length, and a
# learned scale takes the place of $1/\sqrt{d_k}$.
# Dehghani et al. ("Scaling Vision Transformers to 22 Billion Parameters", 2023) report that
# the training loss of their large vision Transformers diverged after a few thousand steps,
# with attention logits that grew very large and attention weights close to one-hot; they applied
# LayerNorm to the queries and keys before the dot product, which removed the divergence.
# Wortsman et al. ("Small-scale proxies for large-scale Transformer training instabilities",
# 2023) reproduced the same growth of the attention logits in small models trained at high
# learning rates, and found that this qk-layernorm mitigated it. OLMo 2 (Team OLMo, "2 OLMo 2
# Furious", 2024) normalises the whole query and key projections with RMSNorm, for training
# stability; Qwen3 (Yang et al., "Qwen3 Technical Report", 2025) and Gemma 3 (Gemma Team,
# "Gemma 3 Technical Report", 2025) normalise each head's. Qwen3 places the norm after the split
# into heads and before the rotary embedding. Written out:

# %%
torch.manual_seed(0)
d_model, n_heads, n_kv_heads, d_k, L = 32, 4, 2, 8, 6
attention = NarrowMultiHeadAttention(n_heads, d_model, dropout=0.0, n_kv_heads=n_kv_heads, bias=False,
                                     qk_norm="head", rotary=RotaryEmbedding(d_k, max_len=16, pairing="rotate_half"))
with torch.no_grad():  # gains away from 1, so that they count
    attention.q_norm.weight.uniform_(0.5, 1.5)
    attention.k_norm.weight.uniform_(0.5, 1.5)
x = torch.randn(2, L, d_model)  # (N, L, d_model)


def rms_norm(t, gain, eps=1e-6):
    return t / torch.sqrt(t.pow(2).mean(dim=-1, keepdim=True) + eps) * gain  # over the last dimension


positions = torch.arange(L)
q = attention.linear_query(x).view(2, L, n_heads, d_k).transpose(1, 2)  # (N, h, L, d_k)
k = attention.linear_key(x).view(2, L, n_kv_heads, d_k).transpose(1, 2)  # (N, h_kv, L, d_k)
v = attention.linear_value(x).view(2, L, n_kv_heads, d_k).transpose(1, 2)  # (N, h_kv, L, d_k)
q = attention.rotary.rotate(rms_norm(q, attention.q_norm.weight), positions)  # normed per head, then turned
k = attention.rotary.rotate(rms_norm(k, attention.k_norm.weight), positions)  # the keys alike (and cached so)
k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)  # (N, h, L, d_k): each KV head serves 2
scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (N, h, L, L)
scores = scores.masked_fill(~subsequent_mask(L).unsqueeze(1), float("-inf"))
by_hand = attention.linear_out((F.softmax(scores, dim=-1) @ v).transpose(1, 2).flatten(2))  # (N, L, d_model)
expect_close(attention(x, mask=subsequent_mask(L)), by_hand,
             "NarrowMultiHeadAttention(qk_norm='head') equals QK-norm then RoPE written by hand (± 1e-5)", atol=1e-5)

# %% [markdown]
# Why it bounds the scores: with a gain of 1, RMSNorm makes every query and key vector's root
# mean square 1, so its length is $\sqrt{d_k}$, and a rotation does not change a length. A
# score $q \cdot k / \sqrt{d_k}$ is then at most $\sqrt{d_k}$ in size, whatever the weights
# (with gains, at most $\sqrt{d_k}$ times the largest product of a query gain and a key gain).
# Without the norm, a score grows with the square of the projections' scale. Scaling the query
# and key weights by 100, as a long run at a high learning rate might:

# %%
plain = NarrowMultiHeadAttention(n_heads, d_model, dropout=0.0, n_kv_heads=n_kv_heads, bias=False)
normed = NarrowMultiHeadAttention(n_heads, d_model, dropout=0.0, n_kv_heads=n_kv_heads, bias=False, qk_norm="head")
normed.load_state_dict(plain.state_dict(), strict=False)  # the same projections; the norms' gains are 1


def largest_score(module, scale):
    with torch.no_grad():
        q = module.normed_chunks(module.linear_query(x) * scale, module.q_norm)  # (N, h, L, d_k)
        k = module.normed_chunks(module.linear_key(x) * scale, module.k_norm)  # (N, h_kv, L, d_k)
        return (q @ k.repeat_interleave(2, dim=1).transpose(-2, -1) / math.sqrt(d_k)).abs().max().item()


# %% tags=["nbval-ignore-output"]
for scale in (1, 100):
    print(f"weights x {scale:>3}: largest |score| without QK-norm {largest_score(plain, scale):10.2f}, "
          f"with it {largest_score(normed, scale):.2f}")

# %%
expect(largest_score(plain, 100) > 5000 * largest_score(plain, 1) and largest_score(plain, 1) > 0.1,
       "without QK-norm, weights 100 times larger give scores more than 5,000 times larger")
expect(max(largest_score(normed, s) for s in (1, 100)) <= math.sqrt(d_k) + 1e-4,
       f"with QK-norm (gains of 1), no score exceeds √d_k = {math.sqrt(d_k):.2f}, at either scale")

# %% [markdown]
# With the weights at their usual scale QK-norm can raise the largest score as well as lower it:
# it sets the scale of every query and key (a length of $\sqrt{d_k}$), whatever it was. (The
# module's `normed_chunks` splits the projection into heads and applies the norm to each.)
# The norm comes before the rotation. Would the other order give the same scores? Exercise 4
# asks you to predict it. The keys are normalised before they are cached, so the cache holds
# what it held before: QK-norm costs no memory at inference.
#
# `from_transformers` loads a Qwen3 (QK-norm per head) and an OLMo 2 (over all heads at once,
# and its norms after each sublayer, `norm_output`), each built by `transformers` from a small
# configuration with random weights. Their norms' gains start at exactly 1; we draw them at
# random too, so that a misplaced norm would show:

# %%
import transformers  # noqa: E402  (needed from here on)

transformers.logging.set_verbosity_error()
VOCAB = 97
SMALL = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=64, initializer_range=0.3, bos_token_id=None, eos_token_id=None,
             pad_token_id=None, tie_word_embeddings=False)


def built(model_class, config_class, **settings):
    """A transformers model of SMALL's sizes and ``settings``, random weights, norms' gains in [0.5, 1.5]."""
    torch.manual_seed(0)
    hf = model_class(config_class(**{**SMALL, **settings})).eval()
    with torch.no_grad():
        for module in hf.modules():
            if type(module).__name__.endswith("RMSNorm"):
                module.weight.uniform_(0.5, 1.5)
    return hf


ids = torch.randint(0, VOCAB, (3, 40), generator=torch.Generator().manual_seed(1))  # (3, 40)
prompt = ids[:2, :6]  # (2, 6)


def same_as_transformers(name, hf, new_tokens=30):
    """The converted model's logits (± 1e-4) and greedy tokens, with and without the cache, are hf's."""
    ours = from_transformers(hf)
    with torch.no_grad():
        mine, theirs = ours(ids), hf(ids).logits  # (3, 40, V) each
    expect_close(mine, theirs, f"{name}: the course's logits equal transformers' (± 1e-4)", atol=1e-4)
    reference = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new_tokens,
                            do_sample=False)
    expect(torch.equal(generate(ours, prompt, new_tokens, temperature=0), reference) and torch.equal(
        generate(ours, prompt, new_tokens, temperature=0, use_cache=False), reference),
        f"{name}: {new_tokens} greedy tokens equal transformers', with the cache and without it")
    return ours


qwen3 = same_as_transformers("Qwen3", built(transformers.Qwen3ForCausalLM, transformers.Qwen3Config,
                                            intermediate_size=88, head_dim=8))
olmo2 = same_as_transformers("OLMo 2", built(transformers.Olmo2ForCausalLM, transformers.Olmo2Config,
                                             intermediate_size=88))
print({key: value for key, value in qwen3.config.changes().items() if key in ("qk_norm", "norm_first", "norm_output")})
print({key: value for key, value in olmo2.config.changes().items() if key in ("qk_norm", "norm_first", "norm_output")})

# %% [markdown]
# ### An experiment: QK-norm at a high learning rate
#
# Does the bound matter when a model trains? The study trains today's block (2 layers,
# $d_{model} = 32$, 4 heads) on chapter 10's lag-copy task (repeat the token 3 back; 16 tokens,
# streams of 32) with and without QK-norm, with Adam at three constant learning rates and no
# warm-up. Wortsman et al. saw the logits grow at high learning rates in a recipe with a warm-up
# of 5,000 steps and a cosine decay, and report that a longer warm-up makes the final loss less
# sensitive to the rate; a constant rate with no warm-up applies the high rate from the first
# step, so a short run meets the same regime. The rates are 0.1 (high), 0.03 (middle)
# and 0.003 (low: the control, where both should train, so that a failure at the high rate is
# the rate's, not the block's). Each of 10 seeds fixes the initial weights and the batches; every
# 10 steps the study records the largest attention logit $q \cdot k / \sqrt{d_k}$ that any head
# gives a key it may read. First one seed, live, at the high rate for 120 steps:

# %% tags=["nbval-ignore-output"]
live = qk_live()  # {"plain": run, "QK-norm": run}: seed 0, lr 0.1
for name, run in live.items():
    print(f"{name:>8}: largest logit every {PROBE_EVERY} steps {[round(v) for v in run['logits']]}; "
          f"final loss {run['final_loss']:.3f}, accuracy {run['accuracy']:.3f}")

# %%
expect(max(live["plain"]["logits"]) > 10 * max(live["QK-norm"]["logits"]), "in the live run, the plain block's "
       "largest logit grows to more than 10 times QK-norm's", got={k: max(r["logits"]) for k, r in live.items()})

# %% [markdown]
# The whole study, 10 seeds at each rate, takes longer than this page should: it was run once
# with `python -m stepbystep.experiments.after_llama.qk_norm`, at one thread, and stored with
# the package.
# Each cell below reads median (lowest-highest) over the seeds; a spike is the largest rise of
# the loss above the lowest loss reached before it; the accuracy is on 256 fresh streams (a
# diverged run counts 0):

# %% tags=["nbval-ignore-output"]
study = load_qk_study()
print(f"seeds {study['seeds']}, {study['steps']} steps:\n{qk_table(study)}")

# %%
for claim in qk_claims(study):
    expect(claim.holds, claim.claim, claim.got)
twin = qk_claims(load_qk_study(default_threads=True))  # the same seeds at PyTorch's default thread count
expect(all(claim.holds for claim in twin), "run again at PyTorch's default thread count, the study keeps every "
       "claim above", [claim.claim for claim in twin if not claim.holds])

# %% [markdown]
# At the high rate, the plain block's largest logit ended above every QK-norm seed's in every
# seed, its median more than 20 times QK-norm's. Some plain seeds failed the task (accuracy
# below 0.6; 4 of these 10, the first five holding three of them, so a count over five seeds
# says little), its worst seed far below every QK-norm seed, while every QK-norm seed learned it
# (above 0.9). How many plain seeds fail varies; that the logits run away without QK-norm does
# not. At the middle rate the plain loss rose by more than 0.5 above its best in some seeds,
# QK-norm's in none. At the low rate both
# blocks learned the task in every seed, the plain block's largest logit under a tenth of its
# high-rate value: the failure belongs to the learning rate, and QK-norm is what removes it.
# This is Wortsman et al.'s small-scale proxy in miniature, on one
# task and one size; it says nothing of the size at which the growth appears in a large model.
#
# ## Sliding windows and attention sinks
#
# Child et al. ("Generating Long Sequences with Sparse Transformers", 2019) restricted each
# query to a subset of the keys, with sparse factorisations of the attention matrix that
# reduce its cost from $O(n^2)$ to $O(n\sqrt{n})$; Beltagy et al. ("Longformer: The
# Long-Document Transformer", 2020) combine a local window around each token with global
# attention on a few chosen tokens, an attention whose cost grows linearly with the sequence.
# Mistral 7B (Jiang et al., "Mistral 7B", 2023) uses a causal window of $W = 4096$ in every layer:
# the paper writes that query $i$ reads keys $i - W$ to $i$; `transformers` and this course count the
# query itself among the $W$, keys $i - W + 1$ to $i$. Information still travels further, one window per
# layer, and its authors give about 131K tokens as the theoretical attention span of the last
# of its 32 layers. Its cache is a **rolling buffer** of $W$ positions, token $i$ stored at
# $i \bmod W$; they report that on sequences of 32k tokens this reduces the cache's memory by
# 8 times without impacting the model's quality.
#
# Xiao et al. ("Efficient Streaming Language Models with Attention Sinks", 2023) found that a
# plain window fails once the text is longer than the cache, when the first tokens are evicted:
# models put large attention weights on the initial tokens whatever they say, an **attention
# sink**. Keeping the keys and values of the first 4 tokens beside the window (StreamingLLM)
# let Llama 2, MPT, Falcon and Pythia model texts of up to 4 million tokens and more, stably,
# without retraining. The mask, written out for 10 tokens, a window of 4 and 1 sink:

# %%
length, window, sinks = 10, 4, 1
i = torch.arange(length)
distance = i.unsqueeze(1) - i.unsqueeze(0)  # (length, length): query i minus key j
by_hand = (distance >= 0) & ((distance < window) | (i.unsqueeze(0) < sinks))  # (length, length): causal, window or sink
for row in by_hand.int().tolist():
    print(" ".join(".1"[v] for v in row))
expect(torch.equal(by_hand, window_mask(i, i, window, sinks)[0] & subsequent_mask(length)[0]),
       "window_mask with the causal mask equals the mask written by hand")
expect(by_hand.sum(dim=1).max().item() == window + sinks,
       f"no query reads more than window + sinks = {window + sinks} keys")

# %% [markdown]
# The cache needs only what some later query may read: the sinks and the last `window` tokens.
# A windowed `DecoderConfig` (`sliding_window`, `attention_sinks`) builds a model whose cache
# holds at most that many per layer. We feed one stream token by token, 40 tokens into a window
# of 6 with 2 sinks, and measure what the cache holds after each, against the same model's
# logits over the whole stream at once:

# %%
torch.manual_seed(0)
windowed = DecoderConfig.llama(VOCAB, d_model=32, n_heads=4, n_layers=2, n_kv_heads=2, max_len=64, ff_units=88,
                               sliding_window=6, attention_sinks=2).build().eval()
stream = ids[:1]  # (1, 40)
cache, held, steps = windowed.new_cache(), [], []
with torch.no_grad():
    for t in range(stream.shape[1]):
        steps.append(windowed(stream[:, t:t + 1], cache=cache))  # (1, 1, V): one token at a time
        held.append(cache.layers[0].keys.shape[2])
    whole = windowed(stream)  # (1, 40, V): every token at once, with the window mask
held_bytes = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
print(f"tokens held per layer after each token: {held}")
print(f"bytes held after 40 tokens: {held_bytes:,}; kv_cache_bytes(window=6, sinks=2): "
      f"{kv_cache_bytes(2, 2, 8, 40, window=6, sinks=2):,}; without a window: {kv_cache_bytes(2, 2, 8, 40):,}")

# %%
expect(max(held) == 8 and held[-1] == 8, "the cache never holds more than sinks + window = 8 tokens per layer")
expect(held_bytes == kv_cache_bytes(2, 2, 8, 40, window=6, sinks=2), "kv_cache_bytes(window=6, sinks=2) counts "
       "the bytes the cache holds")
expect_close(torch.cat(steps, dim=1), whole, "token by token through the bounded cache, the logits equal the "
             "whole stream's (± 1e-5)", atol=1e-5)

# %% [markdown]
# Positions stay the stream's: a sink keeps position 0 however far the stream goes, as in
# Mistral's cache, whose keys are rotated before they are stored. (StreamingLLM numbers the
# tokens by their place in the cache instead; the course does not.) A Mistral with a window of 6,
# generating 30 tokens after a prompt of 6, five windows' worth:

# %%
mistral = same_as_transformers("Mistral, window 6", built(transformers.MistralForCausalLM,
                                                          transformers.MistralConfig, intermediate_size=88,
                                                          sliding_window=6))
print(f"sliding_window={mistral.config.sliding_window}, cache: {mistral.new_cache()}")

# %% [markdown]
# ### An experiment: a window with and without a sink, far past the window
#
# What does a window lose, and what does a sink give back? Two tasks on streams of 96 random
# tokens: the lag-copy task (repeat the token 3 back), which needs only recent context, and
# **first-token recall** (at every position, repeat the stream's first token), which needs the
# start. Today's block (2 layers, $d_{model} = 32$) is trained on each, for 3 seeds, with full
# attention (the control: is the task learnable?), with a window of 8, and with the same window
# and 1 sink. Each trained model then reads fresh streams token by token through its cache, as
# generation does; the accuracy counts positions 15 and later, where two stacked windows of 8 can
# no longer reach the first token (a query reads 7 tokens back per layer). The cache's held tokens
# are counted after every token. One seed of the recall task, live, for 60 steps:

# %% tags=["nbval-ignore-output"]
live_window = window_live()  # {variant: run}: first-token recall, seed 0
for name, run in live_window.items():
    print(f"{name:>17}: accuracy at positions 15+ {run['far_accuracy']:.2f}; the cache holds at most "
          f"{max(run['held'])} tokens per layer over 96")

# %%
expect(max(live_window["window 8"]["held"]) == 8 and max(live_window["window 8 + 1 sink"]["held"]) == 9,
       "live: the windowed caches hold at most 8 tokens per layer, 9 with the sink, over 96")

# %% [markdown]
# The study, 3 seeds of every variant on both tasks for 200 steps (`python -m
# stepbystep.experiments.after_llama.window`, at one thread, stored), median (lowest-highest)
# accuracy:

# %% tags=["nbval-ignore-output"]
study = load_window_study()
print(window_table(study))

# %%
for claim in window_claims(study):
    expect(claim.holds, claim.claim, claim.got)
twin = window_claims(load_window_study(default_threads=True))  # the same seeds at PyTorch's default thread count
expect(all(claim.holds for claim in twin), "run again at PyTorch's default thread count, the study keeps every "
       "claim above", [claim.claim for claim in twin if not claim.holds])

# %% [markdown]
# With the window alone, every seed is near chance at recalling the first token past the
# windows' reach (below 3 times the 1-in-15 of a guess), although full attention learns the
# task: the window dropped what the task needs. With one sink every seed recalls it (above 0.9).
# On the recent task the window alone is enough in every seed, and the sink moves the median
# accuracy by less than 0.05. The windowed caches hold min(t, 8) tokens after t tokens, 9 with
# the sink, the full cache all 96, and their bytes are `kv_cache_bytes(..., window=, sinks=)`'s.
# These models were trained with their window and sink. StreamingLLM's finding is about a
# different setting, models trained with full attention and run past their cache; this
# experiment shows only that a token kept beside the window can carry what the window drops.
#
# ## Multi-head latent attention
#
# DeepSeek-V2 (DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts
# Language Model", 2024) compresses each token's keys and values into one **latent** vector
# $c = W_{DKV}\,x$ of rank $r$ (512 in DeepSeek-V2 and V3), from which each head's key and value
# are rebuilt: $k_i = W_{UK,i}\,c$, $v_i = W_{UV,i}\,c$. The cache keeps $c$, not the keys and
# values. Rotary positions cannot go through $c$: a rotation between $W_{UK}$ and the query would
# depend on the position, and $W_{UK}$ could no longer be folded into the queries' projection (what
# lets an implementation score the latents directly). So a small **decoupled** part carries them:
# each query gets a rotated part of its own, and every head shares one rotated key of $d_R$ numbers
# (64), which is cached too. DeepSeek-V2's authors report that their MLA performed better than
# multi-head attention in their comparisons while caching far less, and that DeepSeek-V2,
# against their earlier DeepSeek 67B, reduced the KV cache by 93.3%. Written out, with the
# package's `LatentAttention` weights:

# %%
torch.manual_seed(0)
rank, d_rope, d_nope, d_v = 8, 4, 8, 8
mla = LatentAttention(n_heads, d_model, kv_latent_dim=rank, rope_head_dim=d_rope, nope_head_dim=d_nope,
                      v_head_dim=d_v, dropout=0.0, rotary=RotaryEmbedding(d_rope, max_len=16, pairing="rotate_half"))
with torch.no_grad():
    mla.kv_norm.weight.uniform_(0.5, 1.5)
latent, k_rope = mla.kv_down(x).split([rank, d_rope], dim=-1)  # (N, L, r), (N, L, d_R)
latent = rms_norm(latent, mla.kv_norm.weight)  # (N, L, r): what the cache keeps...
k_rope = mla.rotary.rotate(k_rope.unsqueeze(1), positions)  # (N, 1, L, d_R): ...and this, one per token
kv = mla.kv_up(latent).view(2, L, n_heads, d_nope + d_v).transpose(1, 2)  # (N, h, L, d_nope + d_v): rebuilt
k_nope, v = kv.split([d_nope, d_v], dim=-1)  # (N, h, L, d_nope), (N, h, L, d_v)
k = torch.cat([k_nope, k_rope.expand(-1, n_heads, -1, -1)], dim=-1)  # (N, h, L, d_nope + d_R): shared rotated part
q = mla.linear_query(x).view(2, L, n_heads, d_nope + d_rope).transpose(1, 2)  # (N, h, L, d_nope + d_R)
q_nope, q_rope = q.split([d_nope, d_rope], dim=-1)
q = torch.cat([q_nope, mla.rotary.rotate(q_rope, positions)], dim=-1)  # only the rotated part turns
scores = (q @ k.transpose(-2, -1) / math.sqrt(d_nope + d_rope)).masked_fill(~subsequent_mask(L).unsqueeze(1),
                                                                           float("-inf"))  # (N, h, L, L)
by_hand = mla.linear_out((F.softmax(scores, dim=-1) @ v).transpose(1, 2).flatten(2))  # (N, L, d_model)
expect_close(mla(x, mask=subsequent_mask(L)), by_hand, "LatentAttention equals the latent attention written by "
             "hand (± 1e-5)", atol=1e-5)

# %% [markdown]
# Per layer and token, the cache now holds $r + d_R$ numbers, whatever the number of heads:
# `latent_cache_bytes`. In a decoder-only model with `kv_latent_dim` set, the cache's keys hold
# the latents and its values the rotated keys; we count what a prompt leaves in it, beside the
# same-width model with multi-head, grouped-query and multi-query attention:

# %%
torch.manual_seed(0)
latent_model = DecoderConfig.llama(VOCAB, d_model=32, n_heads=4, n_layers=2, n_kv_heads=None, max_len=64,
                                   ff_units=88, kv_latent_dim=16).build().eval()
cache = latent_model.new_cache()
with torch.no_grad():
    latent_model(ids, cache=cache)  # three prompts of 40 tokens
held_bytes = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
sizes = latent_model.config.latent_sizes()
print(f"cache per layer: latents {tuple(cache.layers[0].keys.shape)}, rotated keys {tuple(cache.layers[0].values.shape)}")
print(f"bytes held: {held_bytes:,}; latent_cache_bytes: "
      f"{latent_cache_bytes(2, 16, sizes['rope_head_dim'], 40, batch_size=3):,}")
for label, heads in (("multi-head", 4), ("grouped-query, 2 KV heads", 2), ("multi-query", 1)):
    print(f"{label:>26}: {kv_cache_bytes(2, heads, 8, 1):,} bytes per token in float32")
print(f"{'latent, rank 16 + 4':>26}: {latent_cache_bytes(2, 16, sizes['rope_head_dim'], 1):,} bytes per token")

# %%
expect(held_bytes == latent_cache_bytes(2, 16, sizes["rope_head_dim"], 40, batch_size=3),
       "latent_cache_bytes counts the bytes the latent model's cache holds")
expect(kv_cache_bytes(2, 1, 8, 1) < latent_cache_bytes(2, 16, sizes["rope_head_dim"], 1) < kv_cache_bytes(2, 2, 8, 1),
       "at this width a latent of 16 caches more than multi-query attention and less than 2 KV heads")

# %% [markdown]
# At this width a latent of 16 (and a rotated key of 4) caches less than grouped-query attention
# with 2 KV heads and more than multi-query attention, as DeepSeek-V3's 576 numbers per layer
# lie between multi-query attention's 256 and 8 KV heads' 2,048 at its head size of 128. What
# a smaller latent costs in accuracy is an experiment (below).
#
# DeepSeek-V3's latent attention loads from `transformers` with its dense layers only
# (`first_k_dense_replace` equal to the number of layers; its routed experts, which differ from
# this chapter's, are refused with a clear error), here with a latent for the queries as well:

# %%
deepseek = same_as_transformers("DeepSeek-V3 (dense)", built(
    transformers.DeepseekV3ForCausalLM, transformers.DeepseekV3Config, intermediate_size=72, num_key_value_heads=4,
    kv_lora_rank=12, q_lora_rank=16, qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=5, first_k_dense_replace=2))
print(deepseek.layers[0].self_attn_heads)

# %% [markdown]
# ### An experiment: what the latent's rank costs
#
# First the bytes, at one width ($d_{model} = 64$, 8 heads of 8, 2 layers, float32): for each
# kind of attention, `cache_per_token` computes the bytes per token with `kv_cache_bytes` or
# `latent_cache_bytes` and measures what a model of that kind really holds after a stream.
# Then the price: every head's key and value is rebuilt from the latent, so a latent too small
# to tell the tokens apart cannot copy them. The study trains today's block ($d_{model} = 32$,
# 4 heads, 2 layers) with latent attention of rank 1, 2, 4 and 16, and with multi-head attention
# (the control), on the lag-copy task with 32 tokens, 300 steps, 3 seeds. Ranks 1 and 4, one seed,
# live:

# %% tags=["nbval-ignore-output"]
live_latent = latent_live()  # {rank: run}: seed 0, 150 steps
for rank, run in live_latent.items():
    print(f"latent of rank {rank:>2}: accuracy {run['accuracy']:.3f}")

# %%
expect(live_latent[4]["accuracy"] > live_latent[1]["accuracy"] + 0.3,
       "live: rank 4 copies better than rank 1, by more than 0.3", got={k: r["accuracy"] for k, r in live_latent.items()})

# %% [markdown]
# The study (`python -m stepbystep.experiments.after_llama.latent`, at one thread, stored),
# median (lowest-highest) accuracy over 3 seeds:

# %% tags=["nbval-ignore-output"]
study = load_latent_study()
print(f"{bytes_table(study)}\n{latent_table(study)}")

# %%
for claim in latent_claims(study):
    expect(claim.holds, claim.claim, claim.got)
twin = latent_claims(load_latent_study(default_threads=True))  # the same seeds at PyTorch's default thread count
expect(all(claim.holds for claim in twin), "run again at PyTorch's default thread count, the study keeps every "
       "claim above", [claim.claim for claim in twin if not claim.holds])

# %% [markdown]
# The bytes the package computes are those each cache held; at this width the latent of 16
# (and a rotated key of 4) caches 160 bytes per token where grouped-query attention with 2 KV
# heads caches 256 and multi-head 1,024. A latent of rank 1 fails the copy in every seed
# (accuracy below 0.6): the latent is RMS-normalised before the keys and values are rebuilt from
# it, so a latent of one number keeps only its sign, one bit per token. Its scores in the table
# still sit well above a guess: the shared rotated key is not compressed, so it still carries
# each token into the attention weights, though not into the values. Ranks of 4 and more copy
# as well as multi-head attention (above 0.95):
# on this task, with 32 tokens to tell apart, a rank of 4 is enough. DeepSeek's 512 serves
# 128 heads of a model 7,168 wide, a ratio this toy does not test.
#
# ## Mixture of experts
#
# Shazeer et al. ("Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts
# Layer", 2017) put up to thousands of feed-forward experts between stacked LSTM layers, a
# trainable gating network choosing a sparse combination of them for each example, and report
# more than 1000 times the model capacity with only minor losses in computational efficiency.
# Switch Transformer (Fedus, Zoph and Shazeer, "Switch Transformers: Scaling to Trillion
# Parameter Models with Simple and Efficient Sparsity", 2021; JMLR 2022) sends each token to one
# expert and reports up to 7 times faster pre-training than T5-Base and T5-Large with the same
# computational resources. Mixtral 8x7B (Jiang et al., "Mixtral of Experts", 2024) has 8 SwiGLU
# experts per layer and sends each token to 2, whose router weights are renormalised to sum to 1:
#
# $$p = \mathrm{softmax}(W_r x), \qquad S = \text{top-}k(p), \qquad y = \sum_{i \in S} \frac{p_i}{\sum_{j \in S} p_j}\, f_i(x).$$
#
# Written out for 10 tokens, 4 experts and $k = 2$, each token's output the weighted sum of its
# two experts':

# %%
torch.manual_seed(0)
moe = MixtureOfExperts(d_model=16, hidden=24, n_experts=4, top_k=2)
tokens = torch.randn(10, 16)  # (T, d_model)
probs = F.softmax(moe.router(tokens), dim=-1)  # (T, E): the router's probabilities
weights, chosen = probs.topk(2, dim=-1)  # (T, k), (T, k): each token's two most probable experts
weights = weights / weights.sum(dim=-1, keepdim=True)  # (T, k): renormalised, each row sums to 1
by_hand = torch.stack([sum(w * moe.experts[e](token) for w, e in zip(token_weights, token_experts))
                       for token, token_weights, token_experts in zip(tokens, weights, chosen.tolist())])  # (T, d)
print(f"token 0 goes to experts {chosen[0].tolist()}, weights summing to {weights[0].sum():.1f}")
claim = "MixtureOfExperts equals the top-2 routing written by hand, the weights renormalised (± 1e-6)"
expect_close(moe(tokens), by_hand, claim, atol=1e-6)
expect(moe.tokens_per_expert.sum().item() == 20, "10 tokens x 2 experts: 20 expert calls, counted per expert")

# %% [markdown]
# Without the renormalisation each token's output would shrink by its own factor, the share of
# the router's probability its two experts hold (exercise 2 asks you to write the routing).
# Qwen3's MoE models set `norm_topk_prob` in their configs; the course's `MixtureOfExperts`
# takes it too.
#
# A router left alone tends to favour a few experts: Shazeer et al. observed that it converges
# to giving large weights to the same few experts, an imbalance that reinforces itself because
# the favoured experts are trained more. Switch Transformer adds a **load-balancing loss**,
# $\alpha \cdot E \cdot \sum_i f_i P_i$ with $\alpha = 0.01$: $f_i$ the fraction of the tokens sent
# to expert $i$, $P_i$ the router's mean probability for it. Only $P$ carries a gradient; under a
# uniform routing the sum is $k$ (the course counts all $k$ choices per token, as Mixtral's code
# in `transformers` does). By hand, against the module's `aux_loss`:

# %%
fraction = torch.bincount(chosen.flatten(), minlength=4).float() / 10  # (E,): f, sums to k = 2
mean_prob = probs.mean(dim=0)  # (E,): P, sums to 1
print(f"tokens per expert {torch.bincount(chosen.flatten(), minlength=4).tolist()}: f sums to {fraction.sum():.0f}")
expect_close(moe.aux_loss, 4 * (fraction * mean_prob).sum(), "the module's aux_loss is E · Σ f_i · P_i (± 1e-6)",
             atol=1e-6)
expect_close(4 * (torch.full((4,), 0.5) * torch.full((4,), 0.25)).sum(), 2.0, "under a uniform routing it is k = 2",
             atol=1e-6)

# %% [markdown]
# A token uses $k$ of the $E$ experts, so a mixture holds more parameters than a token uses.
# `parameter_counts` counts both from a configuration, without building it. Mixtral 8x7B's
# published sizes (32 layers, $d_{model}$ 4096, 32 query and 8 KV heads, experts 14,336 wide, a
# vocabulary of 32,000):

# %%
mixtral_8x7b = DecoderConfig.llama(32000, d_model=4096, n_heads=32, n_layers=32, n_kv_heads=8, ff_units=14336,
                                   n_experts=8, experts_per_token=2)
counts = parameter_counts(mixtral_8x7b)
print(f"Mixtral 8x7B: {counts.total / 1e9:.1f}B parameters, {counts.active / 1e9:.1f}B used per token")

# %%
expect(round(counts.total / 1e8) == 467 and round(counts.active / 1e8) == 129,
       "Mixtral 8x7B: 46.7B parameters, 12.9B used per token (its paper rounds them to 47B and 13B)")

# %% [markdown]
# Mixtral and Qwen3-MoE load from `transformers` (the second with `norm_topk_prob=False`, its
# top-3 weights left as the router gave them):

# %%
mixtral = same_as_transformers("Mixtral", built(transformers.MixtralForCausalLM, transformers.MixtralConfig,
                                                intermediate_size=40, num_local_experts=5, num_experts_per_tok=2))
qwen3_moe = same_as_transformers("Qwen3-MoE", built(
    transformers.Qwen3MoeForCausalLM, transformers.Qwen3MoeConfig, intermediate_size=40, head_dim=8, num_experts=6,
    num_experts_per_tok=3, moe_intermediate_size=12, norm_topk_prob=False))
print(f"Mixtral: {mixtral.layers[0].ffn.extra_repr()}; Qwen3-MoE: {qwen3_moe.layers[0].ffn.extra_repr()}")

# %% [markdown]
# ### An experiment: experts against dense blocks, and where the tokens go
#
# A mixture should be compared with two dense blocks: one with as many parameters **per token**
# as the mixture uses (the same compute), and one with as many parameters **in all** as it holds
# (the same memory). The task mixes four clearly different sub-tasks: a task token says whether
# to copy, reverse, sort or add one (mod 10) to the 6 digits after it, and the model writes the
# answer after a separator; a sequence scores only if every answer digit is right. The mixture:
# today's block ($d_{model} = 32$, 4 heads, 2 layers) with 4 SwiGLU experts of 32 units, each
# token sent to one and weighted by its router probability $p_i$, as Switch Transformer does
# (renormalised, one expert's weight would always be 1, and the task's loss would give the router
# no gradient at all: only the balancing loss would train it), the balancing loss at 0.01; the dense blocks'
# widths are chosen by `parameter_counts` to match its active and its total parameters; and the
# mixture once more without the balancing loss. Adam at 0.01, 600 steps, 3 seeds.
#
# Does the router learn to send the sub-tasks to different experts? Careful: the task token is an
# input, in the context of every later token, so even a router that never trained sees which
# sub-task a token belongs to, and may route them apart by chance. The control is therefore the
# same seed's router **at initialisation**. How differently the sub-tasks are routed is measured
# as the total-variation distance between two sub-tasks' rows of the table below (half their
# summed absolute difference; 0: routed alike, 1: to disjoint experts), averaged over the six
# pairs. First the mixture alone, live, for 200 steps, and the share of each sub-task's tokens
# its first layer sends to each expert:

# %% tags=["nbval-ignore-output"]
live_experts = experts_live()  # seed 0, 200 steps
live_untrained = task_distance(torch.tensor(live_experts["initial_routing"]))  # (layers,): the same router, untrained
print(f"accuracy {live_experts['accuracy']:.3f}; busiest expert's share per layer "
      f"{[round(b, 2) for b in live_experts['busiest']]}")
print("distance between the sub-tasks' routing per layer: trained "
      f"{[round(d, 2) for d in live_experts['task_distance']]}, untrained {[round(d, 2) for d in live_untrained.tolist()]}")
fig = plots.expert_routing(torch.tensor(live_experts["routing"])[0], SUB_TASKS,
                           title="the live mixture's first layer: where each sub-task's tokens go")

# %%
expect(live_experts["task_distance"][0] > 1.5 * live_untrained[0], "live: after training the first layer routes the "
       "sub-tasks further apart than the same router at initialisation (by more than half as much again)",
       got=(live_experts["task_distance"][0], live_untrained[0].item()))
expect(max(live_experts["busiest"]) < 0.5, "live: with the balancing loss no expert takes half the tokens",
       got=live_experts["busiest"])

# %% [markdown]
# Each row is one sub-task's tokens; how far the rows differ is the distance printed above. The
# study
# (`python -m stepbystep.experiments.after_llama.experts`, stored), median (lowest-highest) over
# 3 seeds; the busiest expert is the largest share any expert takes in any layer (balanced:
# 0.25). Then each pair of sub-tasks' distance, per layer, after training and for the same seeds'
# routers at initialisation:

# %% tags=["nbval-ignore-output"]
study = load_experts_study()
print(experts_table(study))
print(routing_pairs_table(study))

# %%
for claim in experts_claims(study):
    expect(claim.holds, claim.claim, claim.got)
twin = experts_claims(load_experts_study(default_threads=True))  # the same seeds at PyTorch's default thread count
expect(all(claim.holds for claim in twin), "run again at PyTorch's default thread count, the study keeps every "
       "claim above", [claim.claim for claim in twin if not claim.holds])

# %% [markdown]
# The dense blocks match the mixture's parameters to 1%. Untrained, the routers already send the
# sub-tasks a little apart (the task token is an input, after all). Training separates them
# further, in both layers, beyond every untrained seed. Trained without the balancing loss, on
# the task's loss alone, the router also sends them apart beyond every untrained seed in the
# first layer: the router does learn to route by sub-task from the task's loss, with the task
# token to read. How far apart each pair ends
# varies widely from seed to seed (the ranges above), from close to nearly disjoint experts. The
# balancing loss keeps the load near even (no expert above 40%); without it the
# busiest expert's median share is higher, uneven but not collapsed: at this size, over 600
# steps from a random start, the router did not fall onto one expert. On accuracy, this
# small study finds no difference: the ranges of the mixture and of the dense block that computes
# as much per token overlap, and three seeds cannot order them, nor order the mixture against the
# block that holds as many parameters. Switch Transformer's and Mixtral's
# gains were measured at scales this page cannot train.

# %% [markdown]
# ## Try it
#
# Chapter 12's calculator, for every kind of attention: multi-head, grouped-query, multi-query
# or latent; a window (0: none) with its sinks, and how many layers stay unwindowed; the context
# and the dtype. The menu fills in a published configuration (DeepSeek-V3, Mistral 7B v0.1,
# Gemma 3 4B, Qwen3 8B), each marked on the plot at its context; move any control and it is
# yours. The dashed line is the same model with a key-value head per query head and no window.
# Try Gemma 3 4B with every layer windowed (the "unwindowed layers" slider from 5 to 0: 29 → 34
# windowed layers), or DeepSeek-V3 as
# grouped-query attention with 8 KV heads of 128.

# %% tags=["nbval-ignore-output"]
memory_explorer()

# %% [markdown]
# ## Recap
#
# - **QK-norm** puts an RMSNorm on each head's queries and keys (Qwen3, Gemma 3; OLMo 2 over all
#   heads) before the rotation; with gains of 1 no score can exceed $\sqrt{d_k}$, however large
#   the weights grow. The cache does not change.
# - A **sliding window** lets each query read its $w$ most recent tokens; **sinks** keep the
#   first few readable too. The cache then holds at most sinks + window tokens per layer
#   (`kv_cache_bytes(..., window=, sinks=)`): Mistral 7B v0.1's stops at 512 MiB, Gemma 3 4B's
#   windows in 29 of 34 layers cut its long-context cache by more than six times.
# - **Latent attention** caches a latent of rank $r$ and one shared rotated key per layer and
#   token (`latent_cache_bytes`), whatever the heads: 70,272 bytes per token for DeepSeek-V3 in
#   bfloat16.
# - A **mixture of experts** sends each token to the top $k$ of $E$ experts, their router
#   weights renormalised (Mixtral); a load-balancing loss $E \sum_i f_i P_i$ pushes the router
#   towards even loads. Mixtral 8x7B holds 46.7B parameters and uses 12.9B per token; its cache
#   is Llama's.
# - In the experiments (10 or 3 seeds, stored, one seed live): at a high learning rate without
#   warm-up the plain block's attention logits ran away and some seeds failed the lag-copy task,
#   while every QK-norm seed learned it, and at a low rate both did; a window of 8 alone could
#   not recall the first token far past its reach, one sink restored it in every seed and cost
#   nothing on a task that needs only recent tokens; a latent of rank 1 could not copy tokens,
#   ranks of 4 and more copied as well as multi-head attention; training a mixture routed four
#   sub-tasks further apart than its untrained router did (which, with the task token in the
#   context, already leaned a little); the balancing loss kept its load
#   near even, and no accuracy difference from the dense blocks showed at this size.
# - `from_transformers` loads Qwen3, OLMo 2, Mistral, DeepSeek-V3 (dense), Mixtral and Qwen3-MoE:
#   the same logits to 1e-4 and the same greedy tokens, with and without the cache.
#
# ## Your turn
#
# Each exercise has a checker: `.check(answer)` says whether your answer is right and, if not,
# what is wrong with it; `.hint()` gives a nudge and `.solution()` a worked answer. The cells
# below run the checkers on placeholders, so they fail until you fill them in.
#
# **1. A latent cache.** A model (made up for this exercise) has 40 layers of latent attention
# with 64 query heads, a latent of 384 and a shared rotated key of 32. How many GiB does its
# cache take for a batch of 4 sequences of 32,768 tokens in bfloat16? Work it out by hand first,
# then with `latent_cache_bytes` or the widget.

# %%
my_latent_gib = 0.0  # replace: the cache in GiB

ch17.latent_cache.check(my_latent_gib)

# %% [markdown]
# **2. Top-k routing.** Write `my_route(router_logits, k)`: `router_logits` is `(T, E)`, one score
# per token and expert; return `(weights, experts)`, both `(T, k)`: each token's `k` most probable
# experts and their weights, renormalised as Mixtral's are. Then break it: drop the
# renormalisation, and predict what the checker says, and which claim of this chapter a
# `MixtureOfExperts` without it would fail.

# %%
def my_route(router_logits, k):
    return router_logits, router_logits  # replace: probabilities, the top k, renormalised


ch17.route.check(my_route)

# %% [markdown]
# **3. The window mask with sinks.** Write `my_window_mask(length, window, sinks)`: an
# `(length, length)` keep-mask, `True` where query `i` may read key `j`: never a later token;
# the `window` most recent tokens, the query itself included; and the first `sinks` tokens.
# Predict first: with a window of 3 and 2 sinks, how many keys does query 9 read (counting
# from 0)? Check the number before you write the mask.

# %%
my_keys_read = 0  # replace: your prediction, one number

ch17.window_keys.check(my_keys_read)

# %%
def my_window_mask(length, window, sinks):
    return torch.ones(length, length, dtype=torch.bool)  # replace: causal, window and sinks


ch17.window_mask.check(my_window_mask)

# %% [markdown]
# **4. Where QK-norm goes.** Qwen3 normalises the queries and keys, then rotates them. Would
# rotating first and normalising after give the same scores? Answer for an RMSNorm with a gain
# of 1 and for one with learned gains, as `{"gain of one": ..., "learned gain": ...}` (True: the
# same scores), then check it with `RMSNorm` and `RotaryEmbedding`.

# %%
my_answer = {"gain of one": None, "learned gain": None}  # replace each None with True or False

ch17.qk_norm_place.check(my_answer)
