"""Latent attention's cache and what its rank costs (chapter 17).

Bytes per token: at one model width, a KV cache of multi-head attention keeps every head's key and
value, grouped-query attention those of fewer key heads, multi-query those of one, and latent
attention (DeepSeek-AI, DeepSeek-V2, 2024) one latent of ``kv_latent_dim`` and one shared rotated
key per layer, whatever the number of heads. ``cache_per_token`` computes each with the package's
``kv_cache_bytes`` / ``latent_cache_bytes`` and measures the cache the model really holds after a
stream (``measured``): the two must agree.

Accuracy against the rank: today's block with latent attention of ranks ``RANKS`` on chapter 10's
lag-copy task with ``VOCAB`` tokens: every head's value is rebuilt from the latent, so a latent too
small to tell the tokens apart cannot copy them; multi-head attention of the same width is the
control. Over ``SEEDS``.
"""
import sys

import torch

from ...data.lag_copy import lag_copy_accuracy, lag_copy_batch
from ...expect import Claim
from ...models.gpt.cache_memory import kv_cache_bytes, latent_cache_bytes
from ...models.gpt.config import DecoderConfig
from .recipe import cache_bytes_held, load_study, run_at, spread, thread_count, train_decoder, write_study

__all__ = ["SEEDS", "RANKS", "attention_configs", "cache_per_token", "latent_config", "rank_run",
           "latent_study", "load_latent_study", "latent_claims", "latent_live", "latent_table", "bytes_table"]

SEEDS = tuple(range(3))
RANKS = (1, 2, 4, 16)
VOCAB, LENGTH, LAG, STEPS, BATCH, LR = 32, 32, 3, 300, 32, 3e-3
WIDTH = dict(d_model=64, n_heads=8, n_layers=2)  # the width the cache sizes compare at
NAME = "after_llama_latent"


