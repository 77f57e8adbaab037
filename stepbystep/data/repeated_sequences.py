"""Repeated random sequences (chapter 13): random tokens, then the same tokens again.

The first half cannot be predicted (every token is drawn uniformly), the second half can be,
exactly, by a model that looks back for the previous occurrence of the current token and copies
the token that followed it: an induction head. Each sequence is drawn from its own generator,
seeded by ``seed`` and its index, so sequence ``i`` is the same whatever ``n`` is, on any machine.
"""
import torch

from ..checks import check_non_negative_int, check_positive_int

__all__ = ["repeated_sequences"]


def repeated_sequences(n, length, vocab_size, seed=0):
    """``n`` sequences of ``length`` random token ids in ``0 .. vocab_size - 1``, each followed by itself.

    Returns ``(n, 2 * length)`` int64 ids with ``ids[:, :length] == ids[:, length:]``. Sequence
    ``i`` comes from a ``torch.Generator`` seeded with ``seed · 2¹⁶ + i`` (a CPU generator reads
    32 bits of its seed, hence ``seed < 2¹⁶`` and ``n <= 2¹⁶``): the same ``(seed, i)`` always
    gives the same tokens, and no two pairs share a generator.
    """
    check_positive_int("n", n)
    check_positive_int("length", length)
    check_positive_int("vocab_size", vocab_size)
    check_non_negative_int("seed", seed)
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be at least 2 (a random token needs a choice), got {vocab_size}")
    if seed >= 2 ** 16:
        raise ValueError(f"seed must be below 2**16 = 65536 (a generator's 32-bit seed holds it and the index), "
                         f"got {seed}")
    if n > 2 ** 16:
        raise ValueError(f"n must be at most 2**16 = 65536 (a generator's 32-bit seed holds the seed and the index), "
                         f"got {n}")
    generator = torch.Generator()
    halves = torch.empty(n, length, dtype=torch.int64)  # (n, length)
    for i in range(n):
        generator.manual_seed(seed * 2 ** 16 + i)
        halves[i] = torch.randint(vocab_size, (length,), generator=generator)  # (length,)
    return torch.cat([halves, halves], dim=1)  # (n, 2 * length): the tokens, then the same again
