"""Chapter 10's "Your turn": one RoPE rotation by hand, ALiBi's slopes for any head count, RoPE's offset,
ALiBi as a fused mask.

In the notebook::

    from stepbystep.exercises import ch10
    ch10.rotate_pair.check(my_rotate_pair)
    ch10.rotate_pair.hint()
    ch10.rotate_pair.solution()
"""
import math

import torch

from ..models import alibi_bias, alibi_slopes
from ..models import RotaryEmbedding
from .exercise import Exercise, expects_function

__all__ = ["rotate_pair", "slopes", "offset_score", "alibi_mask"]


# ----------------------------------------------------------------------------- 1. one pair by hand
def _rotate_pair_solution(a, b, angle):
    # a rotation by `angle` (radians, counter-clockwise): the pair (a, b) keeps its length
    return a * math.cos(angle) - b * math.sin(angle), a * math.sin(angle) + b * math.cos(angle)


_PAIR_CASES = ((1.0, 0.0, 0.3), (0.5, -2.0, 1.1), (-1.5, 0.7, 2.5), (2.0, 1.0, -0.8), (0.3, 0.4, 4.0))


def _as_pair(result):
    if isinstance(result, torch.Tensor):
        result = result.tolist()
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return None
    try:
        return float(result[0]), float(result[1])
    except (TypeError, ValueError):
        return None


@expects_function("rotate_pair(a, b, angle)")
def _check_rotate_pair(answer):
    for a, b, angle in _PAIR_CASES:
        got = _as_pair(answer(a, b, angle))
        if got is None:
            return "return two numbers: the pair after the rotation, (a', b')"
        wanted = _rotate_pair_solution(a, b, angle)
        if all(abs(g - w) < 1e-5 for g, w in zip(got, wanted)):
            continue
        if abs(math.hypot(*got) - math.hypot(a, b)) > 1e-4:
            return "the rotated pair should keep the pair's length: a rotation only turns it"
        if all(abs(g - w) < 1e-5 for g, w in zip(got, (a, b))):
            return f"your pair did not turn: with angle {angle} it comes back as ({a}, {b}), where it started"
        if all(abs(g - w) < 1e-5 for g, w in zip(got, _rotate_pair_solution(a, b, -angle))):
            return "your pair turns the wrong way: a positive angle turns counter-clockwise"
        if all(abs(g - w) < 1e-5 for g, w in zip(got, _rotate_pair_solution(a, b, math.radians(angle)))):
            return "the angle is in radians, not in degrees"
        return "the length is right, but the pair ends up at the wrong angle"
    return None


rotate_pair = Exercise(
    "one pair rotated by hand",
    _check_rotate_pair,
    "a rotation by φ sends (1, 0) to (cos φ, sin φ): where must it send (0, 1), a quarter turn further on? "
    "A pair (a, b) is a·(1, 0) + b·(0, 1), and a rotation keeps sums and multiples. math.cos and math.sin take "
    "radians",
    _rotate_pair_solution,
)


# ----------------------------------------------------------------------------- 2. ALiBi's slopes, any head count
def _power_of_two_slopes(n):
    start = 2 ** (-8 / n)
    return [start ** (h + 1) for h in range(n)]


def _slopes_solution(n_heads):
    def power_of_two_slopes(n):
        # the geometric sequence 2^(-8/n), 2^(-16/n), ..., 2^(-8)
        start = 2 ** (-8 / n)
        return [start ** (h + 1) for h in range(n)]

    if n_heads & (n_heads - 1) == 0:  # a power of two
        return torch.tensor(power_of_two_slopes(n_heads))
    # otherwise: the slopes of the next smaller power of two, then every other slope of the next larger one
    smaller = 2 ** math.floor(math.log2(n_heads))
    extra = power_of_two_slopes(2 * smaller)[0::2][: n_heads - smaller]
    return torch.tensor(power_of_two_slopes(smaller) + extra)


@expects_function("slopes(n_heads)")
def _check_slopes(answer):
    for n_heads in (8, 4, 1, 6, 12, 3, 20):
        got = answer(n_heads)
        try:
            got = torch.as_tensor(got, dtype=torch.float64).flatten()
        except (TypeError, ValueError, RuntimeError):
            return f"return the slopes as a list or a tensor of numbers, got {type(got).__name__}"
        if got.numel() != n_heads:
            return f"with {n_heads} heads there should be {n_heads} slopes, got {got.numel()}"
        wanted = alibi_slopes(n_heads).double()
        if torch.allclose(got, wanted, rtol=1e-5, atol=0):
            continue
        if not bool((got > 0).all()):
            return "the slopes must be positive: the bias is -slope × distance, the sign is already there"
        if torch.allclose(got.sort(descending=True).values, wanted.sort(descending=True).values, rtol=1e-5, atol=0):
            return f"with {n_heads} heads you have the right slopes in the wrong order: the paper's order is kept"
        power_of_two = n_heads & (n_heads - 1) == 0
        if power_of_two:
            return f"with {n_heads} heads (a power of two) your slopes are not the paper's geometric sequence"
        if torch.allclose(got, torch.tensor(_power_of_two_slopes(n_heads), dtype=torch.float64), rtol=1e-5):
            return (f"with {n_heads} heads you used the power-of-two formula as if {n_heads} were one: the paper "
                    f"does something else for other head counts")
        smaller = 2 ** math.floor(math.log2(n_heads))
        if not torch.allclose(got[:smaller], wanted[:smaller], rtol=1e-5):
            return f"with {n_heads} heads your first {smaller} slopes are not those the paper uses"
        return f"with {n_heads} heads your first {smaller} slopes are right, the {n_heads - smaller} after them are not"
    return None


