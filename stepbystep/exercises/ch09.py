"""Chapter 09's "Your turn": top-k filtering, one cached attention step, the completion-only targets,
the scale of tied logits, top-p filtering, the share of repeated n-grams.

In the notebook::

    from stepbystep.exercises import ch09
    ch09.top_k.check(my_top_k)
    ch09.top_k.hint()
    ch09.top_k.solution()
"""
import math

import torch

from ..data.date_completions import IGNORE_INDEX, completion_targets
from ..models import NarrowMultiHeadAttention, top_k_filter, top_p_filter
from ..models import repeat_share as _repeat_share_solution  # the package's measure (chapter 15 counts with it)
from .exercise import Exercise, expects_function

__all__ = ["top_k", "cached_step", "completion_mask", "tied_logit_std", "top_p", "repeat_share"]


# ----------------------------------------------------------------------------- 1. top-k filtering
def _top_k_solution(logits, k):
    kth_best = logits.topk(k, dim=-1).values[..., -1:]  # (N, 1): the k-th largest logit of each row
    # the others can never be drawn (a logit tied with the k-th survives too: top_k_filter keeps exactly k)
    return logits.masked_fill(logits < kth_best, float("-inf"))


@expects_function("top_k(logits, k)")
def _check_top_k(answer):
    generator = torch.Generator().manual_seed(9)
    logits = torch.randn(4, 12, generator=generator) * 2  # (4, 12): no ties
    for k in (1, 3, 12):
        got = answer(logits.clone(), k)
        if not isinstance(got, torch.Tensor) or got.shape != logits.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            return f"return a tensor of the logits' shape {tuple(logits.shape)}, got {shape}"
        wanted = top_k_filter(logits, k)
        kept = torch.isfinite(got)
        right = torch.isfinite(wanted)  # (4, 12): the k most likely of every row
        probabilities = _as_probabilities(got, logits, wanted)
        if probabilities is not None:
            return f"with k={k} {probabilities}"
        if k < logits.shape[-1] and torch.equal(got[right], logits[right]) and not kept[~right].logical_not().any() \
                and got[~right].unique().numel() == 1:
            return (f"with k={k} the right tokens keep their logits, but the left-out ones get a finite value: "
                    f"softmax still gives them some probability; the left-out logits must be -inf")
        if not torch.equal(kept.sum(dim=-1), torch.full((4,), k)):
            return f"with k={k} every row should keep k tokens (finite logits), yours keeps {kept.sum(dim=-1).tolist()}"
        if not torch.equal(kept, torch.isfinite(wanted)):
            return f"with k={k} the right number of tokens is kept, but not the most likely ones in every row"
        if not torch.equal(got[kept], logits[kept]):
            return "the kept logits must stay as they are: only the others change"
        if not torch.all(got[~kept] == float("-inf")):
            return "the left-out logits should be -inf, so that softmax gives them probability 0"
    return None


def _as_probabilities(got, logits, wanted):
    """What is wrong when a top-k answer returns probabilities where logits were asked for, or None."""
    probs = torch.softmax(logits, dim=-1)  # (N, V): the model's probabilities, unfiltered
    right = torch.isfinite(wanted)  # (N, V): the tokens to keep
    if torch.isfinite(got).all() and (got >= 0).all() and (got.sum(dim=-1) <= 1 + 1e-4).all():
        if torch.allclose(got, torch.softmax(wanted, dim=-1), atol=1e-5):
            return ("your function returns the filtered *probabilities* (softmax already applied), but the sampler "
                    "applies softmax itself: return logits, with -inf for the tokens left out")
        if torch.allclose(got, probs.masked_fill(~right, 0.0), atol=1e-5):
            return ("your function returns probabilities with the left-out tokens set to 0, and the kept ones no "
                    "longer sum to 1 (they were not renormalised); return logits instead, with -inf for the "
                    "tokens left out: the softmax that follows renormalises")
        return "your values look like probabilities (between 0 and 1, rows summing to at most 1): return logits"
    kept = torch.isfinite(got)
    if torch.equal(kept, right) and torch.allclose(got[kept], probs[kept], atol=1e-5):
        return ("the right tokens are kept, but with their probabilities, not their logits: keep the logits "
                "themselves, the softmax comes later")
    return None


