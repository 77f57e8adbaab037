"""Chapter 09's checkers: a string join of token ids fails repeat_share, and probabilities returned where
top_k asks for logits are diagnosed, each without the answer."""
import torch

from stepbystep.exercises import ch09
from stepbystep.models import top_k_filter


def _joined_characters(tokens, n):
    text = "".join(str(t) for t in (tokens.tolist() if isinstance(tokens, torch.Tensor) else tokens))
    grams = [text[i:i + n] for i in range(len(text) - n + 1)]
    return sum(gram in grams[:i] for i, gram in enumerate(grams)) / len(grams) if grams else 0.0


def _joined_windows(tokens, n):
    tokens = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
    grams = ["".join(map(str, tokens[i:i + n])) for i in range(len(tokens) - n + 1)]
    return sum(gram in grams[:i] for i, gram in enumerate(grams)) / len(grams) if grams else 0.0


def test_repeat_share_refuses_string_joins_of_token_ids(fails_with):
    assert _joined_characters([1, 21, 12, 1], 2) > 0 and _joined_windows([1, 21, 12, 1], 2) > 0
    assert ch09.repeat_share._solution([1, 21, 12, 1], 2) == 0.0
    fails_with(ch09.repeat_share, _joined_characters, "your windows are of characters, not of tokens")
    fails_with(ch09.repeat_share, _joined_windows, "joined into a string without a separator")


def _mask(logits, k):
    return ~torch.isfinite(top_k_filter(logits, k))


def test_top_k_diagnoses_probabilities_returned_for_logits(fails_with):
    cases = [
        (lambda z, k: torch.softmax(top_k_filter(z, k), dim=-1), "the filtered *probabilities*"),
        (lambda z, k: torch.softmax(z, dim=-1).masked_fill(_mask(z, k), 0.0), "not renormalised"),
        (lambda z, k: torch.softmax(z, dim=-1).masked_fill(_mask(z, k), float("-inf")),
         "with their probabilities, not their logits"),
        (lambda z, k: torch.softmax(z, dim=-1), "look like probabilities"),
    ]
    for answer, words in cases:
        message = fails_with(ch09.top_k, answer, words)
        assert "topk" not in message and "masked_fill" not in message


def test_top_k_solution_still_passes():
    assert ch09.top_k.check(ch09.top_k._solution) and ch09.repeat_share.check(ch09.repeat_share._solution)
