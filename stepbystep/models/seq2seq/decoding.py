"""Decoding: turning a trained token model into output sequences, greedily or with a beam.

Every function here works on a model with the ``TokenTransformer`` interface:
``encode(source_ids) -> (memory, source_mask)`` and
``decode(target_in, memory, source_mask) -> logits (N, L_t, V)``. They run without gradients
in eval mode and give the model back in the mode they found it in.
"""
import functools

import torch
import torch.nn.functional as F

from ...checks import check_positive_int, check_tensor
from ...data.special_tokens import PAD
from ...devices import evaluating

__all__ = ["greedy_decode", "beam_search", "sequence_log_probs", "translate"]


def _check_arguments(model, source_ids, max_len):
    if not (hasattr(model, "encode") and hasattr(model, "decode")):
        raise TypeError(f"model must have encode and decode methods (a TokenTransformer), got {type(model).__name__}")
    check_tensor("source_ids", source_ids, ndim=2)  # (N, L_s)
    check_positive_int("max_len", max_len)
    model_max = getattr(model, "max_len", None)
    if model_max is not None and max_len > model_max:
        raise ValueError(f"max_len must be at most the model's max_len={model_max} (what it can read back), "
                         f"got {max_len}")


def _inference(function):
    """Run ``function(model, ...)`` inside ``evaluating(model)``: eval mode, no gradients, mode restored."""
    @functools.wraps(function)
    def wrapper(model, *args, **kwargs):
        with evaluating(model):
            return function(model, *args, **kwargs)
    return wrapper


@_inference
def greedy_decode(model, source_ids, sos_id, eos_id, max_len, pad_id=PAD, use_cache=True):
    """Decode every source in the batch, taking the most likely token at each step.

    Starts each output with ``sos_id``, appends the arg-max token and feeds the output back in,
    for at most ``max_len`` tokens. A sequence is finished at its first ``eos_id``; after it, it
    gets ``pad_id``. The loop stops early when every sequence is finished.

    With ``use_cache`` and a model that has ``new_cache()`` (``TokenTransformer``), each step
    feeds only the token just written and the decoder keeps the earlier ones' keys and values
    (the KV cache of chapter 09): the same outputs, several times faster. Otherwise every step
    decodes the whole output so far.

    Returns the generated ids ``(N, L)`` without the ``<sos>`` (``L <= max_len``), ``<eos>``
    included where one was produced.
    """
    _check_arguments(model, source_ids, max_len)
    memory, source_mask = model.encode(source_ids)  # (N, L_s, d_model), (N, 1, L_s)
    n = source_ids.shape[0]
    generated = torch.full((n, 1), sos_id, dtype=torch.long, device=source_ids.device)  # (N, 1)
    finished = torch.zeros(n, dtype=torch.bool, device=source_ids.device)  # (N,)
    cache = model.new_cache() if use_cache and hasattr(model, "new_cache") else None
    for _ in range(max_len):
        if cache is None:
            logits = model.decode(generated, memory, source_mask)  # (N, t, V)
        else:
            logits = model.decode(generated[:, -1:], memory, source_mask, cache=cache)  # (N, 1, V): the new token's
        next_ids = logits[:, -1].argmax(dim=-1)  # (N,)
        next_ids = next_ids.masked_fill(finished, pad_id)  # (N,)
        generated = torch.cat([generated, next_ids.unsqueeze(1)], dim=1)  # (N, t + 1)
        finished |= next_ids == eos_id
        if finished.all():
            break
    return generated[:, 1:]  # (N, L)


