"""The token decoders (chapters 07-08): ``greedy_decode`` runs the shared ``decode_steps`` loop;
``beam_search`` runs the same step on every hypothesis, in its own loop that keeps the best ones.
Both run a ``TokenTransformer``-like model in eval mode without gradients, mode restored, on ids
they move to the model's device (their outputs stay there)."""
import torch
import torch.nn.functional as F

from ...checks import check_positive_int, check_tensor
from ...data.special_tokens import PAD
from ...devices import evaluating, model_device, move_to
from ..blocks.decode_loop import decode_steps
from ..metrics import up_to_first

__all__ = ["greedy_decode", "beam_search", "sequence_log_probs"]


def _check_arguments(model, source_ids, max_new_tokens):
    if not (hasattr(model, "encode") and hasattr(model, "decode")):
        raise TypeError(f"model must have encode and decode methods (a TokenTransformer), got {type(model).__name__}")
    check_tensor("source_ids", source_ids, ndim=2)  # (N, L_s)
    check_positive_int("max_new_tokens", max_new_tokens)
    model_max = getattr(model, "max_len", None)
    if model_max is not None and max_new_tokens > model_max:
        raise ValueError(f"max_new_tokens must be at most the model's max_len={model_max} (what it can read back), "
                         f"got {max_new_tokens}")


def _token_step(model, memory, source_mask, cache):
    """The encoder-decoder's step for ``decode_steps``: the next token's logits ``(N, V)``."""
    def step(target, new):
        if cache is None:
            return model.decode(target, memory, source_mask)[:, -1]  # the whole target again
        return model.decode(new, memory, source_mask, cache=cache)[:, -1]  # only the new tokens
    return step


def _new_cache(model, use_cache):
    return model.new_cache() if use_cache and hasattr(model, "new_cache") else None


def greedy_decode(model, source_ids, sos_id, eos_id, max_new_tokens, pad_id=PAD, use_cache=True):
    """Decode every source, taking the arg-max token at each step, for at most ``max_new_tokens``;
    a row ends at its first ``eos_id``, then gets ``pad_id``. ``use_cache``: the KV cache (chapter
    09). Returns ``(N, L)`` ids without ``<sos>``."""
    with evaluating(model):  # eval mode, no gradients, the mode restored
        _check_arguments(model, source_ids, max_new_tokens)
        source_ids = source_ids.to(model_device(model))  # (N, L_s): where the model lives
        memory, source_mask = model.encode(source_ids), model.source_mask(source_ids)  # (N, L_s, d_model), (N, 1, L_s)
        start = torch.full((source_ids.shape[0], 1), sos_id, dtype=torch.long, device=source_ids.device)  # (N, 1)
        step = _token_step(model, memory, source_mask, _new_cache(model, use_cache))
        steps = decode_steps(step, start, max_new_tokens, lambda logits: logits.argmax(dim=-1), eos_id, pad_id)
        return torch.stack([token for token, _ in steps], dim=1)  # (N, L)


def beam_search(model, source_ids, sos_id, eos_id, max_new_tokens, beam_width=4, length_penalty=0.0, pad_id=PAD,
                use_cache=True):
    """Decode every source keeping the ``beam_width`` best partial outputs at each step.

    All ``N · beam_width`` hypotheses go through ``greedy_decode``'s step together (with
    ``use_cache``, a KV cache whose rows follow the survivors); each is extended by every token
    and the best ``beam_width`` of the ``beam_width · V`` candidates survive. A hypothesis that
    writes ``eos_id`` keeps its score and continues with ``pad_id`` at no cost. Hypotheses are
    ranked by ``log p(y) / length ** length_penalty`` (0: the plain sum, which favours short
    outputs; 1: the mean per token). ``beam_width=1`` is greedy decoding.
    Returns the best hypothesis per source ``(N, L)``, as ``greedy_decode`` does."""
    with evaluating(model):  # eval mode, no gradients, the mode restored
        _check_arguments(model, source_ids, max_new_tokens)
        check_positive_int("beam_width", beam_width)
        if not length_penalty >= 0:
            raise ValueError(f"length_penalty must be a number >= 0, got {length_penalty!r}")
        source_ids = source_ids.to(model_device(model))  # (N, L_s): where the model lives
        n, width, device = source_ids.shape[0], beam_width, source_ids.device
        memory, source_mask = model.encode(source_ids), model.source_mask(source_ids)  # (N, L_s, d_model), (N, 1, L_s)
        memory = memory.repeat_interleave(width, dim=0)  # (N·B, L_s, d_model)
        if source_mask is not None:
            source_mask = source_mask.repeat_interleave(width, dim=0)  # (N·B, 1, L_s)

        sequences = torch.full((n, width, 1), sos_id, dtype=torch.long, device=device)  # (N, B, 1)
        scores = torch.full((n, width), float("-inf"), device=device)  # (N, B): sum of log-probs
        scores[:, 0] = 0.0  # one live hypothesis at the start, so the beams do not all repeat it
        lengths = torch.zeros(n, width, device=device)  # (N, B): tokens generated
        finished = torch.zeros(n, width, dtype=torch.bool, device=device)  # (N, B)
        cache = _new_cache(model, use_cache)
        step = _token_step(model, memory, source_mask, cache)
        new = sequences.view(n * width, 1)  # (N·B, 1)
        for _ in range(max_new_tokens):
            logits = step(sequences.view(n * width, -1), new)  # (N·B, V)
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
            if cache is not None:  # the cache's rows follow their hypotheses
                cache.reorder((beam_index + width * torch.arange(n, device=device).unsqueeze(1)).view(-1))  # (N·B,)
            new = token.view(n * width, 1)  # (N·B, 1)
            if finished.all():
                break
        final = scores / lengths.clamp(min=1) ** length_penalty  # (N, B)
        winner = final.argmax(dim=1)  # (N,)
        chosen = sequences[torch.arange(n, device=device), winner]  # (N, t + 1)
        return chosen[:, 1:]  # (N, L)


def sequence_log_probs(model, source_ids, generated, sos_id, eos_id):
    """The model's log-probability of each output in ``generated`` ``(N, L)`` (no ``<sos>``).
    Sums ``log p(y_t | y_<t, source)`` over the tokens up to and including the first
    ``eos_id`` (the whole row if there is none); what follows is ignored. Returns ``(N,)``.
    Use it to compare the outputs of two decoders on the model's own scale."""
    with evaluating(model):  # eval mode, no gradients, the mode restored
        check_tensor("generated", generated, ndim=2)  # (N, L)
        source_ids, generated = move_to((source_ids, generated), model_device(model))  # where the model lives
        memory, source_mask = model.encode(source_ids), model.source_mask(source_ids)  # (N, L_s, d_model), (N, 1, L_s)
        start = torch.full_like(generated[:, :1], sos_id)  # (N, 1)
        target_in = torch.cat([start, generated[:, :-1]], dim=1)  # (N, L)
        logits = model.decode(target_in, memory, source_mask)  # (N, L, V)
        log_probs = F.log_softmax(logits.float(), dim=-1)  # (N, L, V)
        token_log_probs = log_probs.gather(-1, generated.unsqueeze(-1)).squeeze(-1)  # (N, L)
        return (token_log_probs * up_to_first(generated, eos_id)).sum(dim=1)  # (N,)
