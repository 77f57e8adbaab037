"""Chapter 14's "Your turn": merge two partial softmax results, write the running update, count the
causal tiles a tiled attention skips.

In the notebook::

    from stepbystep.exercises import ch14
    ch14.merge.check(my_merge)
    ch14.merge.hint()
    ch14.merge.solution()
"""
import math

import torch

from ..models import merge_partials, tile_plan
from .exercise import Exercise, as_number, expects_function

__all__ = ["merge", "running_update", "skipped_tiles"]


def _partial(scores, values):
    """The partial result (m, l, o) of one block: scores (b,), values (b, d)."""
    m = scores.max()
    p = torch.exp(scores - m)
    return m, p.sum(), p @ values / p.sum()


def _as_triple(result, what):
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        return None, f"return three things, {what}, got {type(result).__name__}"
    try:
        return [torch.as_tensor(part, dtype=torch.float64) for part in result], None
    except (TypeError, ValueError, RuntimeError):
        return None, f"return {what} as numbers or tensors"


# ----------------------------------------------------------------------------- 1. merge two partial results
def _merge_solution(m1, l1, o1, m2, l2, o2):
    m = max(m1, m2)  # the larger max: every exponent is then <= 0
    w1 = l1 * math.exp(m1 - m)  # part 1's sum, measured against the new max
    w2 = l2 * math.exp(m2 - m)
    l = w1 + w2
    o = (o1 * w1 + o2 * w2) / l  # each part's output weighted by its share of the sum
    return m, l, o


_MERGE_CASES = [  # two blocks of (scores, values)
    ((torch.tensor([1.0, 3.0, 0.5]), torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])),
     (torch.tensor([2.0, -1.0]), torch.tensor([[2.0, -1.0], [0.5, 0.5]]))),
    ((torch.tensor([0.0, 0.2]), torch.tensor([[1.0, 2.0], [3.0, 4.0]])),
     (torch.tensor([5.0, 4.0, 6.0]), torch.tensor([[0.0, 1.0], [1.0, 0.0], [-1.0, 2.0]]))),
]


@expects_function("merge(m1, l1, o1, m2, l2, o2)")
def _check_merge(answer):
    for first, second in _MERGE_CASES:
        a, b = _partial(*first), _partial(*second)
        args = (float(a[0]), float(a[1]), a[2].clone(), float(b[0]), float(b[1]), b[2].clone())
        got, problem = _as_triple(answer(*args), "(m, l, o)")
        if problem:
            return problem
        m, l, o = (part.double() for part in merge_partials(*a, *b))
        if torch.allclose(got[0], m) and torch.allclose(got[1], l, rtol=1e-5) and \
                got[2].shape == o.shape and torch.allclose(got[2], o, atol=1e-5):
            continue
        if not torch.allclose(got[0], m):
            return "the merged max is wrong: it is the max over both blocks' scores"
        if torch.allclose(got[1], torch.tensor(args[1] + args[4], dtype=torch.float64)):
            return ("your l adds the two sums as they are, but each was computed against its own block's max: "
                    "bring both to the merged max first")
        if not torch.allclose(got[1], l, rtol=1e-5):
            return "the merged sum l is not Σ exp(score - m) over both blocks"
        if got[2].shape != o.shape:
            return f"o should have the shape of each block's output {tuple(o.shape)}, got {tuple(got[2].shape)}"
        if torch.allclose(got[2], o * l, atol=1e-4):
            return "your o is not divided by the merged sum: it should be a weighted mean of the values"
        if torch.allclose(got[2], (args[2].double() + args[5].double()) / 2, atol=1e-5):
            return "your o is the plain mean of the two outputs: the block with the larger share of the sum weighs more"
        return "the merged o is not the softmax-weighted mean of the values of both blocks"
    return None


merge = Exercise(
    "merge two partial softmax results",
    _check_merge,
    "each l is a sum of exp(score - its own max): multiply by exp(old max - new max) to measure it against the "
    "new max. Each o is a weighted mean over its block; over both blocks, how much weight does each block carry?",
    _merge_solution,
)


# ----------------------------------------------------------------------------- 2. the running update
def _update_solution(m, l, acc, scores, values):
    m_new = max(m, scores.max().item())  # the max over every score so far
    p = torch.exp(scores - m_new)  # (b,): this block's terms, against the new max
    rescale = math.exp(m - m_new)  # the old terms were against the old max
    return m_new, l * rescale + p.sum(), acc * rescale + p @ values  # acc: Σ exp(score - m) · value


