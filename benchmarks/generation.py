"""Generation with and without the KV cache, and against Hugging Face ``transformers``.

Greedy generation of 256 tokens after a 16-token prompt, 4 heads, ``ff_units = 4 d_model``,
2 layers, CPU, one thread, at ``d_model`` 64 (where Python overhead dominates a step) and 256.
Without the cache every step runs the whole stream again; with it a step feeds one token. The
peer is ``GPT2LMHeadModel(GPT2Config(...)).generate(do_sample=False, use_cache=True)`` of the
same shape with random weights, built offline.
"""
import torch

from stepbystep.devices import torch_threads
from stepbystep.models import DecoderOnlyTransformer, generate

from .timing import compare, ratio_row

import transformers

SIZES = (64, 256)
SPEEDUP_GOALS = {64: 2.5, 256: 10.0}  # the cache should make generation at least this much faster
PEER_GOAL = 0.7  # and take at most 0.7 of the time of transformers' cached generate
VOCAB, HEADS, LAYERS = 64, 4, 2
PROMPT_LENGTH, NEW_TOKENS = 16, 256
QUICK_NEW_TOKENS = 8


def _ours(d_model, max_len):
    torch.manual_seed(0)
    return DecoderOnlyTransformer(VOCAB, d_model=d_model, n_heads=HEADS, ff_units=4 * d_model, n_layers=LAYERS,
                                  dropout=0.0, max_len=max_len).eval()


def _peer(d_model, max_len):
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=max_len, n_embd=d_model, n_layer=LAYERS,
                                     n_head=HEADS, n_inner=4 * d_model, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return transformers.GPT2LMHeadModel(config).eval()


def timings(d_model, new_tokens=NEW_TOKENS, repeats=5):
    """Median seconds of one generation: ``{"cache", "recompute", "transformers": seconds}``."""
    max_len = PROMPT_LENGTH + new_tokens
    model = _ours(d_model, max_len)
    prompt = torch.randint(4, VOCAB, (1, PROMPT_LENGTH), generator=torch.Generator().manual_seed(0))
    peer, mask = _peer(d_model, max_len), torch.ones_like(prompt)
    contenders = {"cache": lambda: generate(model, prompt, new_tokens, temperature=0),
                  "recompute": lambda: generate(model, prompt, new_tokens, temperature=0, use_cache=False),
                  "transformers": lambda: peer.generate(prompt, attention_mask=mask, max_new_tokens=new_tokens,
                                                        min_new_tokens=new_tokens, do_sample=False, use_cache=True)}
    with torch_threads(1), torch.inference_mode():
        return compare(contenders, repeats=repeats)


def run(quick=False):
    """Rows for ``benchmarks.run``'s ratio table: cache / recompute and cache / transformers, per size."""
    new_tokens = QUICK_NEW_TOKENS if quick else NEW_TOKENS
    rows = []
    for d_model in SIZES:
        medians = timings(d_model, new_tokens, repeats=1 if quick else 5)
        case = f"{new_tokens} new tokens after {PROMPT_LENGTH}, d_model={d_model}, {LAYERS} layers, 1 thread"
        rows.append(ratio_row(case, medians, "cache", "recompute", goal=1 / SPEEDUP_GOALS[d_model]))
        rows.append(ratio_row(case, medians, "cache", "transformers", goal=PEER_GOAL))
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['case']}: ours {row['ours_ms']:.0f} ms, {row['reference']} {row['reference_ms']:.0f} ms, "
              f"ratio {row['ratio']:.2f} (goal <= {row['goal']:.2f})")
