"""Chapter 12's "Your turn": RMSNorm by hand, the SwiGLU forward and Gemma's GELU-gated variant of
it, key-value heads expanded for grouped-query attention, and one configuration's KV cache.

In the notebook::

    from stepbystep.exercises import ch12
    ch12.rms_norm.check(my_rms_norm)
    ch12.rms_norm.hint()
    ch12.rms_norm.solution()
"""
import torch
import torch.nn.functional as F

from ..models import RMSNorm
from .exercise import Exercise, as_number, expects_function, gib_slips

__all__ = ["rms_norm", "swiglu", "geglu", "expand_kv", "cache_size"]


def _close(got, wanted, tol=1e-5):
    return isinstance(got, torch.Tensor) and got.shape == wanted.shape and torch.allclose(got.float(), wanted,
                                                                                           rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- 1. RMSNorm by hand
def _rms_norm_solution(x, weight, eps):
    # divide each vector by its root mean square (eps inside the root), then scale each feature
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def _rms_reference(x, weight, eps):
    norm = RMSNorm(x.shape[-1], eps=eps)
    with torch.no_grad():
        norm.weight.copy_(weight)
        return norm(x)


@expects_function("rms_norm(x, weight, eps)")
def _check_rms_norm(answer):
    generator = torch.Generator().manual_seed(12)
    x = torch.randn(3, 5, 8, generator=generator) * 2 + 1.5  # (3, 5, 8): a mean far from 0
    weight = torch.rand(8, generator=generator) + 0.5  # (8,)
    for eps, scale in ((1e-6, 1.0), (1e-2, 0.05)):  # tiny vectors: where eps goes shows
        inputs = x * scale
        try:
            got = answer(inputs.clone(), weight.clone(), eps)
        except RuntimeError as error:
            if "must match the size" in str(error):  # a (3, 5) statistic dividing (3, 5, 8) vectors
                return ("a division failed on the shapes: each vector's root mean square must keep a dimension "
                        "of size 1 where the features were, so that it divides every entry of its vector")
            raise
        if not isinstance(got, torch.Tensor):
            return f"return a tensor, got {type(got).__name__}"
        if got.shape != inputs.shape:
            return f"the output must have the input's shape {tuple(inputs.shape)}, got {tuple(got.shape)}"
        wanted = _rms_reference(inputs, weight, eps)
        if _close(got, wanted):
            continue
        if torch.allclose(got.mean(dim=-1), torch.zeros(()), atol=1e-4) or \
                torch.allclose((got / weight).mean(dim=-1), torch.zeros(()), atol=1e-4):
            return "every output vector has mean 0: RMSNorm does not centre its input, LayerNorm does"
        if _close(got, wanted / weight):
            return "the shape of each vector is right but not its scale per feature: where does weight come in?"
        rms = inputs.pow(2).mean(dim=-1, keepdim=True)
        if _close(got, inputs / rms * weight):
            return "you divide by the mean square: RMSNorm divides by its root"
        if _close(got, inputs / torch.sqrt(inputs.pow(2).sum(dim=-1, keepdim=True) + eps) * weight, 1e-4):
            return "every entry is off by one common factor, the same for every vector: how do you average the squares?"
        if _close(got, inputs / (rms.sqrt() + eps) * weight, 1e-6):
            return "close, but eps is in the wrong place: it guards the mean square before the root is taken"
        if _close(got, inputs / rms.sqrt() * weight, 1e-6):
            return "eps is missing or ignored: on these tiny vectors it matters, since it guards the mean square"
        other_dims = [0, 1, (0, 1), (0, 1, 2)]  # the batch, the positions, both, everything
        if any(_close(got, inputs / torch.sqrt(inputs.pow(2).mean(dim=dims, keepdim=True) + eps) * weight, 1e-4)
               for dims in other_dims):
            return "your root mean square mixes different vectors: each vector is divided by its own, over its features"
        scaled = inputs * weight  # (3, 5, 8): the gain applied first
        if _close(got, scaled / torch.sqrt(scaled.pow(2).mean(dim=-1, keepdim=True) + eps), 1e-4):
            return ("you normalised the vector already scaled by weight, so the division undoes most of the gain: "
                    "the root mean square is the input's own, and the gain comes after the division")
        mean_abs = inputs.abs().mean(dim=-1, keepdim=True)
        if any(_close(got, inputs / scale * weight, 1e-4) for scale in (mean_abs, mean_abs + eps)):
            return ("you divide by the mean of the absolute values: RMSNorm squares the entries, averages the "
                    "squares, then takes the root")
        if any(_close(got, inputs / inputs.std(dim=-1, keepdim=True, correction=c) * weight, 1e-4) for c in (0, 1)):
            return "you divide by the standard deviation, which subtracts the mean first: use the root mean square"
        squared_mean = inputs.mean(dim=-1, keepdim=True).pow(2)  # (3, 5, 1): the mean, squared
        if any(_close(got, inputs / torch.sqrt(squared_mean + e) * weight, 1e-4) for e in (eps, 0.0)):
            return ("you divide by the mean of the entries (squared and rooted, or as it is): RMSNorm averages "
                    "their squares before the root (the order of 'mean' and 'square' matters)")
        return "your output differs from RMSNorm's with the same weight and eps"
    return None


rms_norm = Exercise(
    "RMSNorm by hand",
    _check_rms_norm,
    "the root mean square of a vector is the square root of the mean of its squared entries; take it over the "
    "last dimension and keep that dimension (keepdim=True) so it divides every entry of its vector",
    _rms_norm_solution,
)


# ----------------------------------------------------------------------------- 2. the SwiGLU forward
def _swiglu_solution(x, gate_weight, up_weight, down_weight):
    # nn.Linear's convention: a weight (out, in) multiplies from the right as its transpose
    hidden = F.silu(x @ gate_weight.T) * (x @ up_weight.T)  # (N, L, hidden)
    return hidden @ down_weight.T  # (N, L, d_model)


def _gated_case(seed, scale=1.0):
    """A batch ``(2, 3, 6)`` times ``scale`` and three weights in nn.Linear's layout for the gated checkers."""
    generator = torch.Generator().manual_seed(seed)
    x = scale * torch.randn(2, 3, 6, generator=generator)  # (N, L, d_model)
    gate, up = torch.randn(10, 6, generator=generator), torch.randn(10, 6, generator=generator)  # (hidden, d)
    down = torch.randn(6, 10, generator=generator)  # (d, hidden)
    return x, gate, up, down


def _run_gated(answer, x, gate, up, down, layout_note):
    """A learner's gated network on the case: ``(output, None)``, or ``(None, message)`` when a product fails
    on the shapes, the result is not a tensor or its shape is not the input's."""
    try:
        got = answer(x.clone(), gate.clone(), up.clone(), down.clone())
    except RuntimeError as error:
        if "shapes cannot be multiplied" in str(error):
            return None, ("a matrix product failed on the shapes: the weights are in nn.Linear's layout "
                          f"(out, in), {layout_note}")
        raise
    if not isinstance(got, torch.Tensor):
        return None, f"return a tensor, got {type(got).__name__}"
    if got.shape != x.shape:
        return None, f"the output must have the input's shape {tuple(x.shape)} (N, L, d_model), got {tuple(got.shape)}"
    return got, None


@expects_function("swiglu(x, gate_weight, up_weight, down_weight)")
def _check_swiglu(answer):
    x, gate, up, down = _gated_case(7)
    got, message = _run_gated(answer, x, gate, up, down, "so a vector cannot multiply them as they are")
    if message:
        return message
    if _close(got, _swiglu_solution(x, gate, up, down), 1e-4):
        return None
    if _close(got, _swiglu_solution(x, up, gate, down), 1e-4):
        return "the SiLU acts on the wrong projection: it is the gate that goes through it"
    if _close(got, (torch.sigmoid(x @ gate.T) * (x @ up.T)) @ down.T, 1e-4):
        return "you gate with a sigmoid (that is GLU): SwiGLU's gate is SiLU, a · sigmoid(a)"
    if _close(got, (F.relu(x @ gate.T) * (x @ up.T)) @ down.T, 1e-4):
        return "you gate with ReLU (that is ReGLU): SwiGLU's gate is SiLU"
    if any(_close(got, (F.gelu(x @ gate.T, approximate=form) * (x @ up.T)) @ down.T, 1e-4) for form in ("none", "tanh")):
        return "you gate with GELU (that is GEGLU): SwiGLU's gate is SiLU"
    if any(_close(got, (F.silu(x @ a.T) + x @ b.T) @ down.T, 1e-4) for a, b in ((gate, up), (up, gate))):
        return "you add the two projections: the gate multiplies the other one, element by element"
    if _close(got, F.silu((x @ gate.T) * (x @ up.T)) @ down.T, 1e-4):
        return ("the SiLU goes over the product of both projections: it acts on the gate's projection alone, "
                "before the multiplication")
    gated = (x @ gate.T) * (x @ up.T)  # (N, L, hidden): the product without its SiLU
    if _close(got, F.silu(gated @ down.T), 1e-4) or _close(got, F.silu(F.silu(x @ gate.T) * (x @ up.T) @ down.T), 1e-4):
        return "a SiLU acts on the output, after the last matrix: it belongs inside, on one projection"
    if _close(got, gated @ down.T, 1e-4):
        return "no SiLU acts anywhere: without it, the gate is a plain product of two projections"
    if _close(got, (F.silu(x @ gate.T) * F.silu(x @ up.T)) @ down.T, 1e-4):
        return "both projections go through the SiLU: only the gate's does, the other passes as it is"
    if _close(got, F.silu(x @ gate.T) @ down.T, 1e-4) or _close(got, F.silu(x @ up.T) @ down.T, 1e-4):
        return "one of the two projections is missing: the gated one multiplies another, element by element"
    return "the shape is right, but your numbers differ from SwiGLU's with the same three weights"


swiglu = Exercise(
    "the SwiGLU forward",
    _check_swiglu,
    "three matrices in nn.Linear's layout (out, in): x @ W.T applies one. Two of them read x, their results "
    "are multiplied element by element after one passes through F.silu; the third brings the result back to d_model",
    _swiglu_solution,
)


# ----------------------------------------------------------------------------- 2, extended: Gemma's GELU gate
def _geglu_solution(x, gate_weight, up_weight, down_weight):
    # SwiGLU with one change: the gate goes through the GELU's tanh approximation, not the SiLU
    hidden = F.gelu(x @ gate_weight.T, approximate="tanh") * (x @ up_weight.T)  # (N, L, hidden)
    return hidden @ down_weight.T  # (N, L, d_model)


@expects_function("geglu(x, gate_weight, up_weight, down_weight)")
def _check_geglu(answer):
    x, gate, up, down = _gated_case(8, scale=2.0)  # inputs wide enough for the GELUs' two forms to differ
    got, message = _run_gated(answer, x, gate, up, down, "as in the SwiGLU exercise")
    if message:
        return message
    if _close(got, _geglu_solution(x, gate, up, down), 1e-4):
        return None

    def gated(act, a=gate, b=up):
        return (act(x @ a.T) * (x @ b.T)) @ down.T  # (N, L, d_model)
    if _close(got, gated(F.silu), 1e-4):
        return "that is SwiGLU, unchanged: this exercise changes its gate"
    if _close(got, gated(F.gelu), 1e-4):
        return ("a GELU gate, but its exact form (the normal distribution's function): Gemma's configuration names "
                "the approximation GPT-2 computes")
    if any(_close(got, gated(act, up, gate), 1e-4) for act in (F.gelu, lambda a: F.gelu(a, approximate="tanh"))):
        return "the GELU acts on the wrong projection: it is the gate that goes through it"
    if _close(got, gated(torch.sigmoid), 1e-4) or _close(got, gated(F.relu), 1e-4):
        return "the gate's activation is neither SwiGLU's nor a GELU: this exercise asks for a GELU"
    if any(_close(got, F.gelu(x @ w.T, approximate="tanh") @ down.T, 1e-4) for w in (gate, up)):
        return "one of the two projections is missing: the gated one multiplies another, element by element"
    return "the shape is right, but your numbers differ from a GELU-gated network's with the same three weights"


geglu = Exercise(
    "Gemma's GELU-gated feed-forward network",
    _check_geglu,
    "keep your SwiGLU and change the gate's activation alone: F.gelu has two forms, chosen by its approximate "
    "argument; GPT-2's is the one with a tanh",
    _geglu_solution,
)


# ----------------------------------------------------------------------------- 3. expand the key-value heads
def _expand_kv_solution(k, n_heads):
    # query head j reads key head j // groups: each key head repeated groups times, in place.
    # Tiling (k.repeat) gives query head j key head j % n_kv_heads instead, while a grouped checkpoint's
    # query heads were trained against key head j // groups: some then read another group's keys,
    # so a model loaded with from_transformers gives different logits
    groups = n_heads // k.shape[1]
    return k.repeat_interleave(groups, dim=1)  # (N, n_heads, L, d_k)


@expects_function("expand_kv(k, n_heads)")
def _check_expand_kv(answer):
    generator = torch.Generator().manual_seed(3)
    for n_kv_heads, n_heads in ((2, 4), (1, 3), (4, 8), (3, 3)):
        k = torch.randn(2, n_kv_heads, 5, 4, generator=generator)  # (N, n_kv_heads, L, d_k)
        got = answer(k.clone(), n_heads)
        if not isinstance(got, torch.Tensor):
            return f"return a tensor, got {type(got).__name__}"
        if got.shape != (2, n_heads, 5, 4):
            return (f"with {n_kv_heads} key heads and {n_heads} query heads the keys must become (N, {n_heads}, L, d_k) "
                    f"= {(2, n_heads, 5, 4)}, got {tuple(got.shape)}")
        wanted = _expand_kv_solution(k, n_heads)
        if torch.equal(got, wanted):
            continue
        if torch.equal(got, k.repeat(1, n_heads // n_kv_heads, 1, 1)):
            return (f"the right heads, in the wrong order: with {n_kv_heads} key heads and {n_heads} query heads, "
                    "your query heads do not share key heads the way a grouped model's neighbours do; print which "
                    "key head each query head reads")
        return f"with {n_kv_heads} key heads and {n_heads} query heads, some query heads read the wrong key head"
    return None


expand_kv = Exercise(
    "key-value heads expanded for grouped-query attention",
    _check_expand_kv,
    "query heads come in groups of n_heads // n_kv_heads that share one key head, neighbours first (as Hugging "
    "Face's repeat_kv does). torch has two ways to repeat along a dimension: one tiles the whole dimension, the "
    "other repeats each entry in place",
    _expand_kv_solution,
)


# ----------------------------------------------------------------------------- 4. one configuration's cache
def _cache_size_solution():
    # 48 layers, 8 KV heads of 128 (the 40 query heads do not count); 8 sequences of 16,384 tokens;
    # float16 = 2 bytes
    n_bytes = 2 * 48 * 8 * 128 * 16384 * 8 * 2  # keys and values
    return n_bytes / 2 ** 30  # GiB


def _check_cache_size(answer):
    got = as_number(answer)
    if got is None:
        return f"expected one number (GiB), got {type(answer).__name__}"
    right = _cache_size_solution()
    if abs(got - right) <= 1e-3 * right:
        return None
    for wrong, message in (
        (right * 5, "you cached a key and a value for every query head: this model shares them"),
        (right / 2, "that is half the cache: count what each token caches, and the bytes per number"),
        (right * 2, "check how many bytes one float16 number takes"),
        (right / 8, "that is one sequence: the batch holds more"),
        (right / 48, "that is one layer"),
        *gib_slips(right),
    ):
        if abs(got - wrong) <= 1e-3 * wrong:
            return message
    return "that is not the cache's size: count keys and values, layers, KV heads, head size, tokens, sequences, bytes"


cache_size = Exercise(
    "one configuration's KV cache",
    _check_cache_size,
    "kv_cache_bytes's formula: 2 × layers × KV heads × head size × tokens × sequences × bytes per number, then "
    "divide by 2³⁰ for GiB. Only the key-value heads count, not the query heads",
    _cache_size_solution,
)