@_inference
def beam_search(model, source_ids, sos_id, eos_id, max_len, beam_width=4, length_penalty=0.0, pad_id=PAD):
    """Decode every source keeping the ``beam_width`` best partial outputs at each step.

    Batched over sources and beams: the memory is repeated ``beam_width`` times and all
    ``N · beam_width`` hypotheses go through the decoder together. At each step every live
    hypothesis is extended by every token, and the ``beam_width`` best of those
    ``beam_width · V`` candidates survive. A hypothesis that produces ``eos_id`` is finished:
    it keeps its score, stays in the beam (continued with ``pad_id`` at no cost) and competes
    with the live ones until the end. The search stops when every beam of every source is
    finished, or after ``max_len`` tokens.

    Lengths: a hypothesis is ranked by ``log p(y) / length ** length_penalty``, where
    ``log p(y)`` is the sum of its tokens' log-probabilities and ``length`` counts its tokens
    (``<eos>`` included). ``length_penalty=0`` ranks by the plain sum, which favours short
    outputs (every token adds a negative log-probability); ``1`` ranks by the mean per token.
    The same ranking picks the beams during the search and the winner at the end.

    ``beam_width=1`` is greedy decoding. Returns the best hypothesis per source ``(N, L)``,
    without ``<sos>``, padded with ``pad_id`` after ``<eos>``, as ``greedy_decode`` does.
    """
    _check_arguments(model, source_ids, max_len)
    check_positive_int("beam_width", beam_width)
    if not length_penalty >= 0:
        raise ValueError(f"length_penalty must be a number >= 0, got {length_penalty!r}")
    n, width, device = source_ids.shape[0], beam_width, source_ids.device
    memory, source_mask = model.encode(source_ids)  # (N, L_s, d_model), (N, 1, L_s)
    memory = memory.repeat_interleave(width, dim=0)  # (N·B, L_s, d_model)
    if source_mask is not None:
        source_mask = source_mask.repeat_interleave(width, dim=0)  # (N·B, 1, L_s)

    sequences = torch.full((n, width, 1), sos_id, dtype=torch.long, device=device)  # (N, B, 1)
    scores = torch.full((n, width), float("-inf"), device=device)  # (N, B): sum of log-probs
    scores[:, 0] = 0.0  # one live hypothesis at the start, so the beams do not all repeat it
    lengths = torch.zeros(n, width, device=device)  # (N, B): tokens generated
    finished = torch.zeros(n, width, dtype=torch.bool, device=device)  # (N, B)
    for step in range(max_len):
        logits = model.decode(sequences.view(n * width, -1), memory, source_mask)[:, -1]  # (N·B, V)
        vocab_size = logits.shape[-1]
        log_probs = F.log_softmax(logits.float(), dim=-1).view(n, width, vocab_size)  # (N, B, V)
        only_pad = torch.full((vocab_size,), float("-inf"), device=device)
        only_pad[pad_id] = 0.0  # a finished hypothesis continues with padding, at no cost
        log_probs = torch.where(finished.unsqueeze(-1), only_pad, log_probs)  # (N, B, V)

        totals = scores.unsqueeze(-1) + log_probs  # (N, B, V)
        new_lengths = lengths + (~finished).float()  # (N, B)
        ranking = totals / new_lengths.unsqueeze(-1) ** length_penalty  # (N, B, V)
        best = ranking.view(n, width * vocab_size).topk(width, dim=-1).indices  # (N, B)
        beam_index, token = best // vocab_size, best % vocab_size  # (N, B), (N, B)

        scores = totals.view(n, -1).gather(1, best)  # (N, B)
        lengths = new_lengths.gather(1, beam_index)  # (N, B)
        finished = finished.gather(1, beam_index) | (token == eos_id)  # (N, B)
        history = beam_index.unsqueeze(-1).expand(-1, -1, sequences.shape[-1])  # (N, B, t)
        sequences = torch.cat([sequences.gather(1, history), token.unsqueeze(-1)], dim=-1)  # (N, B, t + 1)
        if finished.all():
            break
    final = scores / lengths.clamp(min=1) ** length_penalty  # (N, B)
    winner = final.argmax(dim=1)  # (N,)
    chosen = sequences[torch.arange(n, device=device), winner]  # (N, t + 1)
    return chosen[:, 1:]  # (N, L)


@_inference
def sequence_log_probs(model, source_ids, generated, sos_id, eos_id):
    """The model's log-probability of each output in ``generated`` ``(N, L)`` (no ``<sos>``).

    Sums ``log p(y_t | y_<t, source)`` over the tokens up to and including the first
    ``eos_id`` (the whole row if there is none); what follows is ignored. Returns ``(N,)``.
    Use it to compare the outputs of two decoders on the model's own scale.
    """
    check_tensor("generated", generated, ndim=2)  # (N, L)
    memory, source_mask = model.encode(source_ids)  # (N, L_s, d_model), (N, 1, L_s)
    start = torch.full_like(generated[:, :1], sos_id)  # (N, 1)
    target_in = torch.cat([start, generated[:, :-1]], dim=1)  # (N, L)
    logits = model.decode(target_in, memory, source_mask)  # (N, L, V)
    log_probs = F.log_softmax(logits.float(), dim=-1)  # (N, L, V)
    token_log_probs = log_probs.gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (N, L)
    is_eos = (generated == eos_id).long()  # (N, L)
    before_eos = (is_eos.cumsum(dim=1) - is_eos) == 0  # (N, L): up to and including the first eos
    return (token_log_probs * before_eos).sum(dim=1)  # (N,)


def translate(model, texts, src_vocab, tgt_vocab, max_len=None, beam_width=1, batch_size=1000):
    """Turn strings into the model's output strings: encode, pad, decode, decode back to text.

    ``texts`` is one string or a list of them. Unknown characters become ``<unk>``; an empty
    text, or one longer than the model's ``max_len``, raises ``ValueError``. ``max_len`` caps
    the output (default: the model's). ``beam_width`` 1 decodes greedily, more uses
    ``beam_search``. Returns a string, or a list of strings for a list, in the order of
    ``texts``.

    The texts are decoded in batches of at most ``batch_size``, sorted by length, so that a
    short text is padded only to the length of texts like it rather than to the longest of
    all: with padding masks the outputs are the same, and the work shrinks (about half, for
    the dates of chapter 08).
    """
    single = isinstance(texts, str)
    texts = [texts] if single else list(texts)
    if not texts:
        raise ValueError("texts must hold at least one text, got none")
    check_positive_int("batch_size", batch_size)
    model_max = getattr(model, "max_len", None)
    max_len = model_max if max_len is None else max_len
    device = next(model.parameters()).device
    ids = [torch.tensor(src_vocab.encode(text, max_len=model_max)) for text in texts]
    order = sorted(range(len(texts)), key=lambda index: len(ids[index]))  # similar lengths side by side
    outputs = [None] * len(texts)
    for start in range(0, len(order), batch_size):
        chosen = order[start:start + batch_size]
        source = torch.nn.utils.rnn.pad_sequence([ids[index] for index in chosen], batch_first=True,
                                                 padding_value=src_vocab.pad_id).to(device)  # (n, L_s)
        if beam_width == 1:
            generated = greedy_decode(model, source, tgt_vocab.sos_id, tgt_vocab.eos_id, max_len, tgt_vocab.pad_id)
        else:
            generated = beam_search(model, source, tgt_vocab.sos_id, tgt_vocab.eos_id, max_len,
                                    beam_width=beam_width, pad_id=tgt_vocab.pad_id)
        for index, row in zip(chosen, generated.cpu()):  # generated: (n, L)
            outputs[index] = tgt_vocab.decode(row)
    return outputs[0] if single else outputs
