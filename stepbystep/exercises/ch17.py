"""Chapter 17's "Your turn": predict a latent cache's size, write top-k routing with its
renormalisation, predict how many keys a windowed query reads and extend the window mask with
sinks, and predict where QK-norm must go.

In the notebook::

    from stepbystep.exercises import ch17
    ch17.latent_cache.check(my_cache_gib)
    ch17.latent_cache.hint()
    ch17.latent_cache.solution()
"""
import torch
import torch.nn.functional as F

from ..models import RMSNorm, RotaryEmbedding
from .exercise import Exercise, as_number, expects_function, gib_slips

__all__ = ["latent_cache", "route", "window_keys", "window_mask", "qk_norm_place"]


# ----------------------------------------------------------------------------- 1. a latent cache's size
def _latent_cache_solution():
    # 40 layers, each caching the latent (384) and the shared rotated key (32) per token: the 64 heads
    # do not count, and the latent serves keys and values alike; 4 sequences of 32,768 tokens; bfloat16: 2 bytes
    n_bytes = 40 * (384 + 32) * 32768 * 4 * 2
    return n_bytes / 2 ** 30  # GiB


def _check_latent_cache(answer):
    got = as_number(answer)
    if got is None:
        return f"expected one number (GiB), got {type(answer).__name__}"
    right = _latent_cache_solution()
    if abs(got - right) <= 1e-3 * right:
        return None
    for wrong, message in (
        (right * 2, "twice the cache: the one latent stands for the keys and the values together, and bfloat16 "
                    "takes 2 bytes a number"),
        (right * 384 / 416, "the latent is there, but something else each layer caches per token is missing"),
        (right * 32 / 416, "you counted only the rotated key: what else must be kept to rebuild the keys and values?"),
        (right * 64, "you multiplied by the heads: every head's keys and values are rebuilt from one shared latent"),
        (right * 128, "you multiplied by the heads and by 2: the latent is shared by every head, keys and values"),
        (right / 4, "that is one sequence: the batch holds four"),
        (right / 40, "that is one layer"),
        *gib_slips(right),
    ):
        if abs(got - wrong) <= 1e-3 * wrong:
            return message
    return "that is not the cache's size: count what one layer keeps per token, then layers, tokens, sequences, bytes"


latent_cache = Exercise(
    "a latent cache's size",
    _check_latent_cache,
    "latent_cache_bytes's formula: layers × (latent + rotated key) × tokens × sequences × bytes per number. The "
    "number of heads appears nowhere in it, and there is no 2 for keys and values",
    _latent_cache_solution,
)


# ----------------------------------------------------------------------------- 2. top-k routing
def _route_solution(router_logits, k):
    # the router's probabilities over the experts, the k largest, renormalised to sum to 1 (Mixtral)
    probs = F.softmax(router_logits, dim=-1)  # (T, E)
    weights, experts = probs.topk(k, dim=-1)  # (T, k), (T, k)
    return weights / weights.sum(dim=-1, keepdim=True), experts


def _by_expert(weights, experts, n_experts):
    """Each token's weight per expert, 0 where it did not choose it: ``(T, E)``, whatever the order of the k."""
    dense = torch.zeros(weights.shape[0], n_experts)
    return dense.scatter_add(1, experts.long(), weights.float())


