"""Generation (chapter 09): a decoder-only model writes one token at a time, greedily or by sampling.

``temperature`` divides the logits (0: the arg-max), ``top_k`` keeps the ``k`` most likely tokens,
``top_p`` the nucleus (Holtzman et al. 2020); one token is drawn from the rest, renormalised."""
import math
import numbers

import torch
from torch.nn.utils.rnn import pad_sequence

from ...checks import check_fraction, check_instance, check_int_range, check_positive_int, check_positive_number
from ...devices import evaluating, model_device
from ..blocks.decode_loop import decode_steps, in_batches

__all__ = ["top_k_filter", "top_p_filter", "sampling_distribution", "sample_next", "left_pad", "prompt_batch",
           "generation_steps", "generate", "complete", "next_token_logits"]


def check_sampling(temperature=1.0, top_k=None, top_p=None):
    """Raise a clear error for an invalid ``temperature`` (0: the arg-max), ``top_k`` or ``top_p``."""
    check_positive_number("temperature", temperature, allow_zero=True)
    if top_k is not None:
        check_positive_int("top_k", top_k)
    if top_p is not None:
        check_fraction("top_p", top_p, allow_one=True)


def top_k_filter(logits, k):
    """Keep the ``k`` largest logits of each row ``(N, V)`` (exactly ``k``: ``torch.topk``'s choice
    among ties; ``k >= V``: all), set the others to ``-inf``."""
    if k >= logits.shape[-1]:
        return logits
    kept = logits.topk(k, dim=-1).indices  # (N, k)
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, kept, True)  # (N, V)
    return logits.masked_fill(~keep, float("-inf"))


def top_p_filter(logits, p):
    """Keep each row's nucleus: the fewest most likely tokens whose probabilities reach ``p``
    (the most likely always); the others get ``-inf``. ``logits`` ``(N, V)``; ``p >= 1`` keeps all
    (rounding in the running sum must not drop the tail's smallest tokens)."""
    if p >= 1:
        return logits
    probs = torch.softmax(logits.float(), dim=-1)  # (N, V)
    sorted_probs, order = probs.sort(dim=-1, descending=True)  # (N, V), (N, V)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (N, V): the mass of the more likely tokens
    keep_sorted = before < p  # (N, V)
    keep_sorted[..., 0] = True  # the most likely token, whatever rounding does
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # (N, V), original order
    return logits.masked_fill(~keep, float("-inf"))


def sampling_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    """The distribution a token is drawn from, logits ``(N, V)`` -> probabilities ``(N, V)``: temperature,
    then top-k, then top-p, the rest renormalised; ``temperature=0``: all on the arg-max."""
    check_sampling(temperature, top_k, top_p)
    return _distribution(logits, temperature, top_k, top_p)