def _stream(answer, scores, values, block):
    m, l, acc = float("-inf"), 0.0, torch.zeros(values.shape[1], dtype=values.dtype)
    for start in range(0, len(scores), block):
        result = answer(m, l, acc.clone(), scores[start:start + block].clone(), values[start:start + block].clone())
        got, problem = _as_triple(result, "(m, l, acc)")
        if problem:
            return None, problem
        m, l, acc = float(got[0]), float(got[1]), got[2].to(values.dtype)
    return (m, l, acc), None


@expects_function("update(m, l, acc, scores, values)")
def _check_update(answer):
    generator = torch.Generator().manual_seed(14)
    cases = [(torch.randn(9, generator=generator) + 1000.0, 2),  # exp(1000) overflows: the max must be subtracted
             (torch.tensor([0.5, 2.0, 1.0, 3.5, 0.2, 4.0, 1.0]), 3),  # the max grows twice
             (torch.randn(20, generator=generator) * 3, 4)]
    for scores, block in cases:
        scores = scores.double()
        values = torch.randn(len(scores), 3, generator=generator, dtype=torch.float64)
        final, problem = _stream(answer, scores, values, block)
        if problem:
            return problem
        m, l, acc = final
        if m == float("-inf") or l == 0:
            return "after reading every block, m is still -inf or l still 0: update them from each block's scores"
        if not all(math.isfinite(x) for x in (m, l)) or not torch.isfinite(acc).all():
            return "with scores near 1000 your state overflows: every exponent should have the running max subtracted"
        if not math.isclose(m, float(scores.max()), rel_tol=1e-9):
            return "after the last block m should be the largest score read"
        exact = torch.softmax(scores, 0) @ values
        right_l = math.isclose(l, float(torch.exp(scores - scores.max()).sum()), rel_tol=1e-6)
        if right_l and torch.allclose(acc / l, exact, atol=1e-6):
            continue
        if right_l:
            return "your l is right but acc is not: when the max grows, the old acc must be rescaled like the old l"
        return "your l is not Σ exp(score - m) over every score read: when the max grows, rescale the old sum"
    return None


running_update = Exercise(
    "the running update of one row",
    _check_update,
    "l and acc both hold sums of terms exp(score - m). When the max changes from m to m_new, by what factor must "
    "every old term be multiplied to become exp(score - m_new)?",
    _update_solution,
)


# ----------------------------------------------------------------------------- 3. causal tiles skipped
def _skipped_solution(l_q, l_k, block_q, block_k):
    skipped = 0
    for q_start in range(0, l_q, block_q):
        last_query = min(q_start + block_q, l_q) - 1
        for k_start in range(0, l_k, block_k):
            skipped += k_start > last_query  # the tile's first key comes after its last query: all future
    return skipped


_TILE_CASES = [(256, 256, 64, 64), (12, 12, 4, 4), (10, 10, 3, 3), (12, 12, 4, 6), (12, 12, 6, 4), (8, 16, 4, 4),
               (16, 8, 4, 4), (100, 130, 32, 16)]


@expects_function("skipped(l_q, l_k, block_q, block_k)")
def _check_skipped(answer):
    for case in _TILE_CASES:
        got = as_number(answer(*case))
        if got is None:
            return "return one number: how many tiles lie wholly above the diagonal"
        wanted = tile_plan(*case, is_causal=True)[1].skipped
        if got == wanted:
            continue
        l_q, l_k, block_q, block_k = case
        n_q, n_k = math.ceil(l_q / block_q), math.ceil(l_k / block_k)
        if got == wanted + min(n_q, n_k) and block_q == block_k and l_q == l_k:
            return (f"for {case} your count includes the tiles on the diagonal: they hold the keys up to each "
                    f"query, and must be computed")
        if got == n_q * n_k - wanted:
            return f"for {case} you counted the tiles computed, not those skipped"
        if l_q == l_k and block_q == block_k and l_q % block_q == 0:
            return f"for {case} (equal blocks that divide the length) your count is off"
        return (f"for {case} your count is off: with lengths or blocks that differ, or a ragged last block, "
                "check each tile's first key against its last query")
    return None


skipped_tiles = Exercise(
    "causal tiles skipped",
    _check_skipped,
    "a tile can be skipped when every query in it comes before every key in it. Which query of a block comes "
    "last, and which key of a block comes first? The last block may be shorter than the others",
    _skipped_solution,
)