@expects_function("route(router_logits, k)")
def _check_route(answer):
    generator = torch.Generator().manual_seed(17)
    for n_tokens, n_experts, k in ((6, 5, 2), (4, 8, 3), (3, 4, 1)):
        logits = torch.randn(n_tokens, n_experts, generator=generator) * 2  # (T, E)
        got = answer(logits.clone(), k)
        if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)):
            return "return two tensors, (weights, experts)"
        weights, experts = got
        if weights.shape != (n_tokens, k) or experts.shape != (n_tokens, k):
            return (f"with {n_tokens} tokens and k={k}, weights and experts must both be (T, k) = {(n_tokens, k)}, "
                    f"got {tuple(weights.shape)} and {tuple(experts.shape)}")
        if experts.is_floating_point():
            return "experts must hold the experts' indices (integers), not their weights"
        wanted_w, wanted_e = _route_solution(logits, k)
        if not torch.equal(experts.sort(dim=-1).values, wanted_e.sort(dim=-1).values):
            smallest = F.softmax(logits, dim=-1).topk(k, dim=-1, largest=False).indices
            if torch.equal(experts.sort(dim=-1).values, smallest.sort(dim=-1).values):
                return "each token goes to the experts the router likes least: topk takes the largest by default"
            return f"with k={k}, some tokens go to experts that are not their router's {k} most probable"
        got_dense = _by_expert(weights, experts, n_experts)
        if torch.allclose(got_dense, _by_expert(wanted_w, wanted_e, n_experts), atol=1e-5):
            continue
        if torch.allclose(weights.float().sort(dim=-1).values, wanted_w.sort(dim=-1).values, atol=1e-5):
            return (f"the right experts and the right {k} weights, but paired wrongly: weights[t, i] must be the "
                    "weight of experts[t, i], so keep the two in the same order")
        probs = F.softmax(logits, dim=-1)
        if torch.allclose(got_dense, _by_expert(probs.gather(1, wanted_e), wanted_e, n_experts), atol=1e-5):
            return (f"the right experts, but each token's {k} weights sum to less than 1: the output would shrink "
                    "by a different factor for every token")
        if torch.allclose(got_dense, _by_expert(logits.gather(1, wanted_e), wanted_e, n_experts), atol=1e-5):
            return "the weights are the router's raw scores: they should be probabilities"
        if torch.allclose(got_dense, _by_expert(F.softmax(logits, dim=0).gather(1, wanted_e), wanted_e, n_experts),
                          atol=1e-5):
            return "your softmax runs over the tokens: each token's probabilities are over the experts"
        if k > 1 and torch.allclose(got_dense.sum(dim=-1), torch.ones(n_tokens), atol=1e-5):
            return "the weights sum to 1, but they do not keep the ratios of the router's probabilities"
        return "the right experts, but not the right weights"
    return None


route = Exercise(
    "top-k routing, renormalised",
    _check_route,
    "a softmax over the experts (the last dimension) gives each token's probabilities; tensor.topk(k, dim=-1) "
    "returns the k largest and their indices; then divide the k weights by their own sum",
    _route_solution,
)


# ----------------------------------------------------------------------------- 3. predict: the keys one query reads
def _window_keys_solution():
    # a window of 3 counts the query itself: keys 7, 8 and 9; the 2 sinks are keys 0 and 1, far outside it
    return 3 + 2


def _check_window_keys(answer):
    got = as_number(answer)
    if got is None:
        return f"expected one number (how many keys query 9 reads), got {type(answer).__name__}"
    if got == _window_keys_solution():
        return None
    for wrong, message in (
        (6, "one key too many: the window of 3 already counts the query itself"),
        (4, "one key too few: the window of 3 counts the query itself, and each sink is a key of its own"),
        (3, "the window alone: the sinks stay readable however far back they are"),
        (2, "the sinks alone: the window's keys are read too, the query itself among them"),
        (10, "that is every key up to the query (the causal mask): the window leaves most of them out"),
        (1, "only the query itself: the window and the sinks add keys before it"),
    ):
        if got == wrong:
            return message
    return "count the keys: those in the window, the query included, then the sinks outside it"


window_keys = Exercise(
    "predict how many keys a query reads",
    _check_window_keys,
    "query 9 is the tenth token (counting from 0); write out the keys the window reaches back to, then the sinks",
    _window_keys_solution,
)


# ----------------------------------------------------------------------------- 3. the window mask with sinks
def _window_mask_solution(length, window, sinks):
    # query i may read key j when j <= i (causal) and either i - j < window (itself and the window - 1
    # before it) or j < sinks (the stream's first tokens)
    i = torch.arange(length).unsqueeze(1)  # (L, 1): queries
    j = torch.arange(length).unsqueeze(0)  # (1, L): keys
    return (j <= i) & ((i - j < window) | (j < sinks))  # (L, L)


