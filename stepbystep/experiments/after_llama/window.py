"""Sliding-window attention with and without an attention sink, run past the window (chapter 17).

Two tasks on streams of ``LENGTH`` random tokens: chapter 10's lag-copy (repeat the token ``LAG``
back: only recent context, well inside the window) and first-token recall (at every position,
repeat the stream's first token: it needs the start). Today's block is trained on each with full
attention (the control), with a window of ``WINDOW`` tokens, and with the same window and one
attention sink (Xiao et al., Efficient Streaming Language Models with Attention Sinks, 2023), the
positions being the stream's (Mistral's rolling cache; Jiang et al., Mistral 7B, 2023). Each model
is then run token by token through its KV cache (``stream_through``), as generation runs, over the
whole stream: the accuracy is counted past the reach of the stacked windows (``FAR``), and the
cache's held tokens are measured at every step: bounded by ``sinks + window`` while the stream grows,
against every token for the full cache.
"""
import sys

import torch

from ...data.lag_copy import lag_copy_batch
from ...data.special_tokens import IGNORE_INDEX
from ...expect import Claim
from ...models.gpt.cache_memory import kv_cache_bytes
from ...models.gpt.config import DecoderConfig
from .recipe import cache_bytes_held, load_study, median, run_at, spread, thread_count, train_decoder, write_study

__all__ = ["SEEDS", "TASKS", "VARIANTS", "WINDOW", "LENGTH", "FAR", "window_config", "task_batch", "stream_through",
           "window_run", "window_study", "load_window_study", "window_claims", "window_live",
           "window_table"]

SEEDS = tuple(range(3))
TASKS = ("recent", "start")  # lag-copy, first-token recall
WINDOW, LENGTH, VOCAB, LAG, STEPS, BATCH, N_LAYERS = 8, 96, 16, 3, 200, 16, 2
FAR = N_LAYERS * (WINDOW - 1) + 1  # from here on, no stack of windows reaches the first token
VARIANTS = {"full attention": dict(), f"window {WINDOW}": dict(sliding_window=WINDOW),
            f"window {WINDOW} + 1 sink": dict(sliding_window=WINDOW, attention_sinks=1)}
NAME = "after_llama_window"


def window_config(d_model=32, n_heads=4, **window):
    """Today's block at toy size over streams of ``LENGTH``, with ``window`` (``sliding_window``, ``attention_sinks``)."""
    return DecoderConfig.llama(VOCAB, d_model=d_model, n_heads=n_heads, n_layers=N_LAYERS, n_kv_heads=n_heads,
                               max_len=LENGTH, ff_units=64, **window)


def task_batch(task, n, generator, length=LENGTH):
    """``n`` streams of ``task`` (one of ``TASKS``): ids and targets ``(n, length)``. ``"recent"``:
    the lag-copy targets (the token ``LAG`` back); ``"start"``: the first token at every later position."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    ids, targets = lag_copy_batch(n, length, LAG, VOCAB, generator)  # (n, length) each
    if task == "start":
        targets = ids[:, :1].expand(n, length).clone()  # (n, length): the first token, everywhere after it
        targets[:, 0] = IGNORE_INDEX
    return ids, targets


def stream_through(model, ids):
    """Feed ``ids`` ``(N, L)`` to ``model`` one token at a time through its KV cache, as generation
    does: the logits ``(N, L, V)`` and the tokens the first layer's cache holds after each step ``(L,)``."""
    cache = model.new_cache()
    logits, held = [], []
    with torch.no_grad():
        for t in range(ids.shape[1]):
            logits.append(model(ids[:, t:t + 1], cache))  # (N, 1, V)
            held.append(cache.layers[0].keys.shape[2])
    return torch.cat(logits, dim=1), torch.tensor(held)  # (N, L, V), (L,)


def _stream_bytes(model, ids):
    """The cache's bytes after streaming ``ids`` through it, and what ``kv_cache_bytes`` says they are."""
    cache = model.new_cache()
    with torch.no_grad():
        for t in range(ids.shape[1]):
            model(ids[:, t:t + 1], cache)
    c = model.config
    expected = kv_cache_bytes(c.n_layers, c.n_kv_heads or c.n_heads, c.d_model // c.n_heads, ids.shape[1],
                              batch_size=ids.shape[0], window=c.sliding_window, sinks=c.attention_sinks)
    return cache_bytes_held(cache), expected


def window_run(task, variant, seed, steps=STEPS, n_test=128):
    """One run: ``{"far_accuracy", "held", "bytes", "expected_bytes", "losses"}``: the accuracy at
    positions ``FAR`` and later, streamed through the cache, on ``n_test`` fresh streams; the tokens
    the cache held after each step; its bytes at the end, and ``kv_cache_bytes``' figure for them."""
    generator = torch.Generator().manual_seed(2000 + seed)
    batches = [task_batch(task, BATCH, generator) for _ in range(steps)]
    model, losses, diverged = train_decoder(window_config(**VARIANTS[variant]), batches, seed, lr=3e-3)
    ids, targets = task_batch(task, n_test, torch.Generator().manual_seed(99))
    logits, held = stream_through(model, ids)
    right = logits.argmax(dim=-1)[:, FAR:] == targets[:, FAR:]  # (n, L - FAR)
    held_bytes, expected = _stream_bytes(model, ids[:4])
    return {"far_accuracy": right.float().mean().item(), "held": held.tolist(), "bytes": held_bytes,
            "expected_bytes": expected, "diverged": diverged, "losses": [round(loss, 4) for loss in losses]}


