"""Chapter 13's "Your turn": the previous-token score, the induction score, where the stripe lies,
and which heads break in-context copying.

In the notebook::

    from stepbystep.exercises import ch13
    ch13.previous_token.check(my_previous_token_score)
    ch13.previous_token.hint()
    ch13.previous_token.solution()
"""
import functools
import itertools
import math

import torch

from ..data.repeated_sequences import repeated_sequences
from ..experiments.induction import VOCAB_SIZE, train_on_repeats
from ..interpret import ablate_heads, half_losses, induction_score, per_position_loss
from .exercise import Exercise, as_number, expects_function

__all__ = ["previous_token", "induction", "stripe", "breaking_heads"]


def _random_weights(n, h, length, seed):
    """Causal attention weights ``(n, h, length, length)`` with random rows summing to 1."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, h, length, length, generator=generator) * 2  # (n, h, L, L)
    future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)  # (L, L)
    return scores.masked_fill(future, float("-inf")).softmax(dim=-1)


def _as_scores(result, n_heads):
    """The learner's result as a float tensor ``(n_heads,)``, or ``None``."""
    if not isinstance(result, torch.Tensor):
        return None
    result = result.detach().float().flatten() if result.numel() == n_heads else result
    return result if result.shape == (n_heads,) else None


def _close(a, b):
    return bool(torch.allclose(a, b, atol=1e-5))


# ----------------------------------------------------------------------------- 1. previous-token score
def _previous_token_solution(weights):
    # query i (from 1 on) and key i - 1: the diagonal just below the main one
    before = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (N, H, L - 1)
    return before.mean(dim=(0, 2))  # (H,): the mean over the sequences and the queries


@expects_function("my_previous_token_score(weights)")
def _check_previous_token(answer):
    weights = _random_weights(3, 4, 7, seed=0)  # (3, 4, 7, 7)
    got = _as_scores(answer(weights.clone()), 4)
    if got is None:
        return "return one score per head: a tensor of shape (H,), here (4,)"
    if _close(got, _previous_token_solution(weights)):
        return None
    diagonal = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (N, H, L - 1)
    if _close(got, diagonal.sum(dim=-1).mean(dim=0) / weights.shape[-1]):
        return "the first query has no key before it: average over the queries that do"
    if _close(got, diagonal.sum(dim=(0, 2))):
        return "the score is a mean weight, between 0 and 1: yours is a sum"
    if _close(got, weights.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2))):
        return "that is the weight each query puts on itself, not on the key before it"
    if _close(got, weights.transpose(-2, -1).diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))):
        return "rows are queries and columns keys: you read the key after the query (always 0 under the causal mask)"
    perfect = torch.zeros(1, 2, 5, 5)
    perfect[0, :, 0, 0] = 1.0
    perfect[0, :, torch.arange(1, 5), torch.arange(4)] = 1.0
    if not _close(_as_scores(answer(perfect), 2), torch.ones(2)):
        return "a head that always reads the key before should score exactly 1.0; yours does not"
    return "the scores differ from the mean weight on the key just before each query"


previous_token = Exercise(
    "the previous-token score",
    _check_previous_token,
    hint="Write out the (L, L) weights of one head for L = 4: where do the entries (query i, key i - 1) lie, "
         "and how many queries have such a key?",
    solution=_previous_token_solution,
)


# ----------------------------------------------------------------------------- 2. induction score
def _induction_solution(weights, ids):
    n, h, length, _ = weights.shape
    total, count = torch.zeros(h), 0
    for b in range(n):
        for i in range(length):
            earlier = [j for j in range(i) if ids[b, j] == ids[b, i]]  # the earlier occurrences of token i
            if earlier:
                total += sum(weights[b, :, i, j + 1] for j in earlier)  # (H,): on the keys after them
                count += 1
    return total / count  # (H,): averaged over the queries whose token occurred before


def _induction_cases():
    ids = repeated_sequences(3, 6, 200, seed=7)  # (3, 12): 200 tokens, so no token occurs twice in a half
    return _random_weights(3, 2, 12, seed=1), ids


