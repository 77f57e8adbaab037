"""Chapter 04's "Your turn": count a stack's parameters, batch-normalise without the padding, and
find the two quantities layer norm fixes for every token (and with them, where its outputs lie).

In the notebook::

    from stepbystep.exercises import ch04
    ch04.stack_parameter_count.check(my_count)
    ch04.stack_parameter_count.solution()
"""
import torch
import torch.nn.functional as F

from ..models import EncoderLayer, EncoderTransf
from .exercise import Exercise, as_number, expects_function

__all__ = ["stack_parameter_count", "masked_batch_norm", "layer_norm_invariants"]


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


_STACK_CASES = ((3, 4, 10, True), (3, 6, 10, True), (2, 8, 16, False), (4, 6, 12, False))


@expects_function("count(n_layers, d_model, ff_units, norm_first)")
def _check_stack_parameter_count(answer):
    for n_layers, d_model, ff_units, norm_first in _STACK_CASES:
        layer = EncoderLayer(n_heads=2, d_model=d_model, ff_units=ff_units, norm_first=norm_first)
        stack = EncoderTransf(layer, n_layers=n_layers)
        expected = _count_parameters(stack)
        max_len = stack.pe.max_len  # the rows of the positional table
        got = answer(n_layers, d_model, ff_units, norm_first)
        if got == expected:
            continue
        case = f"n_layers={n_layers}, d_model={d_model}, ff_units={ff_units}, norm_first={norm_first}"
        final_norm = 2 * d_model
        if got == expected - n_layers * 2 * d_model:  # before the final norm: they coincide when n_layers is 1
            return (f"for {case} you counted one layer norm per layer: each layer has two wrappers, "
                    "each with its own norm")
        if norm_first and got == expected - final_norm:
            return f"for {case} you left out the stack's final layer norm"
        if not norm_first and got == expected + final_norm:
            return f"for {case} you added a final layer norm, but a norm-last stack has none"
        if got == expected - n_layers * 2 * d_model - d_model * norm_first:  # a scale per norm, no shift
            return (f"for {case} you counted each layer norm as d_model values: it has a scale and a shift, "
                    "each of d_model values")
        if got == expected - n_layers * (d_model * d_model + d_model):
            return (f"for {case} your attention has three projections, query, key and value: it mixes the heads' "
                    "outputs with a fourth, the output projection, with its own weight and bias")
        wide_extra = n_layers * (4 * d_model * d_model + 3 * d_model)  # one more wide head, in every layer
        if got > expected and (got - expected) % wide_extra == 0:
            return (f"for {case} your attention grows with the number of heads, as wide heads do: EncoderLayer's "
                    "heads are narrow, each reading a slice of d_model, so the count is the same for any n_heads")
        if got in (expected - n_layers * (ff_units + d_model), expected - n_layers * ff_units,
                   expected - n_layers * d_model):
            return (f"for {case} your count is short of the feed-forward network's biases: each of its "
                    "two linear layers has one, as long as its output")
        if got == expected - n_layers * 4 * d_model - final_norm * norm_first:
            return f"for {case} you left out the layer norms: each has a scale and a shift of d_model values"
        if got == expected - n_layers * 4 * d_model:  # two norms' scales and shifts, or four projections' biases
            return (f"for {case} your count is 4 · d_model short in every layer: either you left out the layer "
                    "norms (each has a scale and a shift) or the biases of the attention's four projections")
        if got in (expected - n_layers * 8 * d_model, expected - n_layers * 8 * d_model - final_norm * norm_first):
            return (f"for {case} you left out the layer norms and the attention projections' biases: "
                    "nn.Linear has a bias unless told otherwise")
        for width, name in ((4 * d_model, "4 · d_model (the paper's ratio)"), (d_model, "d_model")):
            if width != ff_units and got == expected + n_layers * (2 * d_model + 1) * (width - ff_units):
                return (f"for {case} your feed-forward network has {name} hidden units; its hidden width is "
                        "the ff_units argument, whatever its ratio to d_model")
        if got == expected + n_layers * (ff_units - d_model):
            return (f"for {case} the feed-forward network's second bias has the wrong length: a linear layer's "
                    "bias is as long as its output")
        if got in (expected + max_len * d_model, expected + n_layers * max_len * d_model):
            return (f"for {case} you counted the positional encoding's table: it is a buffer, not a parameter "
                    "(fixed sines and cosines that training does not change)")
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
        return ("your statistics include the padding: its zeros pull every feature's mean towards 0 "
                "and change its variance. Average over the real tokens only")
    if torch.allclose(got[mask], F.layer_norm(x, (3,))[mask], atol=1e-4):
        return "you normalised each token over its features (layer norm); batch norm averages each feature over tokens"
    per_sequence = torch.stack([_masked_batch_norm_solution(x[i:i + 1], mask[i:i + 1])[0]
                                for i in range(len(x))])  # (N, L, D): each sequence on its own
    if torch.allclose(got, per_sequence, atol=1e-4):
        return ("you took each sequence's statistics on its own; batch norm shares every feature's "
                "statistics across the real tokens of the whole batch")
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
def _layer_norm_invariants_solution(d):
    # y_i = (x_i - mean) / std with the biased std (γ = 1, β = 0, ε ignored):
    total = 0.0  # sum_i (x_i - mean) = d·mean - d·mean: every output sums to 0
    squares = float(d)  # sum_i (x_i - mean)² = d·std², divided by std²: the squared length ‖y‖² is d
    # so y lies in the plane sum = 0, on the sphere ‖y‖² = d (radius √d); RMSNorm removes no mean and
    # keeps only ‖y‖² = d: its outputs lie anywhere on that sphere
    return total, squares


