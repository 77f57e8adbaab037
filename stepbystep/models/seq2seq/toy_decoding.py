"""Greedy decoding and beam search on a toy model whose next token depends only on the last one
(chapter 07): small enough to follow by hand, and to find where the two decoders disagree."""
import math

from ...checks import check_positive_int

__all__ = ["markov_greedy", "markov_beam_steps"]


def _check_table(next_probs, start):
    if not isinstance(next_probs, dict) or start not in next_probs:
        raise ValueError(f"next_probs must be a dict giving the probabilities after {start!r}, got "
                         f"{type(next_probs).__name__ if not isinstance(next_probs, dict) else list(next_probs)}")
    vocab = list(next_probs[start])
    missing = [token for token in vocab if token not in next_probs]
    if missing:
        raise ValueError(f"next_probs must give the probabilities after every token, missing {missing}")
    return vocab


def markov_greedy(next_probs, n_steps, start="<sos>"):
    """Greedy decoding for ``n_steps``: the most likely next token each time. ``next_probs`` maps a
    token to ``{token: probability}``. Returns ``(tokens, total log-probability)``, tokens after ``start``."""
    _check_table(next_probs, start)
    check_positive_int("n_steps", n_steps)
    tokens, score = [start], 0.0
    for _ in range(n_steps):
        row = next_probs[tokens[-1]]
        token = max(row, key=row.get)
        tokens.append(token)
        score += math.log(row[token])
    return tuple(tokens[1:]), score


def markov_beam_steps(next_probs, beam_width, n_steps, start="<sos>"):
    """Beam search for ``n_steps``, step by step: each kept output is extended by every token and
    the ``beam_width`` candidates with the highest total log-probability are kept.

    Returns one list per step of ``(tokens, total log-probability, parent index, kept)``, where
    ``parent index`` points into the previous step's kept outputs; the best output is the first
    kept candidate of the last step with the highest score."""
    vocab = _check_table(next_probs, start)
    check_positive_int("beam_width", beam_width)
    check_positive_int("n_steps", n_steps)
    beams, steps = [((start,), 0.0)], []
    for _ in range(n_steps):
        candidates = [(tokens + (token,), score + math.log(next_probs[tokens[-1]][token]), parent)
                      for parent, (tokens, score) in enumerate(beams) for token in vocab]
        kept = set(sorted(range(len(candidates)), key=lambda i: -candidates[i][1])[:beam_width])
        steps.append([(tokens[1:], score, parent, i in kept) for i, (tokens, score, parent) in enumerate(candidates)])
        beams = [(candidates[i][0], candidates[i][1]) for i in range(len(candidates)) if i in kept]
    return steps