def _irregular_case():
    """Sequences where tokens recur at irregular distances (each at most twice): positions alone do not tell."""
    generator = torch.Generator().manual_seed(3)
    ids = torch.stack([torch.randperm(200, generator=generator)[:12] for _ in range(3)])  # (3, 12), all distinct
    ids[0, 7], ids[0, 10] = ids[0, 2], ids[0, 4]  # token 2 again 5 later, token 4 again 6 later
    ids[1, 5], ids[1, 11] = ids[1, 0], ids[1, 8]
    ids[2, 9] = ids[2, 1]
    return _random_weights(3, 2, 12, seed=2), ids


@expects_function("my_induction_score(weights, ids)")
def _check_induction(answer):
    weights, ids = _induction_cases()
    got = _as_scores(answer(weights.clone(), ids.clone()), 2)
    if got is None:
        return "return one score per head: a tensor of shape (H,), here (2,)"
    wanted = induction_score(weights, ids)
    if _close(got, wanted):
        return _check_irregular(answer)
    repeat = torch.arange(6, 12)
    on_occurrence = weights[:, :, repeat, repeat - 6].mean(dim=(0, 2))  # the earlier occurrence itself
    on_before = weights[:, :, repeat, repeat - 7].mean(dim=(0, 2))
    if _close(got, on_occurrence):
        return "you score the earlier occurrence itself: the head reads the token that came after it"
    if _close(got, on_before):
        return "you score the key before the earlier occurrence; the head reads the one after it"
    all_queries = weights[:, :, repeat, repeat - 5].sum(dim=(0, 2)) / (weights.shape[0] * weights.shape[2])
    if _close(got, all_queries):
        return "average only over the queries whose token occurred before (here, the repeat), not over all of them"
    return "the scores differ from the mean weight on the key right after the earlier occurrence"


def _check_irregular(answer):
    weights, ids = _irregular_case()
    got = _as_scores(answer(weights.clone(), ids.clone()), 2)
    if got is not None and _close(got, induction_score(weights, ids)):
        return None
    per_sequence = torch.stack([induction_score(weights[i:i + 1], ids[i:i + 1]) for i in range(len(ids))])  # (N, H)
    if got is not None and _close(got, per_sequence.mean(dim=0)):
        return ("right per sequence, but these sequences hold different numbers of counted queries: average over "
                "all the counted queries together, not per sequence first")
    return ("right on a sequence written twice, wrong where tokens recur at other distances: find each "
            "query's earlier occurrence from the tokens, not from the positions")


induction = Exercise(
    "the induction score",
    _check_induction,
    hint="For each query, find the earlier positions j that hold the same token; the head should read key j + 1. "
         "Sum the weight on those keys, then average over the queries that have an earlier occurrence.",
    solution=_induction_solution,
)


# ----------------------------------------------------------------------------- 3. where the stripe lies
def _stripe_solution(length, gap):
    # the query at length + gap + k holds token k; the token after it sits at k + 1
    return length + gap - 1


@expects_function("my_stripe_offset(length, gap)")
def _check_stripe(answer):
    for length, gap in ((9, 0), (12, 4), (5, 3), (6, 7)):  # (5, 3) not first: there length - gap - 1 is 1
        got = as_number(answer(length, gap))
        if got is None:
            return "return a number of positions"
        wanted = _stripe_solution(length, gap)
        if got == wanted:
            continue
        if got == wanted + 1:
            return "that offset reaches the earlier occurrence itself; the head reads the token after it"
        if got == wanted + 2:
            return "that is one position too far back: the head reads the token after the earlier occurrence"
        if got == length - 1 and gap:
            return "the gap's tokens lie between the two copies too: count them"
        if got == length - gap - 1:
            return "the gap's tokens lie between the two copies: they add to the distance back, not take from it"
        if got == 1:
            return "that is the previous-token head's offset, in layer 0; the induction head reads further back"
        if got == -wanted:
            return "count the positions back as a positive number: the key comes before the query"
        return f"for a length of {length} and a gap of {gap}, your offset does not land on the key the head reads"
    return None