@expects_function("window_mask(length, window, sinks)")
def _check_window_mask(answer):
    for length, window, sinks in ((10, 3, 2), (12, 4, 0), (9, 1, 1), (7, 8, 3)):
        got = answer(length, window, sinks)
        if not isinstance(got, torch.Tensor):
            return f"return a tensor, got {type(got).__name__}"
        if got.shape != (length, length):
            return f"the mask must be (L, L) = {(length, length)} for length={length}, got {tuple(got.shape)}"
        if got.is_floating_point():
            return ("a float mask is one that attention adds to the scores (0 keeps a key), not a keep-mask: return "
                    "True/False (bool, or an integer 1/0), True where the query may read the key")
        if not ((got == 0) | (got == 1)).all():
            return "return a keep-mask of True/False (bool, or an integer 1/0): True where the query may read the key"
        got = got.bool()
        wanted = _window_mask_solution(length, window, sinks)
        if torch.equal(got, wanted):
            continue
        where = f"(length={length}, window={window}, sinks={sinks})"
        if torch.equal(got, ~wanted):
            return f"True and False are swapped {where}: the course's masks say True where a query may read"
        if torch.triu(got, diagonal=1).any():
            return f"a query reads a key after it {where}: sinks and window alike stay causal"
        if torch.equal(got, _window_mask_solution(length, window + 1, sinks)):
            return f"each query reads one key too many {where}: the window counts the query itself"
        if window > 1 and torch.equal(got, _window_mask_solution(length, window - 1, sinks)):
            return f"each query reads one key too few {where}: the window counts the query itself, as Mistral's does"
        if sinks and torch.equal(got, _window_mask_solution(length, window, 0)):
            return f"no sinks {where}: the first `sinks` tokens should stay readable from every later query"
        if torch.equal(got, _window_mask_solution(length, length, 0)):
            return f"that is the causal mask alone {where}: the window is missing"
        if sinks and torch.equal(got, _window_mask_solution(length, window, sinks + 1)) or \
                sinks > 1 and torch.equal(got, _window_mask_solution(length, window, sinks - 1)):
            return f"one sink too many or too few {where}: keys 0 to sinks - 1 are the sinks"
        return f"some queries read the wrong keys {where}"
    return None


window_mask = Exercise(
    "the window mask with sinks",
    _check_window_mask,
    "build the query indices as a column and the key indices as a row: their difference says how far back each "
    "key is. Three conditions: never the future, the window counting the query itself, the first tokens always",
    _window_mask_solution,
)


# ----------------------------------------------------------------------------- 4. where QK-norm goes
def _qk_norm_place_solution():
    # an RMSNorm with a gain of 1 divides a vector by its root mean square, and a rotation keeps a vector's
    # length, so the two orders agree; a learned gain scales each dimension on its own, and a rotation mixes
    # two dimensions, so with a gain that differs within a rotated pair the order matters
    return {"gain of one": True, "learned gain": False}


def _rotations_agree(gain):
    """Whether RMSNorm (``gain``) then RoPE equals RoPE then RMSNorm, on random queries."""
    d = gain.shape[0]
    norm, rotary = RMSNorm(d, eps=1e-6), RotaryEmbedding(d, max_len=16)
    with torch.no_grad():
        norm.weight.copy_(gain)
        q = torch.randn(1, 1, 16, d, generator=torch.Generator().manual_seed(0))  # (N, h, L, d)
        positions = torch.arange(16)
        return torch.allclose(rotary.rotate(norm(q), positions), norm(rotary.rotate(q, positions)), atol=1e-5)


def _check_qk_norm_place(answer):
    if not isinstance(answer, dict) or set(answer) != {"gain of one", "learned gain"}:
        return "expected a dict with the keys 'gain of one' and 'learned gain', each True or False"
    if not all(isinstance(value, bool) for value in answer.values()):
        return "each value must be True (the two orders give the same scores) or False"
    truth = {"gain of one": _rotations_agree(torch.ones(8)),
             "learned gain": _rotations_agree(torch.linspace(0.5, 1.5, 8))}
    if answer == truth:
        return None
    if not answer["gain of one"]:
        return ("with a gain of one, think about what a rotation does to a vector's length, and what RMSNorm "
                "divides by")
    return ("with a learned gain, think about what the gain does to each dimension on its own, and what a "
            "rotation does to a pair of them")


qk_norm_place = Exercise(
    "where QK-norm goes",
    _check_qk_norm_place,
    "a rotation keeps a vector's length; RMSNorm's gain multiplies each dimension by its own number",
    _qk_norm_place_solution,
)