slopes = Exercise(
    "ALiBi's slopes for any number of heads",
    _check_slopes,
    "write the power-of-two case first; for other counts, build on the slopes of the two powers of two around "
    "n_heads, as the chapter's text describes. math.log2 tells you which powers those are",
    _slopes_solution,
)


# ----------------------------------------------------------------------------- 3. RoPE's offset
def _offset_score_solution(q, k, offset, rotary):
    # R(m)q · R(m + offset)k = q · R(-m)R(m + offset)k = q · R(offset)k: turn only the key, by the offset
    return (q * rotary(k.unsqueeze(0), torch.tensor([offset])).squeeze(0)).sum()


@expects_function("offset_score(q, k, offset, rotary)")
def _check_offset_score(answer):
    generator = torch.Generator().manual_seed(10)
    rotary = RotaryEmbedding(8, base=100.0)
    q, k = torch.randn(8, generator=generator), torch.randn(8, generator=generator)
    for offset in (0, 1, 3, 7):
        try:
            got = answer(q.clone(), k.clone(), offset, rotary)
        except ValueError as error:
            if "positions must be" not in str(error):
                raise
            return ("RotaryEmbedding takes positions >= 0 only, and your answer asked for a negative one: turn the "
                    "other vector forward instead")
        try:
            got = float(got)
        except (TypeError, ValueError, RuntimeError):
            return f"return one number (the score), got {type(got).__name__}"
        for m in (0, 5, 11):  # the query at m, the key at m + offset: the same score wherever m is
            wanted = float(rotary(q.unsqueeze(0), torch.tensor([m])).squeeze(0)
                           @ rotary(k.unsqueeze(0), torch.tensor([m + offset])).squeeze(0))
            if abs(got - wanted) > 1e-4:
                backwards = float(rotary(q.unsqueeze(0), torch.tensor([offset])).squeeze(0) @ k)
                if abs(got - backwards) < 1e-4 and offset:
                    return "your score is the one for the key behind the query, not ahead: which vector should turn?"
                if abs(got - float(q @ k)) < 1e-4 and offset:
                    return "your score ignores the offset: one of the two vectors should turn"
                if abs(got * q.shape[-1] ** 0.5 - wanted) < 1e-4:
                    return "your score is divided by √d: here the score is the plain dot product q · k of the turned vectors"
                return f"with offset {offset} your score differs from the score of q and k rotated at their positions"
    return None


offset_score = Exercise(
    "RoPE's score depends only on the offset",
    _check_offset_score,
    "rotations compose: turning q by m and k by n and taking their dot product is the same as leaving q and turning "
    "k by n - m (a rotation's transpose is the rotation backwards). rotary(x, positions) turns (N, L, d) vectors",
    _offset_score_solution,
)


# ----------------------------------------------------------------------------- 4. ALiBi as a fused mask
def _alibi_mask_solution(n_heads, length):
    positions = torch.arange(length)
    distance = (positions[:, None] - positions[None, :]).float()  # (L, L): query i is i - j after key j
    bias = -alibi_slopes(n_heads)[:, None, None] * distance  # (h, L, L): -slope x distance
    future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)  # (L, L): True above the diagonal
    return bias.masked_fill(future, float("-inf"))  # what F.scaled_dot_product_attention adds to the scores


@expects_function("alibi_mask(n_heads, length)")
def _check_alibi_mask(answer):
    for n_heads, length in ((2, 5), (4, 7)):
        got = answer(n_heads, length)
        if not isinstance(got, torch.Tensor) or not got.is_floating_point():
            return "return a float tensor: F.scaled_dot_product_attention adds a float mask to the scores"
        if tuple(got.shape) != (n_heads, length, length):
            return f"expected one (L, L) matrix per head, (h, L, L) = {(n_heads, length, length)}, got {tuple(got.shape)}"
        future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)  # (L, L)
        wanted = alibi_bias(n_heads, length).masked_fill(future, float("-inf"))  # (h, L, L): the package's answer
        blocked = torch.isinf(wanted)
        if torch.isnan(got).any():
            return "the mask holds NaN: use -inf (float('-inf')) for the keys a query must not read"
        if not torch.equal(torch.isneginf(got), blocked):
            if bool((got[blocked] <= -1e4).all()) and not torch.isneginf(got).any():
                return ("the future keys get a large negative number: that happens to work here, but write "
                        "float('-inf'), which no score can outweigh whatever its size")
            if torch.equal(torch.isneginf(got), blocked.transpose(-2, -1)):
                return "the future is the part above the diagonal (key after query): -inf there, not below"
            if torch.equal(torch.isneginf(got), blocked | torch.eye(length, dtype=torch.bool)):
                return "your mask also hides the diagonal: a token may read itself, only the keys after it are the future"
            return "the -inf entries should be exactly the future keys (above the diagonal)"
        if torch.allclose(got[~blocked], -wanted[~blocked], atol=1e-6):
            return "the bias has the wrong sign: far keys should lose score, not gain it"
        if not torch.allclose(got[~blocked], wanted[~blocked], atol=1e-6):
            return "the future is masked, but the bias on the past is not -slope × distance for every head"
    return None


alibi_mask = Exercise(
    "ALiBi as the fused kernel's float mask",
    _check_alibi_mask,
    "alibi_slopes(n_heads) gives one slope per head; query i is i - j positions after key j (torch.arange and "
    "broadcasting build that (L, L) grid). Then fill the future with float('-inf'): torch.triu(..., diagonal=1) of "
    "a square of ones marks the keys after each query",
    _alibi_mask_solution,
)
