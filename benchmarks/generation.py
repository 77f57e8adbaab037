"""Generation with and without the KV cache: 256 new tokens, d_model 64, 2 layers, CPU, one thread.

Without the cache every step runs the whole stream through the model again, so step ``t``
costs about ``t`` tokens of work; with it a step feeds one token and computes one row of
attention per layer. Both write the same tokens (greedy, no ``eos_id``, so both run all 256
steps). Timed with ``benchmarks.timing.compare`` on one thread: the two runs alternate, so a
slow moment of a shared machine lands on both rather than on one, and the medians are compared.
"""
import torch

from stepbystep.models import DecoderOnlyTransformer, generate

from .timing import compare

GOAL = 5.0  # the cache should make generation at least 5x faster
PROMPT_LENGTH, NEW_TOKENS = 16, 256
QUICK_NEW_TOKENS = 8


def _model(max_len):
    torch.manual_seed(0)
    return DecoderOnlyTransformer(64, d_model=64, n_heads=4, ff_units=128, n_layers=2, dropout=0.0,
                                  max_len=max_len).eval()


def timings(new_tokens=NEW_TOKENS, prompt_length=PROMPT_LENGTH, repeats=5):
    """Median seconds of one ``generate`` call with and without the cache: ``{use_cache: seconds}``.

    The model is untrained (the cost does not depend on the weights); its ``max_len`` is the
    prompt plus the new tokens. Runs on the CPU with one torch thread; the two calls alternate
    (``compare``), after one untimed warm-up each.
    """
    model = _model(prompt_length + new_tokens)
    prompt = torch.randint(4, 64, (1, prompt_length), generator=torch.Generator().manual_seed(0))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return compare({use_cache: (lambda use_cache=use_cache: generate(model, prompt, new_tokens, temperature=0,
                                                                          use_cache=use_cache))
                        for use_cache in (True, False)}, repeats=repeats)
    finally:
        torch.set_num_threads(threads)


def speedup(new_tokens=NEW_TOKENS, prompt_length=PROMPT_LENGTH, repeats=5):
    """How many times faster generation is with the cache: uncached time / cached time."""
    medians = timings(new_tokens, prompt_length, repeats)
    return medians[False] / medians[True]


def run(quick=False):
    """One row for ``benchmarks.run``'s ratio table: cached / uncached (goal: at most 1 / GOAL)."""
    new_tokens = QUICK_NEW_TOKENS if quick else NEW_TOKENS
    medians = timings(new_tokens, repeats=1 if quick else 5)
    ratio = medians[True] / medians[False]
    return [{"case": f"{new_tokens} new tokens after {PROMPT_LENGTH}, d_model=64, 2 layers, 1 thread",
             "ours": "KV cache", "reference": "no cache (recompute)",
             "ours_ms": 1000 * medians[True], "reference_ms": 1000 * medians[False],
             "ratio": ratio, "goal": 1 / GOAL, "met": ratio <= 1 / GOAL}]


if __name__ == "__main__":
    print(f"KV cache speed-up for {NEW_TOKENS} new tokens: {speedup():.1f}x (goal >= {GOAL:.0f}x)")