top_k = Exercise(
    "top-k filtering",
    _check_top_k,
    "which single number, per row, separates the logits to keep from the others? torch.topk can find it; "
    "then what value makes softmax give a token probability 0, and which tensor method writes it where a "
    "condition holds?",
    _top_k_solution,
)


# ----------------------------------------------------------------------------- 2. one cached step
def _cached_step_solution(attention, x_new, keys, values):
    q = attention.make_chunks(attention.linear_query(x_new))  # (N, h, 1, d_k): the new token's query
    keys = torch.cat([keys, attention.make_chunks(attention.linear_key(x_new))], dim=2)  # (N, h, t + 1, d_k)
    values = torch.cat([values, attention.make_chunks(attention.linear_value(x_new))], dim=2)  # (N, h, t + 1, d_k)
    weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_k), dim=-1)  # (N, h, 1, t + 1)
    return attention.output_function(weights @ values), keys, values  # (N, 1, d_model), keys, values


def _cached_case():
    """A small attention module and a stream: the cache holds its first 5 tokens, the 6th is new."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(9)
        attention = NarrowMultiHeadAttention(2, 8, dropout=0.0).eval()
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(10))  # (N, t + 1, d_model)
    with torch.no_grad():
        keys = attention.make_chunks(attention.linear_key(x[:, :5]))  # (N, h, 5, d_k)
        values = attention.make_chunks(attention.linear_value(x[:, :5]))  # (N, h, 5, d_k)
        full = attention(x, mask=torch.ones(1, 6, 6, dtype=torch.bool).tril())[:, -1:]  # (N, 1, d_model)
    return attention, x, keys, values, full


@expects_function("cached_step(attention, x_new, keys, values)")
def _check_cached_step(answer):
    attention, x, keys, values, full = _cached_case()
    with torch.no_grad():
        try:
            result = answer(attention, x[:, 5:], keys.clone(), values.clone())
        except RuntimeError as error:
            if "must match except in dimension" not in str(error):
                raise
            return ("torch.cat failed: the cached keys are (N, h, t, d_k) = (2, 2, 5, 4) and the new token's "
                    "(2, 2, 1, 4); they can only be joined along the dimension where their sizes differ, the "
                    f"tokens' ({error})")
    if not isinstance(result, tuple) or len(result) != 3:
        return "return three things: the output for the new token, and the keys and values with it appended"
    output, new_keys, new_values = result
    if not all(isinstance(t, torch.Tensor) for t in result):
        return "the output, keys and values should all be tensors"
    if tuple(new_keys.shape) != (2, 2, 6, 4) or tuple(new_values.shape) != (2, 2, 6, 4):
        return (f"the cache held 5 tokens and one arrived: keys and values should be (N, h, 6, d_k) = (2, 2, 6, 4), "
                f"got {tuple(new_keys.shape)} and {tuple(new_values.shape)}")
    if not torch.allclose(new_keys[:, :, :5], keys, atol=1e-6) or not torch.allclose(new_values[:, :, :5], values,
                                                                                       atol=1e-6):
        return "the cached keys and values must stay first, unchanged: append the new ones after them (dim=2)"
    if tuple(output.shape) != (2, 1, 8):
        return f"the output should be one row per sequence, (N, 1, d_model) = (2, 1, 8), got {tuple(output.shape)}"
    if torch.allclose(output, full, atol=1e-5):
        return None
    if torch.allclose(output, _unscaled(attention, x[:, 5:], new_keys, new_values), atol=1e-5):
        return "the scores must be divided by √d_k, as in every attention of the course"
    if torch.allclose(output, _unscaled(attention, x[:, 5:], new_keys, new_values, attention.d_model), atol=1e-5):
        return "the scores are divided by √d_model: scale by √d_k, the size of one head's query and key"
    if torch.allclose(output, _unprojected(attention, x[:, 5:], new_keys, new_values), atol=1e-5):
        return ("the heads are merged but not projected: attention ends with its output layer "
                "(output_function does both, linear_out is the projection)")
    if torch.allclose(output, _attend(attention, x[:, 5:], new_keys[:, :, :1], new_values[:, :, :1]), atol=1e-5):
        return ("the new token reads only the first key: a causal mask made for one query and t + 1 keys lets "
                "that query see key 0 alone (PyTorch's is_causal=True lines its triangle up at the top left). "
                "Which keys may the newest token of a stream read?")
    if torch.allclose(output, _attend(attention, x[:, 5:], keys, values), atol=1e-5):
        return ("the new token reads the cached tokens but not itself: does a token read its own key and value "
                "in causal attention?")
    if any(torch.allclose(output, _attend(attention, x[:, 5:], new_keys, new_values, softmax_dim=dim), atol=1e-5)
           for dim in (1, 2)):
        return ("the weights do not sum to 1 over the keys: the softmax runs over the wrong dimension of the "
                "(N, h, 1, t + 1) scores")
    return "the output differs from the last row of attention over the whole stream"


def _unprojected(attention, x_new, keys, values):
    q = attention.make_chunks(attention.linear_query(x_new))
    weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_k), dim=-1)
    context = weights @ values  # (N, h, 1, d_k)
    return context.transpose(1, 2).reshape(x_new.shape[0], 1, -1)  # heads merged, no linear_out


def _attend(attention, x_new, keys, values, softmax_dim=-1):
    """The new token's attention over ``keys`` and ``values`` ``(N, h, k, d_k)``, with the softmax over
    ``softmax_dim`` of the ``(N, h, 1, k)`` scores: the right step with the right keys and -1."""
    q = attention.make_chunks(attention.linear_query(x_new))  # (N, h, 1, d_k)
    weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_k), dim=softmax_dim)  # (N, h, 1, k)
    return attention.output_function(weights @ values)  # (N, 1, d_model)


def _unscaled(attention, x_new, keys, values, dim=1):
    q = attention.make_chunks(attention.linear_query(x_new))
    weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(dim), dim=-1)  # dim 1: no scaling
    return attention.output_function(weights @ values)


cached_step = Exercise(
    "one cached attention step",
    _check_cached_step,
    "which of the query, key and value does the new token compute for itself, and which come from the cache? "
    "Along which dimension of (N, h, t, d_k) do the tokens lie? And does a token at the end of the stream need "
    "a mask?",
    _cached_step_solution,
)


# ----------------------------------------------------------------------------- 3. the completion mask
def _completion_mask_solution(stream, prompt_length):
    targets = stream[1:].clone()  # position i predicts token i + 1
    targets[:prompt_length - 1] = -100  # the targets that are prompt tokens add no loss
    return targets


_STREAMS = ((torch.tensor([1, 40, 41, 9, 42, 20, 5, 6, 7, 2]), 5),
            (torch.tensor([1, 33, 9, 42, 12, 13, 2]), 4))


@expects_function("completion_targets(stream, prompt_length)")
def _check_completion_mask(answer):
    for stream, prompt_length in _STREAMS:
        got = answer(stream.clone(), prompt_length)
        if not isinstance(got, torch.Tensor):
            return f"return a tensor of targets, got {type(got).__name__}"
        wanted = completion_targets(stream, prompt_length)
        if got.shape != wanted.shape:
            return (f"a stream of {len(stream)} tokens has {len(wanted)} next-token targets (the last token "
                    f"predicts nothing), got {len(got)}")
        if got.dtype != torch.long:
            if got.dtype.is_floating_point:
                return (f"targets must be integer ids (torch.long), got {got.dtype}: the loss reads "
                        f"floating-point targets as probabilities")
            return (f"targets must be integer ids (torch.long), got {got.dtype}: F.cross_entropy needs "
                    f"torch.long class ids")
        counted = got != IGNORE_INDEX
        if counted.any() and not (counted & (wanted != IGNORE_INDEX)).any():
            return "you count the prompt's targets and mask the completion's: it should be the other way round"
        if counted.any() and torch.equal(got[counted], stream[:-1][counted]):
            return ("the counted targets are the tokens at their own positions: position i must predict token "
                    "i + 1, so shift the stream by one")
        if torch.equal(got, stream[1:]):
            return "every target is counted: the prompt's targets should be IGNORE_INDEX (-100)"
        if torch.equal(counted, wanted != IGNORE_INDEX) and not torch.equal(got[counted], wanted[counted]):
            return "the right targets are counted, but they are not the next tokens: shift the stream by one"
        if not torch.equal(counted, wanted != IGNORE_INDEX):
            n_wanted = int((wanted != IGNORE_INDEX).sum())
            if int(counted.sum()) == n_wanted + 1:
                return "one prompt token too many is counted: is the separator '=' a target of the loss?"
            if int(counted.sum()) == n_wanted - 1:
                return "one completion token is ignored: the first one, predicted from the separator, must count"
            if int(counted.sum()) == len(got) and not torch.equal(got, stream[1:]):
                return "nothing is ignored: ignored targets must be exactly IGNORE_INDEX (-100), the value the loss skips"
            return "the counted positions are not the completion's"
        if not torch.equal(got, wanted):
            return "the counted positions are right, but their targets are not the next tokens"
    return None


completion_mask = Exercise(
    "the completion-only targets",
    _check_completion_mask,
    "input position i is scored on token i + 1: which slice of the stream are the targets? Then, which of "
    "those targets is the first one the loss should count: the token predicted from the separator '=' is it "
    "a prompt token or an answer token?",
    _completion_mask_solution,
)


# ----------------------------------------------------------------------------- 4. tied logits' scale
def _tied_logit_std_solution(embedding_std, d_model):
    # a logit is h · e: d_model products of a unit-variance state component and an N(0, std²) weight
    return embedding_std * math.sqrt(d_model)


@expects_function("tied_logit_std(embedding_std, d_model)")
def _check_tied_logit_std(answer):
    cases = ((0.3, 64), (1.0, 64), (0.3, 16), (0.1, 256))
    got = []
    for embedding_std, d_model in cases:
        value = answer(embedding_std, d_model)
        if not isinstance(value, (int, float)) and not (isinstance(value, torch.Tensor) and value.numel() == 1):
            return f"return one number, the predicted standard deviation, got {type(value).__name__}"
        got.append(float(value))
    wanted = [_tied_logit_std_solution(*case) for case in cases]
    if all(abs(g - w) <= 0.05 * w for g, w in zip(got, wanted)):
        return None
    if any(not g > 0 for g in got):
        return "a standard deviation is a positive number"
    if abs(got[1] / got[0] - 1.0 / 0.3) > 0.05 * (1.0 / 0.3):
        return ("a logit is a sum of products with the embedding: when the embedding's standard deviation is "
                "multiplied by 10/3, by how much is the logits' multiplied?")
    ratio = got[0] / got[2]  # d_model 64 against 16
    if abs(ratio - 4) < 0.2:
        return ("the prediction grows like d_model; the terms of a sum of independent products add their "
                "variances, not their standard deviations")
    if abs(ratio - 1) < 0.05:
        return "the prediction does not change with d_model, but a logit sums d_model products"
    if abs(ratio - 2) < 0.1:
        return ("the prediction grows the right way with both the embedding's standard deviation and d_model, "
                "but its constant is off: what is the variance of one product of a state component (variance "
                "about 1) and an embedding entry?")
    return "the prediction scales with the embedding's standard deviation, but not with d_model as a dot product does"


tied_logit_std = Exercise(
    "the scale of tied logits",
    _check_tied_logit_std,
    "the final LayerNorm gives each component of the state a variance of about 1; a tied logit is the dot "
    "product of that state with one row of the embedding. What is the variance of a sum of d_model "
    "independent products?",
    _tied_logit_std_solution,
)


# ----------------------------------------------------------------------------- 5. top-p filtering
def _top_p_solution(logits, p):
    probs = torch.softmax(logits, dim=-1)  # (N, V)
    sorted_probs, order = probs.sort(dim=-1, descending=True)  # (N, V)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (N, V): what the more likely tokens hold
    keep_sorted = mass_before < p  # (N, V): the nucleus, the token that crosses p included
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # (N, V), back in token order
    return logits.masked_fill(~keep, float("-inf"))


def _logit_nuclei(logits, p):
    """A typical mistake: the running sum taken over the sorted logits, not the probabilities, with
    and without the token itself. Returns both kept masks, each ``(N, V)``."""
    sorted_logits, order = logits.sort(dim=-1, descending=True)  # (N, V)
    running = sorted_logits.cumsum(dim=-1)  # (N, V)
    return [torch.zeros_like(keep).scatter(-1, order, keep)  # (N, V), back in token order
            for keep in (running - sorted_logits < p, running <= p)]


@expects_function("top_p(logits, p)")
def _check_top_p(answer):
    generator = torch.Generator().manual_seed(11)
    logits = torch.randn(5, 10, generator=generator) * 2  # (5, 10): no ties, no mass exactly at p
    logits[0] = torch.tensor([6.0, 0, 0, 0, 0, 0, 0, 0, 0, 0])  # a confident row: one token holds > 0.9
    for p in (0.5, 0.9):
        got = answer(logits.clone(), p)
        if not isinstance(got, torch.Tensor) or got.shape != logits.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            return f"return a tensor of the logits' shape {tuple(logits.shape)}, got {shape}"
        kept = torch.isfinite(got)
        wanted = torch.isfinite(top_p_filter(logits, p))
        if not torch.equal(kept, wanted) and any(torch.equal(kept, mistake) for mistake in _logit_nuclei(logits, p)):
            return (f"with p={p} your running sum adds up logits: p is a share of the probability, and logits "
                    f"are not probabilities (they can be negative, and need not sum to 1)")
        if not kept.any(dim=-1).all():
            return (f"with p={p} some row keeps no token at all: the most likely token is always kept, and the "
                    f"token whose probability crosses p belongs to the nucleus")
        if torch.equal(kept, wanted):
            if not torch.equal(got[kept], logits[kept]):
                return "the kept logits must stay as they are: only the others change"
            if not torch.all(got[~kept] == float("-inf")):
                return "the left-out logits should be -inf, so that softmax gives them probability 0"
            continue
        n_kept, n_wanted = kept.sum(dim=-1), wanted.sum(dim=-1)  # (5,), (5,)
        if torch.equal(n_kept, n_wanted):
            return (f"with p={p} every row keeps the right number of tokens, but not the most likely ones: "
                    f"is the decision put back in the tokens' own order?")
        if (kept <= wanted).all():
            return (f"with p={p} a row keeps less than p of the probability: the token whose probability "
                    f"crosses p belongs to the nucleus")
        if (kept >= wanted).all():
            return f"with p={p} some row keeps more tokens than it needs: the nucleus is the *fewest* that reach p"
        return f"with p={p} the kept tokens are not the most likely tokens of every row"
    return None


top_p = Exercise(
    "top-p (nucleus) filtering",
    _check_top_p,
    "sort each row's probabilities from the most likely down: for each token, how much probability do the "
    "tokens before it hold? A token belongs to the nucleus while that amount has not yet reached p. Then put "
    "the decision back in the original token order",
    _top_p_solution,
)


# ----------------------------------------------------------------------------- 6. repeated n-grams
def _windows(tokens, n, step=1):
    tokens = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
    return [tuple(tokens[i:i + n]) for i in range(0, len(tokens) - n + 1, step)]


def _share(windows, denominator):
    return (len(windows) - len(set(windows))) / denominator if denominator else 0.0


# Typical mistakes, each a function of (tokens, n), with what the checker says about it.
_REPEAT_MISTAKES = (
    (lambda tokens, n: sum(_windows(tokens, n).count(w) > 1 for w in _windows(tokens, n))
     / max(1, len(_windows(tokens, n))),
     "the first occurrence of a repeated window is counted too, but only a window that occurred *before* "
     "repeats something"),
    (lambda tokens, n: _share(_windows(tokens, n), len(tokens)),
     "divide by the number of windows of n tokens, not by the number of tokens"),
    (lambda tokens, n: _share(_windows(tokens, n)[:-1], len(_windows(tokens, n)) - 1),
     "the last window of n tokens is missing: a sequence of L tokens has L - n + 1 of them"),
    (lambda tokens, n: _repeat_share_solution("".join(str(t) for t in _windows(tokens, 1) for t in t), n),
     "your windows are of characters, not of tokens: joined into one string, the ids 1, 21, 12, 1 read "
     "'12112...' and seem to repeat; keep each window a tuple of token ids"),
    (lambda tokens, n: _share(["".join(map(str, window)) for window in _windows(tokens, n)], len(_windows(tokens, n))),
     "each window is joined into a string without a separator, so the windows (1, 21) and (12, 1) both read "
     "'121': keep each window a tuple of token ids"),
    (lambda tokens, n: _share(_windows(tokens, n, step=n), len(_windows(tokens, n, step=n))),
     "the windows start at every position, one token apart, and they overlap ('abc', 'bca', 'cab', 'abc')"),
    (lambda tokens, n: _share(_windows(tokens, n), 1),
     "that is a count of repeated windows: return their share of the windows"),
    (lambda tokens, n: _share([tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)],
                              len(tokens) - n + 1) if len(tokens) >= n else 0.0,
     "with a tensor, your windows hold tensors, which a set or a dict tells apart even when they are equal "
     "(a tensor hashes by identity): convert the tokens with .tolist() first"),
)

# (sequence, n, share)
_REPEAT_CASES = (("abcabc", 3, 1 / 4), ("aaaa", 2, 2 / 3), ("abcd", 2, 0.0), ("ab", 3, 0.0),
                 ([1, 2, 1, 2, 1, 2], 2, 3 / 5), (torch.tensor([5, 6, 7, 5, 6, 7, 5]), 3, 2 / 5),
                 ([1, 21, 12, 1], 2, 0.0))  # ids of two digits: a string join of them repeats "12" and "21"


@expects_function("repeat_share(tokens, n)")
def _check_repeat_share(answer):
    got = []
    for tokens, n, _ in _REPEAT_CASES:
        shown = tokens.tolist() if isinstance(tokens, torch.Tensor) else tokens
        kind = "a 1-D tensor" if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        try:
            got.append(float(answer(tokens, n)))
        except (TypeError, ValueError, ZeroDivisionError, IndexError) as error:
            if len(shown) < n:
                return (f"for {shown!r} with n={n} your function failed ({type(error).__name__}): a sequence shorter "
                        f"than n has no window of n tokens, and its share is 0")
            return f"for {shown!r} ({kind}) with n={n} your function failed or returned no number: {error}"
    wanted = [share for *_, share in _REPEAT_CASES]
    if all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(got, wanted)):
        return None
    if len(set(got)) == 1:
        return f"your function gives {got[0]:.3g} for every sequence: the share depends on the sequence"
    for mistake, message in _REPEAT_MISTAKES:
        if all(math.isclose(a, float(mistake(tokens, n)), abs_tol=1e-9) for a, (tokens, n, _) in zip(got, _REPEAT_CASES)):
            return message
    for a, b, (tokens, n, _) in zip(got, wanted, _REPEAT_CASES):
        if not math.isclose(a, b, abs_tol=1e-9):
            shown = tokens.tolist() if isinstance(tokens, torch.Tensor) else tokens
            return f"for {shown!r} with n={n} the share of repeated windows is not {a:.3g}"
    return None


repeat_share = Exercise(
    "the share of repeated n-grams",
    _check_repeat_share,
    "slide a window of n tokens along the sequence, one token at a time; remember the windows you have seen; "
    "count those that were already seen, and divide by the number of windows",
    _repeat_share_solution,
)
