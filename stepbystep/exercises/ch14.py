"""Chapter 14's "Your turn": merge two partial softmax results (empty ones too), write the running update
kept as a log-sum-exp, count the causal tiles a tiled attention skips.

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
    if m == float("-inf"):  # both parts empty: -inf - (-inf) is not a number, so nothing to compute
        return m, 0.0, o1 * 0
    w1 = l1 * math.exp(m1 - m)  # part 1's sum, measured against the new max; e^(-inf) = 0 for an empty part
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
        e1, e2 = math.exp(args[0] - float(m)), math.exp(args[3] - float(m))  # each block's max against the merged max
        no_l = args[2].double() * e1 + args[5].double() * e2  # the l left out of the weights
        if any(torch.allclose(got[2], no_l / total, atol=1e-5) for total in (e1 + e2, l)):
            return ("your o weighs each block by e^(its max - merged max) alone, which counts only its largest score: "
                    "a block's share is its whole sum l, measured against the merged max")
        raw = args[2].double() * args[1] + args[5].double() * args[4]  # each o weighed by its block's own l
        if any(torch.allclose(got[2], raw / total, atol=1e-5) for total in (args[1] + args[4], l)):
            return ("your o weighs each block by its own l, but each l was measured against its own block's max: "
                    "measure both against the merged max first")
        return "the merged o is not the softmax-weighted mean of the values of both blocks"
    part = _partial(*_MERGE_CASES[0][0])
    part = (float(part[0]), float(part[1]), part[2])
    empty = (float("-inf"), 0.0, torch.zeros(2))
    for args, what in (((*part, *empty), "the second part empty"), ((*empty, *part), "the first part empty"),
                       ((*empty, *empty), "both parts empty")):
        got, problem = _as_triple(answer(*(x.clone() if isinstance(x, torch.Tensor) else x for x in args)),
                                  "(m, l, o)")
        if problem:
            return problem
        if any(torch.isnan(x).any() for x in got[:2]):
            return (f"with {what} (every key masked: m = -inf, l = 0, o zeros) your merge gives NaN: "
                    "what is -inf - (-inf)?")
        if torch.isnan(got[2]).any():
            return (f"with {what} (every key masked: m = -inf, l = 0, o zeros) your m and l are fine but o is NaN: "
                    "what is 0 / 0? With no key at all, there is nothing to divide by")
        wanted = part if what != "both parts empty" else empty
        if not (float(got[0]) == float(wanted[0]) and math.isclose(float(got[1]), float(wanted[1]), rel_tol=1e-6)
                and got[2].shape == wanted[2].shape and torch.allclose(got[2], wanted[2].double(), atol=1e-6)):
            return f"with {what} the merge should give " + (
                "the other part unchanged" if what != "both parts empty" else "an empty part: m = -inf, l = 0, o zeros")
    return None


merge = Exercise(
    "merge two partial softmax results",
    _check_merge,
    "each l is a sum of exp(score - its own max): multiply by exp(old max - new max) to measure it against the "
    "new max. Each o is a weighted mean over its block; over both blocks, how much weight does each block carry? "
    "An empty part adds nothing to the sum; when both are empty there is no max to subtract",
    _merge_solution,
)


# ----------------------------------------------------------------------------- 2. the running update, as a log-sum-exp
def _update_solution(lse, o, scores, values):
    block_lse = torch.logsumexp(scores, dim=0)  # log Σ_block e^x, with the block's max subtracted inside
    new_lse = torch.logaddexp(torch.as_tensor(lse, dtype=scores.dtype), block_lse)  # log(e^lse + Σ_block e^x)
    # o was Σ e^(x - lse) v over the old scores: rescale it to the new lse, then add the block's terms
    return new_lse, o * torch.exp(lse - new_lse) + torch.exp(scores - new_lse) @ values


def _stream(answer, scores, values, block):
    lse, o = float("-inf"), torch.zeros(values.shape[1], dtype=values.dtype)
    for start in range(0, len(scores), block):
        result = answer(lse, o.clone(), scores[start:start + block].clone(), values[start:start + block].clone())
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            return None, f"return two things, (lse, o), got {type(result).__name__}"
        try:
            lse, o = float(result[0]), torch.as_tensor(result[1], dtype=values.dtype)
        except (TypeError, ValueError, RuntimeError):
            return None, "return lse as a number (or a one-element tensor) and o as a tensor (d,)"
        if o.shape != values.shape[1:]:
            return None, f"o should have the values' shape without the key axis, (d,) = {tuple(values.shape[1:])}, " \
                         f"got {tuple(o.shape)}"
    return (lse, o), None


def _wrong_streams(scores, values, block):
    """What two typical slips end with: (lse, o) with the logs added, and o never rescaled."""
    logs_added, lse, o = 0.0, float("-inf"), torch.zeros(values.shape[1], dtype=values.dtype)
    for start in range(0, len(scores), block):
        s, v = scores[start:start + block], values[start:start + block]
        logs_added += float(torch.logsumexp(s, 0))
        new_lse = float(torch.logaddexp(torch.tensor(lse, dtype=s.dtype), torch.logsumexp(s, 0)))
        o, lse = o + torch.exp(s - new_lse) @ v, new_lse
    return logs_added, o


def _rescales_backwards(answer):
    """Whether one step from a finite lse multiplies the old o by e^(new lse - old lse), the inverse rescale."""
    scores, values = torch.tensor([1.0, 2.5], dtype=torch.float64), torch.tensor([[1.0, 0.0], [0.0, 1.0]],
                                                                                 dtype=torch.float64)
    lse, o = 0.5, torch.tensor([0.3, -0.2], dtype=torch.float64)
    try:
        new_lse, new_o = answer(lse, o.clone(), scores.clone(), values.clone())
        new_o = torch.as_tensor(new_o, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return False
    right_lse = float(torch.logaddexp(torch.tensor(lse, dtype=torch.float64), torch.logsumexp(scores, 0)))
    inverted = o * math.exp(right_lse - lse) + torch.exp(scores - right_lse) @ values
    return new_o.shape == inverted.shape and bool(torch.allclose(new_o, inverted, atol=1e-6))


@expects_function("update(lse, o, scores, values)")
def _check_update(answer):
    generator = torch.Generator().manual_seed(14)
    cases = [(torch.tensor([0.5, 2.0, 1.0, 3.5, 0.2, 4.0, 1.0]), 3),  # the max grows twice
             (torch.randn(20, generator=generator) * 3, 4),
             (torch.randn(9, generator=generator) + 1000.0, 2)]  # e^1000 overflows: no sum of raw exponentials
    for scores, block in cases:
        scores = scores.double()
        values = torch.randn(len(scores), 3, generator=generator, dtype=torch.float64)
        final, problem = _stream(answer, scores, values, block)
        if problem:
            return problem
        lse, o = final
        if lse == float("-inf"):
            return "after reading every block, lse is still -inf: each block's scores must enter it"
        if _rescales_backwards(answer):
            return ("your o rescales the wrong way: when lse grows, every old weight e^(score - lse) shrinks, "
                    "so the old o must shrink with it")
        if not math.isfinite(lse) or not torch.isfinite(o).all():
            large = " (these scores are near 1000, and e^1000 overflows)" if scores.min() > 100 else ""
            return (f"your lse or o is not finite{large}: a log of a sum of exponentials must be computed with a max "
                    "subtracted, as torch.logsumexp and torch.logaddexp do")
        right_lse = math.isclose(lse, float(torch.logsumexp(scores, 0)), rel_tol=1e-6, abs_tol=1e-6)  # float32 too
        if right_lse and torch.allclose(o, torch.softmax(scores, 0) @ values, rtol=1e-4, atol=1e-6):
            continue
        logs_added, unrescaled = _wrong_streams(scores, values, block)
        if math.isclose(lse, logs_added, abs_tol=1e-6):
            return "your lse adds the blocks' logs: that multiplies their sums, and the sums must add"
        if not right_lse:
            return "your lse is not log Σ e^score over every score read"
        if torch.allclose(o, unrescaled, atol=1e-6):
            return "your lse is right but o is not: the old o was weighted against the old lse, and the lse has changed"
        return "your lse is right but o is not the softmax-weighted mean of the values read so far"
    return None


running_update = Exercise(
    "the running update, kept as a log-sum-exp",
    _check_update,
    "e^lse is the sum of e^score over the scores read so far: the new sum is the old one plus the block's. "
    "torch.logaddexp(a, b) is log(e^a + e^b) without overflow. o is a weighted mean with weights e^(score - lse): "
    "when lse changes, by what factor does each old weight change?",
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


# The first case's count (1) is neither count of the second (6 skipped, 10 computed): a constant that fits
# one case is told its count is off, never by chance that it counted the tiles computed.
_TILE_CASES = [(12, 12, 4, 6), (256, 256, 64, 64), (12, 12, 4, 4), (10, 10, 3, 3), (12, 12, 6, 4), (8, 16, 4, 4),
               (16, 8, 4, 4), (100, 130, 32, 16)]


def _count_skipped(l_q, l_k, block_q, block_k, skip):
    """How many tiles ``skip(q_start, q_end, k_start, k_end)`` leaves out."""
    return sum(bool(skip(q_start, min(q_start + block_q, l_q), k_start, min(k_start + block_k, l_k)))
               for q_start in range(0, l_q, block_q) for k_start in range(0, l_k, block_k))


def _slip_counts(l_q, l_k, block_q, block_k):
    """What four typical slips count, each with what the checker tells it."""
    offset = l_k - l_q  # the bottom-right diagonal: query i reads keys 0..i + L_k - L_q
    slips = {
        "you put the diagonal bottom-right (the last query reading every key), as after a cache: is_causal here "
        "is the top-left one, query i reads keys 0 to i":
            lambda qs, qe, ks, ke: ks > qe - 1 + offset,
        "you also skip the tiles whose first key is their last query: a query may read its own key, so the "
        "diagonal itself must be computed":
            lambda qs, qe, ks, ke: ks >= qe - 1,
        "you skip tiles that the diagonal crosses: a tile with even one key a query may read must be computed; "
        "only tiles wholly above the diagonal are skipped":
            lambda qs, qe, ks, ke: ke - 1 > qs,
        "you compare each tile's first key with its first query: the later queries of the block read further; "
        "check each tile's first key against its last query":
            lambda qs, qe, ks, ke: ks > qs,
    }
    return {message: _count_skipped(l_q, l_k, block_q, block_k, skip) for message, skip in slips.items()}


@expects_function("skipped(l_q, l_k, block_q, block_k)")
def _check_skipped(answer):
    counts = []
    for case in _TILE_CASES:
        got = as_number(answer(*case))
        if got is None:
            return "return one number: how many tiles lie wholly above the diagonal"
        counts.append(got)
    wanted_counts = [tile_plan(*case, is_causal=True)[1].skipped for case in _TILE_CASES]
    if counts != wanted_counts:  # a slip that explains every count gets its own message
        slips = [_slip_counts(*case) for case in _TILE_CASES]
        for message in slips[0]:
            if all(slip[message] == got for slip, got in zip(slips, counts)):
                return message
    for case, got, wanted in zip(_TILE_CASES, counts, wanted_counts):
        if got == wanted:
            continue
        l_q, l_k, block_q, block_k = case
        n_q, n_k = math.ceil(l_q / block_q), math.ceil(l_k / block_k)
        if got == n_q * n_k - wanted:
            return (f"for {case} your count is the number of tiles computed (those below the diagonal and on it), "
                    "not of those skipped")
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
