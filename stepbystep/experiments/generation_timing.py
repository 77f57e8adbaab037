"""Chapter 09's timing of generation step by step, with and without the KV cache."""
import time

import torch

from ..devices import evaluating
from ..models.gpt.generation import generation_steps, prompt_batch

__all__ = ["time_per_token", "step_logits", "time_slope", "cache_numbers"]


def _greedy(logits):
    return logits.argmax(dim=-1)  # (N,)


def time_per_token(model, prompt_ids, max_new_tokens, use_cache=True):
    """Seconds each greedy step takes, with or without the cache: a list of ``max_new_tokens`` floats.

    Without the cache a step's cost grows with the stream it reruns; with it, a step feeds one
    token and reads one row of attention per layer.
    """
    prompt, _ = prompt_batch(model, prompt_ids, max_new_tokens, pad_id=getattr(model, "pad_id", None))
    times = []
    with evaluating(model), torch.inference_mode():
        steps = generation_steps(model, prompt, max_new_tokens, _greedy, use_cache=use_cache)
        while True:
            start = time.perf_counter()
            if next(steps, None) is None:
                break
            times.append(time.perf_counter() - start)
    return times


def step_logits(model, prompt_ids, max_new_tokens, use_cache=True):
    """The logits of every greedy step ``(N, T, V)`` and the ids ``(N, L + T)``: for comparing the
    cached and uncached paths."""
    prompt, _ = prompt_batch(model, prompt_ids, max_new_tokens, pad_id=getattr(model, "pad_id", None))
    with evaluating(model), torch.inference_mode():
        steps = list(generation_steps(model, prompt, max_new_tokens, _greedy, use_cache=use_cache))
    ids = torch.cat([prompt] + [next_ids.unsqueeze(1) for next_ids, _ in steps], dim=1)  # (N, L + T)
    return torch.stack([logits for _, logits in steps], dim=1), ids  # (N, T, V), (N, L + T)


def time_slope(times, first_position=0):
    """Seconds per extra token of context: the median of the slopes between every two steps
    (Theil-Sen), so that a few slow steps (another program on the machine) do not tilt it.
    ``times`` one float per step, step ``i`` at ``first_position + i``."""
    if len(times) < 2:
        raise ValueError(f"need at least two step times for a slope, got {len(times)}")
    y = torch.tensor(times, dtype=torch.float64)  # (T,)
    x = first_position + torch.arange(len(times), dtype=torch.float64)  # (T,)
    i, j = torch.triu_indices(len(times), len(times), offset=1)  # every pair of steps, i < j
    return float(((y[j] - y[i]) / (x[j] - x[i])).median())


def cache_numbers(model, n_tokens):
    """How many numbers a decoder-only ``model``'s KV cache holds for one stream of ``n_tokens``:
    a key and a value of ``d_model`` numbers per token, in each of ``n_layers`` layers."""
    return 2 * model.n_layers * n_tokens * model.d_model
