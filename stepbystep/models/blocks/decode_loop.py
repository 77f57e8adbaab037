"""The decoding loop every decoder of the course runs (the square corners, ``greedy_decode`` and
``generate``), and ``in_batches``, which decodes many sequences a batch of similar lengths at a time."""
import torch

from ...checks import check_positive_int

__all__ = ["decode_steps", "in_batches"]


def decode_steps(step, sequence, max_new_tokens, choose, eos_id=None, pad_id=None):
    """The decoding loop: feed, choose, append, for ``max_new_tokens`` steps or until every row ended.

    ``sequence`` ``(N, t, ...)`` is what the decoder reads first (``<sos>``, a prompt, the last
    source element); ``step(sequence, new)`` gives the outputs for the next element (``new``:
    the part not fed yet, all that a cached step reads); ``choose(outputs)`` picks it, ``(N, ...)``.
    With ``eos_id``, a row that chose it is finished and gets ``pad_id`` after it. Yields ``(chosen, outputs)``."""
    finished = None
    new = sequence
    for _ in range(max_new_tokens):
        outputs = step(sequence, new)
        chosen = choose(outputs)  # (N, ...)
        if eos_id is not None:
            if finished is not None:
                chosen = chosen.masked_fill(finished, pad_id)  # finished rows write padding
            finished = chosen == eos_id if finished is None else finished | (chosen == eos_id)  # (N,)
        new = chosen.unsqueeze(1)  # (N, 1, ...)
        sequence = torch.cat([sequence, new], dim=1)  # (N, t + 1, ...)
        yield chosen, outputs
        if finished is not None and finished.all():
            return


def in_batches(sequences, batch_size, run):
    """``run(batch)`` on batches of at most ``batch_size`` sequences sorted by length (so padding
    stays short); one result per sequence, in the original order."""
    check_positive_int("batch_size", batch_size)
    order = sorted(range(len(sequences)), key=lambda index: len(sequences[index]))
    results = [None] * len(sequences)
    for start in range(0, len(order), batch_size):
        chosen = order[start:start + batch_size]
        for index, result in zip(chosen, run([sequences[index] for index in chosen])):
            results[index] = result
    return results
