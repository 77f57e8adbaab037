"""The lag-copy task of chapter 10: at every position, repeat the token ``lag`` places back.

The inputs are random tokens; the target at position ``i`` is the input at ``i - lag``. The
first ``lag`` positions have nothing to repeat: their targets are ``IGNORE_INDEX`` and add
nothing to the loss. Random tokens carry no clue about where they are, so the only way to
solve the task is to know *where* each token sits relative to the others: a model that cannot
tell positions apart is at chance. And the rule is the same at every length, so a model trained
on short sequences can be tested on longer ones.

Batches are drawn on the fly from a seeded ``torch.Generator``: the same seed gives the same
batches, on any machine.
"""
import torch

from ..checks import check_instance, check_positive_int
from .special_tokens import IGNORE_INDEX

__all__ = ["lag_copy_batch", "lag_copy_accuracy", "FIRST_TOKEN"]

FIRST_TOKEN = 1  # the tokens are 1 .. vocab_size - 1: id 0 is left to padding


def lag_copy_batch(n, length, lag=3, vocab_size=16, generator=None):
    """``n`` random sequences of ``length`` tokens and their lag-copy targets.

    Args:
        n, length: how many sequences, and how long.
        lag: how far back the token to repeat sits (``1 <= lag < length``).
        vocab_size: the ids are ``1 .. vocab_size - 1`` (0 is padding and never drawn).
        generator: a ``torch.Generator`` to draw from (``None``: PyTorch's global one).

    Returns ``inputs`` ``(n, length)`` and ``targets`` ``(n, length)``, both ``torch.long``:
    ``targets[:, i] = inputs[:, i - lag]`` for ``i >= lag``, ``IGNORE_INDEX`` (-100) before.
    """
    check_positive_int("n", n)
    check_positive_int("length", length)
    check_positive_int("lag", lag)
    check_positive_int("vocab_size", vocab_size)
    if lag >= length:
        raise ValueError(f"lag must be smaller than length={length} (something to repeat), got {lag}")
    if vocab_size < 3:
        raise ValueError(f"vocab_size must be at least 3 (padding and two tokens), got {vocab_size}")
    if generator is not None:
        check_instance("generator", generator, torch.Generator, "a torch.Generator or None")
    inputs = torch.randint(FIRST_TOKEN, vocab_size, (n, length), generator=generator)  # (n, length)
    targets = torch.full_like(inputs, IGNORE_INDEX)  # (n, length)
    targets[:, lag:] = inputs[:, :-lag]  # position i repeats the token at i - lag
    return inputs, targets


def lag_copy_accuracy(logits, targets):
    """The share of counted positions (targets not ``IGNORE_INDEX``) whose arg-max is the target.

    ``logits`` ``(N, L, V)``, ``targets`` ``(N, L)`` (moved to the logits' device); returns a float in [0, 1].
    """
    targets = targets.to(logits.device)  # (N, L)
    counted = targets != IGNORE_INDEX  # (N, L)
    if not bool(counted.any()):
        raise ValueError("targets must count at least one position, got only IGNORE_INDEX")
    right = (logits.argmax(dim=-1) == targets) & counted  # (N, L)
    return right.sum().item() / counted.sum().item()
