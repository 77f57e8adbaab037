"""Chapter 04's "Your turn": count a stack's parameters, batch-normalise without the padding, and
write layer norm on two features in closed form.

In the notebook::

    from stepbystep.exercises import ch04
    ch04.stack_parameter_count.check(my_count)
    ch04.stack_parameter_count.solution()
"""
import torch
import torch.nn.functional as F

from ..models import EncoderLayer, EncoderTransf
from .exercise import Exercise, expects_function

__all__ = ["stack_parameter_count", "masked_batch_norm", "layer_norm_pair"]


def _count_parameters(module):
    return sum(p.numel() for p in module.parameters())


# ---------------------------------------------------------------------------------- exercise 1
def _stack_parameter_count_solution(n_layers, d_model, ff_units, norm_first):
    attention = 4 * (d_model * d_model + d_model)  # query, key, value and output projections
    feed_forward = (d_model * ff_units + ff_units) + (ff_units * d_model + d_model)
    layer_norms = 2 * (2 * d_model)  # one per sublayer wrapper, each a scale and a shift
    per_layer = attention + feed_forward + layer_norms
    final_norm = 2 * d_model if norm_first else 0  # only norm-first stacks end with a norm
    return n_layers * per_layer + final_norm  # the copies share nothing: n_layers times


_STACK_CASES = ((1, 4, 8, True), (3, 6, 10, True), (2, 8, 16, False), (4, 6, 12, False))