def _distribution(logits, temperature, top_k, top_p):
    logits = logits.float()
    if temperature == 0:
        return torch.zeros_like(logits).scatter(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return torch.softmax(logits, dim=-1)  # (N, V)


def sample_next(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    """Draw one token id per row: ``(N, V)`` -> ``(N,)``; ``temperature=0`` takes the arg-max, drawing
    nothing. The settings are unchecked (``generate`` checks them once); logits with no token to
    choose (NaN, +inf, a row all -inf) raise ``FloatingPointError`` naming the cause."""
    if temperature == 0:
        best, index = logits.max(dim=-1)  # (N,) each: the arg-max, and the maximum the check reads
        _check_logits(logits, best.sum())
        return index  # (N,)
    probs = _distribution(logits, temperature, top_k, top_p)  # (N, V)
    _check_logits(logits, logits.amax(dim=-1).sum() + probs.sum(), temperature)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (N,)


def _check_logits(logits, total, temperature=None):
    """Raise ``FloatingPointError`` naming the cause when logits ``(N, V)`` leave no token to choose.
    ``total``: the rows' maxima summed (NaN or +inf if a row holds one, -inf if a row is all blocked),
    plus for sampling the probabilities' sum (NaN on overflow): one host read when all is well."""
    if math.isfinite(total.item()):
        return
    check = "check the model's weights (a diverged training run?) and inputs"
    if torch.isnan(logits).any():
        raise FloatingPointError(f"the logits hold NaN, so no token can be chosen: {check}")
    if torch.isposinf(logits).any():
        raise FloatingPointError(f"the logits hold +inf (an overflow), so no token can be chosen: {check}")
    if (logits == float("-inf")).all(dim=-1).any():
        raise FloatingPointError("every logit of a row is -inf (every token blocked), so no token can be chosen: "
                                 "check the masks or filters applied to the logits")
    if temperature is not None and torch.isnan(_distribution(logits, temperature, None, None)).any():
        raise FloatingPointError(f"the logits divided by temperature={temperature} overflow, so there is no "
                                 "distribution to sample from: use a larger temperature (0 for the arg-max)")
    # else: only the sum of finite maxima overflowed; every row has a token to choose


def left_pad(sequences, pad_id):
    """Sequences of ids of any lengths -> ``(N, L)`` padded on the left, so they end together."""
    rows = [torch.as_tensor(seq, dtype=torch.long).flip(0) for seq in sequences]
    return pad_sequence(rows, batch_first=True, padding_value=pad_id).flip(1)  # (N, L)


def _as_batch(inputs, pad_id):
    """The prompt(s) as a ``(N, L)`` long tensor, and whether a single sequence was given."""
    if isinstance(inputs, torch.Tensor):
        if inputs.is_floating_point() or inputs.is_complex() or inputs.dtype == torch.bool:
            raise TypeError(f"inputs must hold integer token ids, got dtype {inputs.dtype}")
        if inputs.dim() in (1, 2):
            return inputs.view(-1, inputs.shape[-1]).long(), inputs.dim() == 1
        raise ValueError(f"inputs must be (L,) or (N, L), got shape {tuple(inputs.shape)}")
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("inputs must be a tensor (L,) or (N, L), a list of ids, or a list of sequences "
                        f"of ids; got {type(inputs).__name__ if inputs else 'an empty list'}")
    if all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in inputs):
        return torch.tensor([list(inputs)], dtype=torch.long), True
    lengths = {len(seq) for seq in inputs}
    if 0 in lengths:
        raise ValueError("every prompt needs at least one token, got an empty one")
    if len(lengths) > 1 and pad_id is None:
        raise ValueError("prompts of different lengths need padding, but the model has pad_id=None")
    return left_pad(inputs, 0 if pad_id is None else pad_id), False


def prompt_batch(model, inputs, max_new_tokens, eos_id=None, pad_id=None, generator=None):
    """Check a generation's arguments; returns the prompts ``(N, L)`` on the model's device and
    whether ``inputs`` was a single prompt."""
    if not (isinstance(model, torch.nn.Module) and hasattr(model, "new_cache") and hasattr(model, "max_len")):
        raise TypeError(f"model must be a decoder-only model (a DecoderOnlyTransformer), got {type(model).__name__}")
    prompt, single = _as_batch(inputs, pad_id)
    check_positive_int("max_new_tokens", max_new_tokens)
    if prompt.shape[1] == 0:
        raise ValueError("the prompt is empty: give at least one token (e.g. <sos>)")
    if prompt.shape[1] > model.max_len:
        raise ValueError(f"the prompt has {prompt.shape[1]} tokens, more than the model's max_len={model.max_len}")
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError(f"a prompt of {prompt.shape[1]} tokens plus max_new_tokens={max_new_tokens} exceeds the "
                         f"model's max_len={model.max_len}: ask for at most {model.max_len - prompt.shape[1]} "
                         "new tokens")
    if eos_id is not None:
        check_int_range("eos_id", eos_id, 0, model.vocab_size - 1)
        if pad_id is None:
            raise ValueError("stopping at eos_id pads the finished rows, but the model has pad_id=None")
    if generator is not None:
        check_instance("generator", generator, torch.Generator, "a torch.Generator or None")
    return prompt.to(model_device(model)), single


def generation_steps(model, prompt, max_new_tokens, choose, eos_id=None, pad_id=None, use_cache=True):
    """``decode_steps`` for a decoder-only model, yielding ``(next_ids (N,), logits (N, V))``: with
    ``use_cache`` a ``KVCache`` preallocated for the stream, else the whole stream at each step."""
    cache = model.new_cache(capacity=prompt.shape[1] + max_new_tokens) if use_cache else None

    def step(stream, new):
        return model(new, cache=cache)[:, -1] if use_cache else model(stream)[:, -1]  # (N, V)

    return decode_steps(step, prompt, max_new_tokens, choose, eos_id, pad_id)


def generate(model, inputs, max_new_tokens, *, temperature=1.0, top_k=None, top_p=None, eos_id=None, pad_id=None,
             use_cache=True, generator=None):
    """Continue each prompt with up to ``max_new_tokens`` tokens: ``(L + T,)`` for one prompt,
    ``(N, L + T)`` for a batch, the prompt then the new ids, ``T <= max_new_tokens``.

    ``inputs``: one prompt (list of ids, 1-D tensor) or a batch (``(N, L)``, or lists of any lengths,
    padded on the left with ``pad_id``, the model's by default: each row generated as it would be
    alone). ``temperature``, ``top_k``, ``top_p``: see ``sampling_distribution``. ``eos_id``: a row
    that writes it is finished (then padded). ``use_cache``: a ``KVCache``, else the whole stream at
    each step. ``generator``: a seeded ``torch.Generator`` repeats the samples. Eval mode, no gradients."""
    pad_id = getattr(model, "pad_id", None) if pad_id is None else pad_id
    prompt, single = prompt_batch(model, inputs, max_new_tokens, eos_id, pad_id, generator)
    check_sampling(temperature, top_k, top_p)

    def choose(logits):
        return sample_next(logits, temperature, top_k, top_p, generator)

    with evaluating(model), torch.inference_mode():  # no version counters: cheaper per small op
        new_ids = [ids for ids, _ in generation_steps(model, prompt, max_new_tokens, choose, eos_id, pad_id, use_cache)]
    output = torch.cat([prompt, torch.stack(new_ids, dim=1)], dim=1)  # (N, L + T)
    return output[0] if single else output


def complete(model, prompts, max_new_tokens, eos_id, batch_size=500):
    """Greedy completions by a decoder-only ``model`` of many prompts (lists of ids), batched: one
    list of new ids per prompt, up to and including ``eos_id``."""
    def run(batch):
        generated = generate(model, batch, max_new_tokens, temperature=0, eos_id=eos_id).tolist()  # (n, L + T)
        width = max(map(len, batch))
        return [row[width:row.index(eos_id, width) + 1] if eos_id in row[width:] else row[width:] for row in generated]

    return in_batches(list(prompts), batch_size, run)


def next_token_logits(model, inputs):
    """The model's logits for the token after each prompt: ``(V,)`` for one, ``(N, V)`` for a batch
    (left-padded as in ``generate``). Eval mode, no gradients."""
    prompt, single = prompt_batch(model, inputs, 1, pad_id=getattr(model, "pad_id", None))
    with evaluating(model), torch.inference_mode():
        logits = model(prompt)[:, -1]  # (N, V)
    return logits[0] if single else logits
