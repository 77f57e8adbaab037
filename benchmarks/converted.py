"""Generation on a converted model: the course's cached ``generate`` against ``transformers``'
``generate`` on the same weights (chapter 12's ``from_transformers``).

A ``GPT2LMHeadModel`` and a grouped-query ``LlamaForCausalLM`` (4 query heads, 2 KV heads), built
from a config with random weights (nothing downloaded), 2 layers, at ``d_model`` 64 and 256;
each converted with ``from_transformers``. Greedy, 256 new tokens after 16, CPU, one thread; the
two must write the same tokens, or the row is refused.
"""
import torch
import transformers

from stepbystep.devices import torch_threads
from stepbystep.models import from_transformers, generate

from .timing import compare, ratio_row

SIZES = (64, 256)
GOAL = 0.7  # ours at most 0.7 of transformers' time
VOCAB, HEADS, KV_HEADS, LAYERS = 64, 4, 2, 2
PROMPT_LENGTH, NEW_TOKENS = 16, 256
QUICK_NEW_TOKENS = 8


def _peer(family, d_model, max_len):
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    if family == "GPT-2":
        config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=max_len, n_embd=d_model, n_layer=LAYERS,
                                         n_head=HEADS, initializer_range=0.3, bos_token_id=None, eos_token_id=None)
        return transformers.GPT2LMHeadModel(config).eval()
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=d_model, intermediate_size=8 * d_model // 3,
                                      num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                                      max_position_embeddings=max_len, initializer_range=0.3, bos_token_id=None,
                                      eos_token_id=None)
    return transformers.LlamaForCausalLM(config).eval()


def timings(family, d_model, new_tokens=NEW_TOKENS, repeats=5):
    """Median seconds of one generation, ``{"ours", "transformers": seconds}``, after checking that
    both write the same tokens."""
    max_len = PROMPT_LENGTH + new_tokens
    theirs = _peer(family, d_model, max_len)
    ours = from_transformers(theirs)
    prompt = torch.randint(0, VOCAB, (1, PROMPT_LENGTH), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(prompt)
    contenders = {
        "ours": lambda: generate(ours, prompt, new_tokens, temperature=0),
        "transformers": lambda: theirs.generate(prompt, attention_mask=mask, max_new_tokens=new_tokens,
                                                min_new_tokens=new_tokens, do_sample=False, use_cache=True),
    }
    with torch_threads(1), torch.inference_mode():
        if not torch.equal(contenders["ours"](), contenders["transformers"]()):
            raise AssertionError(f"{family}, d_model={d_model}: the converted model wrote other tokens")
        return compare(contenders, repeats=repeats)


def run(quick=False):
    """Rows for ``benchmarks.run``'s ratio table: ours / transformers, per family and size."""
    new_tokens = QUICK_NEW_TOKENS if quick else NEW_TOKENS
    rows = []
    for family in ("GPT-2", "Llama"):
        for d_model in SIZES:
            medians = timings(family, d_model, new_tokens, repeats=1 if quick else 5)
            case = (f"{family} converted, {new_tokens} new tokens after {PROMPT_LENGTH}, d_model={d_model}, "
                    f"{LAYERS} layers, 1 thread")
            rows.append(ratio_row(case, medians, "ours", "transformers", goal=GOAL))
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['case']}: ours {row['ours_ms']:.0f} ms, {row['reference']} {row['reference_ms']:.0f} ms, "
              f"ratio {row['ratio']:.2f} (goal <= {row['goal']:.2f})")