@expects_function("count(n_layers, d_model, ff_units, norm_first)")
def _check_stack_parameter_count(answer):
    for n_layers, d_model, ff_units, norm_first in _STACK_CASES:
        layer = EncoderLayer(n_heads=2, d_model=d_model, ff_units=ff_units, norm_first=norm_first)
        expected = _count_parameters(EncoderTransf(layer, n_layers=n_layers))
        got = answer(n_layers, d_model, ff_units, norm_first)
        if got == expected:
            continue
        case = f"n_layers={n_layers}, d_model={d_model}, ff_units={ff_units}, norm_first={norm_first}"
        final_norm = 2 * d_model
        if norm_first and got == expected - final_norm:
            return f"for {case} you left out the stack's final layer norm"
        if not norm_first and got == expected + final_norm:
            return f"for {case} you added a final layer norm, but a norm-last stack has none"
        if got in (expected - n_layers * 4 * d_model, expected - n_layers * 4 * d_model - final_norm):
            return f"for {case} you left out the layer norms: each has a scale and a shift of d_model values"
        if n_layers > 1 and got in ((expected - final_norm * norm_first) // n_layers,
                                    (expected - final_norm * norm_first) // n_layers + final_norm * norm_first):
            return f"for {case} you counted one layer: the stack holds n_layers independent copies"
        return f"for {case} you returned {got!r}, which is not the number of parameters of EncoderTransf"
    return None


stack_parameter_count = Exercise(
    "count the parameters of an encoder stack",
    _check_stack_parameter_count,
    "count one EncoderLayer first, module by module (print(EncoderLayer(2, 4, 8)) lists them), then "
    "ask what the stack adds around its copies, and for which placement",
    _stack_parameter_count_solution,
)


# ---------------------------------------------------------------------------------- exercise 2
def _masked_batch_norm_solution(x, mask, eps=1e-5):
    real = x[mask]  # (n_real, D): the real tokens of every sequence, padding left out
    mean = real.mean(dim=0)  # (D,)
    var = real.var(dim=0, unbiased=False)  # (D,)
    normed = (x - mean) / torch.sqrt(var + eps)  # (N, L, D)
    return normed * mask.unsqueeze(-1)  # (N, L, D): padding stays at zero


def _padded_batch(seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = 3 + 2 * torch.randn(4, 5, 3, generator=generator)  # (N, L, D)
    lengths = torch.tensor([5, 3, 2, 4])
    mask = torch.arange(5) < lengths.unsqueeze(1)  # (N, L): True = real token
    return x * mask.unsqueeze(-1), mask  # padding positions hold zeros


@expects_function("masked_batch_norm(x, mask)")
def _check_masked_batch_norm(answer):
    x, mask = _padded_batch()
    got = answer(x.clone(), mask.clone())
    if not isinstance(got, torch.Tensor):
        return f"masked_batch_norm should return a tensor, got {type(got).__name__}"
    if tuple(got.shape) != tuple(x.shape):
        return f"the result should keep the shape of x, (N, L, D) = {tuple(x.shape)}, got {tuple(got.shape)}"
    expected = _masked_batch_norm_solution(x, mask)  # (N, L, D)
    if torch.allclose(got, expected, atol=1e-4):
        return None
    if not torch.allclose(got[~mask], torch.zeros_like(got[~mask]), atol=1e-6):
        if torch.allclose(got[mask], expected[mask], atol=1e-4):
            return "the real tokens are right, but the padding positions should stay at zero"
    with_padding = F.batch_norm(x.reshape(-1, 3), None, None, training=True)  # (N * L, D)
    if torch.allclose(got.reshape(-1, 3), with_padding, atol=1e-4) or torch.allclose(
            got[mask], with_padding.view_as(x)[mask], atol=1e-4):
        return ("your statistics include the padding: its zeros pull every feature's mean down "
                "and inflate its variance. Average over the real tokens only")
    if torch.allclose(got[mask], F.layer_norm(x, (3,))[mask], atol=1e-4):
        return "you normalised each token over its features (layer norm); batch norm averages each feature over tokens"
    real = x[mask]  # (n_real, 3)
    unbiased = (x - real.mean(0)) / torch.sqrt(real.var(0) + 1e-5) * mask.unsqueeze(-1)  # (N, L, D)
    if torch.allclose(got, unbiased, atol=1e-4):
        return "your variance divides by n - 1; normalisation layers use the biased variance, which divides by n"
    return "the real tokens are not normalised with the statistics of the real tokens"


masked_batch_norm = Exercise(
    "batch norm that ignores the padding",
    _check_masked_batch_norm,
    "boolean indexing with the mask keeps the real tokens only: take the statistics from those, "
    "and check what the padding positions hold at the end",
    _masked_batch_norm_solution,
)


# ---------------------------------------------------------------------------------- exercise 3
def _layer_norm_pair_solution(a, b, eps=1e-5):
    half_gap = (a - b) / 2  # (n,): a and b sit this far either side of their mean
    first = half_gap / torch.sqrt(half_gap**2 + eps)  # (n,): the variance of the pair is half_gap²
    return torch.stack([first, -first], dim=-1)  # (n, 2): ±1 unless a and b (nearly) coincide


@expects_function("layer_norm_pair(a, b)")
def _check_layer_norm_pair(answer):
    a = torch.tensor([3.0, -1.0, 0.5, 2.0, 0.001, 7.0])
    b = torch.tensor([1.0, 4.0, 0.5, 2.0005, 0.0, -7.0])
    expected = F.layer_norm(torch.stack([a, b], dim=-1), (2,))  # (n, 2)
    got = answer(a.clone(), b.clone())
    if not isinstance(got, torch.Tensor):
        return f"layer_norm_pair should return a tensor, got {type(got).__name__}"
    if tuple(got.shape) != (len(a), 2):
        return f"for {len(a)} pairs the result should be ({len(a)}, 2), got {tuple(got.shape)}"
    if torch.allclose(got, expected, atol=1e-4):
        return None
    apart = (a - b).abs() > 0.1  # (n,): pairs where ε does not matter
    if torch.allclose(got[apart], expected[apart] / 2**0.5, atol=1e-3):
        return "your values are ±0.71 instead of ±1: with two numbers, divide by n = 2, not n - 1 = 1"
    if torch.isnan(got).any():
        return "you get NaN when a == b (0 / 0): the ε under the square root is what prevents it"
    for index in range(len(a)):
        if not torch.allclose(got[index], expected[index], atol=1e-4):
            have = ", ".join(f"{v:.4f}" for v in got[index].tolist())
            return f"for a = {a[index]:g}, b = {b[index]:g} you returned [{have}], which is not their layer norm"
    return None


layer_norm_pair = Exercise(
    "layer norm of two features, in closed form",
    _check_layer_norm_pair,
    "start from the mean of the pair: how far from it is each value, and what is the (biased) "
    "variance then? Keep the ε of the formula: it is what matters when a and b nearly coincide",
    _layer_norm_pair_solution,
)