stripe = Exercise(
    "where the stripe lies",
    _check_stripe,
    hint="Take the query at position length + gap + k in the repeat: which token does it hold, where did that token "
         "occur first, and where is the token that came after it?",
    solution=_stripe_solution,
)


# ----------------------------------------------------------------------------- 4. which heads break copying
CHECK_SEED = 85  # a seed the chapter does not show, whose only smallest set holds a head scoring below 0.5,
# every other set within no less than 0.15 of the line, at one thread and at two


@functools.lru_cache(maxsize=1)
def _trained_model():
    """The chapter's two-layer model on a seed it does not show, trained once per session, and test sequences."""
    model, _ = train_on_repeats(n_layers=2, seed=CHECK_SEED, steps=300)
    return model, repeated_sequences(128, 12, VOCAB_SIZE, seed=0)


def _repeat_loss(model, ids, heads):
    with ablate_heads(model, list(heads)), torch.no_grad():
        return half_losses(per_position_loss(model(ids), ids), ids.shape[1] // 2)[1].item()


def _breaks(model, ids, heads):
    return _repeat_loss(model, ids, heads) > math.log(VOCAB_SIZE) / 2


def _breaking_solution(model, ids):
    def copying_breaks(heads):  # the loss on the repeat above half of ln V with `heads` off
        with ablate_heads(model, heads), torch.no_grad():
            repeat = half_losses(per_position_loss(model(ids), ids), ids.shape[1] // 2)[1]
        return repeat > math.log(model.vocab_size) / 2

    n_heads = model.layers[0].self_attn_heads.n_heads
    for size in range(1, n_heads + 1):  # the sets of one head, then of two, ...: the first that breaks is smallest
        for heads in itertools.combinations(range(n_heads), size):
            if copying_breaks([(0, head) for head in heads]):
                return [(0, head) for head in heads]
    return []  # nothing in layer 0 breaks it


def _check_breaking_with(answer, model, ids):
    heads = answer(model, ids.clone())
    if not isinstance(heads, (list, tuple, set)) or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in heads):
        return "return a list of (layer, head) pairs"
    heads = sorted({(int(layer), int(head)) for layer, head in heads})
    if any(layer != 0 for layer, _ in heads):
        return "give layer-0 heads only: switching off layer 1 would break it too easily"
    n_heads = model.layers[0].self_attn_heads.n_heads
    if any(not 0 <= head < n_heads for _, head in heads):
        return f"head indices run from 0 to {n_heads - 1}"
    if not heads:
        return "with no head switched off the model copies perfectly well: name some heads"
    if not _breaks(model, ids, heads):
        return "with these heads off the model still copies: a head you left on does the job"
    for pair in heads:
        if _breaks(model, ids, [other for other in heads if other != pair]):
            return "your set breaks the copying, but a smaller part of it does too: drop the heads it does not need"
    for size in range(1, len(heads)):
        if any(_breaks(model, ids, [(0, head) for head in others])
               for others in itertools.combinations(range(n_heads), size)):
            return ("every head of your set is needed by the others, but another set of fewer heads breaks the "
                    "copying too: the smallest set need not hold your best-scoring heads")
    return None


@expects_function("my_breaking_heads(model, ids)")
def _check_breaking(answer):
    model, ids = _trained_model()
    return _check_breaking_with(answer, model, ids)


breaking_heads = Exercise(
    "which heads break in-context copying",
    _check_breaking,
    hint="The induction heads in layer 1 need layer 0 to tell them which token came before each key, and more "
         "than one head may do it, so a head's previous-token score need not say whether it is needed. ablate_heads "
         "switches a set off; the repeat's loss says whether the copying broke. Which sets must you try to be sure "
         "that no smaller one breaks it too?",
    solution=_breaking_solution,
)