def attention_configs(vocab_size=VOCAB, kv_latent_dim=16, **width):
    """``{attention: DecoderConfig}`` at one width (``WIDTH`` unless given): multi-head, grouped-query
    (a quarter of the key heads), multi-query (one) and latent attention (``kv_latent_dim``)."""
    width = {**WIDTH, **width}
    h = width["n_heads"]
    base = DecoderConfig.llama(vocab_size, **width, n_kv_heads=h, max_len=64, ff_units=2 * width["d_model"])
    return {"multi-head": base, "grouped-query": base.replace(n_kv_heads=max(1, h // 4)),
            "multi-query": base.replace(n_kv_heads=1), "latent": base.replace(kv_latent_dim=kv_latent_dim)}


def cache_per_token(config, n_tokens=16, dtype=torch.float32):
    """``(computed, measured)`` bytes per token of ``config``'s KV cache over its layers: by
    ``kv_cache_bytes`` (or ``latent_cache_bytes``), and held by the model's cache after ``n_tokens``."""
    c = config
    if c.kv_latent_dim is None:
        computed = kv_cache_bytes(c.n_layers, c.n_kv_heads or c.n_heads, c.d_model // c.n_heads, 1, dtype=dtype)
    else:
        computed = latent_cache_bytes(c.n_layers, c.kv_latent_dim, c.latent_sizes()["rope_head_dim"], 1, dtype=dtype)
    torch.manual_seed(0)
    model = c.build().to(dtype).eval()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.randint(0, c.vocab_size, (1, n_tokens)), cache)
    return computed, cache_bytes_held(cache) // n_tokens


def latent_config(kv_latent_dim=None):
    """Today's block for the lag-copy task: latent attention of ``kv_latent_dim`` (``None``: multi-head)."""
    return DecoderConfig.llama(VOCAB, d_model=32, n_heads=4, n_layers=2, n_kv_heads=4, max_len=LENGTH, ff_units=64,
                               kv_latent_dim=kv_latent_dim)


def rank_run(kv_latent_dim, seed, steps=STEPS):
    """One run: ``{"accuracy", "losses"}``, the lag-copy accuracy on 256 fresh streams."""
    generator = torch.Generator().manual_seed(4000 + seed)
    batches = [lag_copy_batch(BATCH, LENGTH, LAG, VOCAB, generator) for _ in range(steps)]
    model, losses, diverged = train_decoder(latent_config(kv_latent_dim), batches, seed, LR)
    ids, targets = lag_copy_batch(256, LENGTH, LAG, VOCAB, torch.Generator().manual_seed(99))
    with torch.no_grad():
        accuracy = lag_copy_accuracy(model(ids), targets)
    return {"accuracy": accuracy, "diverged": diverged, "losses": [round(x, 4) for x in losses]}


def latent_study(seeds=SEEDS, default_threads=False, steps=STEPS):
    """The cache's bytes per token of each attention at ``WIDTH`` (computed and measured), and the
    accuracy of every rank of ``RANKS`` and of multi-head attention for ``seeds``."""
    def run():
        ranks = {str(rank): [rank_run(rank, seed, steps) for seed in seeds] for rank in RANKS}
        ranks["multi-head"] = [rank_run(None, seed, steps) for seed in seeds]
        return ranks

    cache = {name: list(cache_per_token(config)) for name, config in attention_configs().items()}
    return {"seeds": list(seeds), "steps": steps, "width": WIDTH, "cache_bytes_per_token": cache,
            "torch": torch.__version__, "threads": "default" if default_threads else 1,
            "runs": run_at(thread_count(default_threads), run)}


def load_latent_study(default_threads=False):
    """The stored study (``python -m stepbystep.experiments.after_llama.latent``)."""
    return load_study(NAME, default_threads)


def bytes_table(study):
    """Bytes per token of each attention's cache at the study's width, computed and measured."""
    lines = [f"{'attention':>14} {'computed':>9} {'measured':>9}"]
    for name, (computed, measured) in study["cache_bytes_per_token"].items():
        lines.append(f"{name:>14} {computed:>9} {measured:>9}")
    return "\n".join(lines)


def latent_table(study):
    """The lag-copy accuracy per latent rank (and multi-head), median (min-max)."""
    lines = [f"{'attention':>16} {'accuracy':>20}"]
    for name, runs in study["runs"].items():
        m, lo, hi = spread([run["accuracy"] for run in runs])
        label = name if name == "multi-head" else f"latent, rank {name}"
        lines.append(f"{label:>16} {f'{m:.3f} ({lo:.3f}-{hi:.3f})':>20}")
    return "\n".join(lines)


def latent_claims(study):
    """What the chapter says: the latent cache is smaller per token than multi-head's and grouped-query's
    at the same width, every figure the package computes is the bytes the cache held; a rank-1 latent
    cannot copy the tokens, a rank of 4 or more does as well as multi-head attention."""
    cache = study["cache_bytes_per_token"]
    accuracy = {name: torch.tensor([run["accuracy"] for run in runs]) for name, runs in study["runs"].items()}
    smallest, enough = str(min(RANKS)), [str(rank) for rank in RANKS if rank >= 4]
    full = accuracy["multi-head"]
    return [
        Claim(all(computed == measured for computed, measured in cache.values()),
              "for every attention the bytes per token the package computes are those the cache held", cache),
        Claim(cache["latent"][0] < cache["grouped-query"][0] < cache["multi-head"][0],
              "at the same width the latent cache is smaller per token than grouped-query's, itself smaller than "
              "multi-head's", cache),
        Claim(bool(full.min() > 0.95), "multi-head attention copies the tokens in every seed (accuracy above 0.95)", full),
        Claim(bool(accuracy[smallest].max() < 0.6), f"a rank-{smallest} latent cannot: below 0.6 in every seed",
              accuracy[smallest]),
        Claim(all(bool(accuracy[rank].min() > 0.95) for rank in enough),
              "latents of rank 4 and more copy as well: above 0.95 in every seed",
              {rank: accuracy[rank] for rank in enough}),
    ]


def latent_live(seed=0, ranks=(1, 4), steps=150):
    """The chapter's live run: latent attention of each of ``ranks`` for ``steps`` steps at one
    thread: ``{rank: run}`` as ``rank_run`` returns them."""
    return run_at(1, lambda: {rank: rank_run(rank, seed, steps) for rank in ranks})


if __name__ == "__main__":
    default = sys.argv[1:] == ["default_threads"]
    print(f"wrote {write_study(latent_study(default_threads=default), NAME, default)}")