def window_study(seeds=SEEDS, default_threads=False, steps=STEPS):
    """Every task and variant for ``seeds``: ``{"seeds", "steps", "window", "length", "far", "torch",
    "runs": {task: {variant: [run, ...]}}}``."""
    runs = run_at(thread_count(default_threads), lambda: {
        task: {variant: [window_run(task, variant, seed, steps) for seed in seeds] for variant in VARIANTS}
        for task in TASKS})
    return {"seeds": list(seeds), "steps": steps, "window": WINDOW, "length": LENGTH, "far": FAR,
            "torch": torch.__version__, "threads": "default" if default_threads else 1, "runs": runs}


def load_window_study(default_threads=False):
    """The stored study (``python -m stepbystep.experiments.after_llama.window``)."""
    return load_study(NAME, default_threads)


def _accuracies(study, task, variant):
    return [run["far_accuracy"] for run in study["runs"][task][variant]]


def window_table(study):
    """One line per task and variant: the accuracy past the window's reach, median (min-max), and
    the most tokens the cache held."""
    lines = [f"{'task':>7} {'variant':>18} {'accuracy at positions ' + str(study['far']) + '+':>28} {'cache holds':>12}"]
    for task in study["runs"]:
        for variant, runs in study["runs"][task].items():
            m, lo, hi = spread(_accuracies(study, task, variant))
            lines.append(f"{task:>7} {variant:>18} {f'{m:.2f} ({lo:.2f}-{hi:.2f})':>28} "
                         f"{max(runs[0]['held']):>12}")
    return "\n".join(lines)


def window_claims(study):
    """What the chapter says: with one sink the windowed model recalls the first token far past the
    window and without it it is near chance; the recent task needs no sink; the cache holds at most
    ``sinks + window`` tokens while the full cache holds them all, as ``kv_cache_bytes`` counts."""
    w, length = study["window"], study["length"]
    window, sink, full = f"window {w}", f"window {w} + 1 sink", "full attention"
    start = {v: torch.tensor(_accuracies(study, "start", v)) for v in (window, sink, full)}
    recent = {v: torch.tensor(_accuracies(study, "recent", v)) for v in (window, sink, full)}
    chance = 1 / (VOCAB - 1)
    held = {v: [max(run["held"]) for task in study["runs"] for run in study["runs"][task][v]] for v in (window, sink, full)}
    every_step = all(run["held"] == [min(t + 1, w + (1 if v == sink else 0)) for t in range(length)]
                     for task in study["runs"] for v in (window, sink) for run in study["runs"][task][v])
    bytes_match = all(run["bytes"] == run["expected_bytes"] for task in study["runs"] for v in study["runs"][task]
                      for run in study["runs"][task][v])
    return [
        Claim(bool(start[sink].min() > 0.9), "with one sink, every windowed seed recalls the first token far past "
              "the window (accuracy above 0.9)", start[sink]),
        Claim(bool(start[window].max() < 3 * chance), "without the sink, every windowed seed is near chance there "
              f"(below 3 × 1/{VOCAB - 1})", start[window]),
        Claim(bool(start[full].min() > 0.9), "full attention also recalls it (the control: the task is learnable)",
              start[full]),
        Claim(bool(recent[window].min() > 0.9), "on the recent task the window alone is enough (accuracy above 0.9 "
              "in every seed)", recent[window]),
        Claim(every_step, f"at every step the windowed caches hold min(t, {w}) tokens, {w} + 1 with the sink", held),
        Claim(set(held[full]) == {length}, f"the full cache holds all {length} tokens at the end", held[full]),
        Claim(bytes_match, "the caches' bytes equal kv_cache_bytes(window=, sinks=) for every run", bytes_match),
        Claim(abs(median(recent[sink]) - median(recent[window])) < 0.05,
              "on the recent task the sink moves the median accuracy by less than 0.05: it neither helps nor costs there",
              (median(recent[sink]), median(recent[window]))),
    ]


def window_live(seed=0, steps=60):
    """The chapter's live run: first-token recall with a window, with and without one sink, ``steps``
    steps at one thread: ``{variant: run}`` as ``window_run`` returns them."""
    variants = (f"window {WINDOW}", f"window {WINDOW} + 1 sink")
    return run_at(1, lambda: {variant: window_run("start", variant, seed, steps, n_test=32) for variant in variants})


if __name__ == "__main__":
    default = sys.argv[1:] == ["default_threads"]
    print(f"wrote {write_study(window_study(default_threads=default), NAME, default)}")