def _as_pair(got):
    if isinstance(got, torch.Tensor) and got.numel() == 2:
        got = got.flatten().tolist()
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    numbers = [as_number(value) for value in got]
    return None if None in numbers else numbers


_INVARIANT_WIDTHS = (3, 2, 5, 16)  # the d the checker tries; a slip is named only if it fits every one


@expects_function("layer_norm_invariants(d)")
def _check_layer_norm_invariants(answer):
    squares = {}  # d -> the second number returned
    for d in _INVARIANT_WIDTHS:
        returned = answer(d)
        if isinstance(returned, (tuple, list)) and list(returned) == [None, None]:
            return "replace the two Nones with your numbers: (sum of the features, sum of their squares)"
        got = _as_pair(returned)
        if got is None:
            return f"layer_norm_invariants({d}) should return two numbers, (sum of the features, sum of their squares)"
        total, squares[d] = got
        if abs(total) > 1e-6:
            return (f"for d = {d} your sum of the features is {total:g}; subtract the mean from every feature "
                    "and add them up again: what is left?")

    def every_d(formula):
        return all(abs(squares[d] - formula(d)) < 1e-6 for d in _INVARIANT_WIDTHS)

    if every_d(lambda d: d):
        return None
    if every_d(lambda d: 1):
        return ("a sum of squares of 1 would make every output a unit vector; layer norm makes the standard "
                "deviation 1, not the length. How does a mean of squares relate to their sum?")
    if every_d(lambda d: d**0.5):
        return "your second number is y's length ‖y‖; the exercise asks for the sum of the squares, ‖y‖²"
    if every_d(lambda d: d - 1):
        return "you returned d - 1: that is the unbiased variance; layer norm divides by d (check with nn.LayerNorm)"
    if max(squares.values()) - min(squares.values()) < 1e-6:
        return (f"your sum of squares is {squares[3]:g} for every d: add up the squares of d standardised "
                "features, for a few d, and see whether the number of features matters")
    d = next(d for d in _INVARIANT_WIDTHS if abs(squares[d] - d) >= 1e-6)
    return f"for d = {d} your sum of squares {squares[d]:g} is not what layer norm gives every token"


layer_norm_invariants = Exercise(
    "what layer norm fixes for every token",
    _check_layer_norm_invariants,
    "write y_i = (x_i - mean) / std and sum it over the d features, then sum its squares; or try "
    "nn.LayerNorm(3, elementwise_affine=False) on a few random tokens and look at both sums",
    _layer_norm_invariants_solution,
)
