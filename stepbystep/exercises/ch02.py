"""Chapter 02, self-attention: the "Your turn" exercises.

* ``decoder_mask``: combine the causal mask and each sequence's padding into ``(N, L, L)``;
* ``masked_attention``: find and repair the bug of ``suspect_attention``, a masked attention;
* ``shift_rotation``: the 2×2 rotation that moves a (sin, cos) pair ``k`` positions ahead;
* ``decoder_start``: train the book's setup, whose decoder starts from the last source corner,
  with and without positions, and hand in the runs (the checker reads their test losses).

In a notebook::

    from stepbystep.exercises import ch02
    ch02.decoder_mask.check(my_decoder_mask)
    ch02.decoder_mask.solution()
"""
import math

import torch
from torch import nn

from ..data import square_datasets
from ..experiments.square_order import FixedStartSeq2Seq
from ..models import (
    DecoderPe,
    DecoderSelfAttn,
    EncoderDecoderSelfAttn,
    EncoderPe,
    EncoderSelfAttn,
    scaled_dot_product,
    sinusoidal_table,
    subsequent_mask,
)
from ..training import StepByStep
from .exercise import Exercise, as_number, expects_function

__all__ = ["decoder_mask", "decoder_start", "masked_attention", "shift_rotation", "suspect_attention"]


# ---------------------------------------------------------------- causal and padding mask
def _decoder_mask_solution(lengths, size):
    causal = torch.ones(size, size, dtype=torch.bool).tril()  # (L, L): query i may read keys 0..i
    real = torch.arange(size) < lengths[:, None]  # (N, L): True on each sequence's real positions
    # a key must come no later than the query AND be real; padding blocks keys, the last dimension
    return causal[None] & real[:, None, :]  # (N, L, L)


_MASK_CASES = ((torch.tensor([3, 1, 2]), 3), (torch.tensor([5, 2]), 5), (torch.tensor([4, 3, 1, 2]), 4))


@expects_function("(lengths, size) -> mask")
def _check_decoder_mask(make_mask):
    for lengths, size in _MASK_CASES:
        n = len(lengths)
        mask = make_mask(lengths.clone(), size)
        if not isinstance(mask, torch.Tensor):
            return f"for {n} sequences of size {size} expected a tensor, got {type(mask).__name__}"
        if tuple(mask.shape) != (n, size, size):
            if tuple(mask.shape) == (1, size, size):
                return (f"expected one mask per sequence, shape (N, L, L) = ({n}, {size}, {size}), got (1, {size}, "
                        f"{size}): the padding differs from sequence to sequence")
            return f"for {n} sequences of size {size} expected shape ({n}, {size}, {size}), got {tuple(mask.shape)}"
        if mask.dtype != torch.bool:
            return f"expected a bool mask (True = may attend), got dtype {mask.dtype}"
        real = torch.arange(size) < lengths[:, None]  # (N, L)
        causal = subsequent_mask(size).expand(n, size, size)  # (N, L, L)
        padding = real[:, None, :].expand(n, size, size)  # (N, L, L): padded keys blocked
        expected = causal & padding
        if torch.equal(mask, expected):
            continue
        if torch.equal(mask, ~expected):
            return "your mask is inverted: True must mean 'may attend'"
        if torch.equal(mask, causal):
            return "a padded query can still read the padded keys of a shorter sequence: the padding is missing"
        if torch.equal(mask, padding):
            return "a query can read keys that come after it: the causal part is missing"
        if torch.equal(mask, causal | padding):
            return "your mask lets a key through if it passes either mask; it has to pass both"
        upper = torch.ones(size, size, dtype=torch.bool).triu()[None]  # (1, L, L): keys i..L-1
        if torch.equal(mask, upper & padding):
            return ("a query may attend to the keys after it and not to the ones before it: check which triangle "
                    "your causal part keeps")
        if torch.equal(mask, expected.transpose(1, 2)):
            return "query 0 may attend to a later key: your mask is the transpose of the right one"
        ahead = torch.ones(size, size, dtype=torch.bool).tril(diagonal=1)[None]  # (1, L, L): keys 0..i+1
        if torch.equal(mask, ahead & padding) or torch.equal(mask, ahead.expand(n, size, size)):
            return ("query i may read key i + 1, the next position: your causal part keeps one diagonal too many "
                    "(a query reads itself and what comes before it, nothing after)")
        short = torch.arange(size) < (lengths - 1)[:, None]  # (N, L): real positions but the last
        if torch.equal(mask, causal & short[:, None, :]):
            return ("your mask hides the last real key of each sequence: check the comparison that turns the lengths "
                    "into real positions")
        rows = real[:, :, None]  # (N, L, 1): real queries
        if torch.equal(mask, causal & rows) or torch.equal(mask, expected & rows):  # padded query rows blocked
            return ("a padded query's row lets it read no key at all, so its softmax has nothing to normalise (NaN); "
                    "padding hides keys (columns), not queries")
        if not expected.diagonal(dim1=1, dim2=2)[real].eq(mask.diagonal(dim1=1, dim2=2)[real]).all():
            return "a real position must be allowed to attend to itself"
        if (~mask.any(dim=-1)).any():  # a query with no key left to read
            return "a query's row lets it read no key at all, so its softmax has nothing to normalise (NaN)"
        reads_too_much = bool((mask & ~expected).any())
        hides_too_much = bool((~mask & expected).any())
        if reads_too_much and hides_too_much:
            return f"for lengths {lengths.tolist()} your mask lets queries read some keys they must not, and hides others"
        if reads_too_much:
            return f"for lengths {lengths.tolist()} your mask lets a query read a key it must not"
        return f"for lengths {lengths.tolist()} your mask hides from a query a key it may read"
    return None


decoder_mask = Exercise(
    "causal and padding mask",
    _check_decoder_mask,
    "build the two masks on their own, the causal one (L, L) and the padding one from the lengths "
    "(N, L); a key must pass both. Which dimension of (N, L_query, L_key) does padding block?",
    _decoder_mask_solution,
)


# ---------------------------------------------------------------- masked attention
def _masked_attention_solution(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (N, L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # (N, L_q, L_k): blocked keys get -inf
    weights = torch.softmax(scores, dim=-1)  # (N, L_q, L_k): each row sums to 1
    context = weights @ v  # (N, L_q, d_v)
    return context, weights


def suspect_attention(q, k, v, mask=None):
    """Scaled dot-product attention with a bug that shows only under a mask (exercise 2)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (N, L_q, L_k)
    weights = torch.softmax(scores, dim=-1)  # (N, L_q, L_k)
    if mask is not None:
        weights = weights * mask  # (N, L_q, L_k): blocked keys set to 0
    return weights @ v, weights  # (N, L_q, d_v), (N, L_q, L_k)


def _attention_inputs():
    generator = torch.Generator().manual_seed(2)
    q = torch.randn(2, 3, 16, generator=generator)  # (N, L_q, d_k)
    k = torch.randn(2, 4, 16, generator=generator)  # (N, L_k, d_k)
    v = torch.randn(2, 4, 5, generator=generator)  # (N, L_k, d_v)
    padding = torch.tensor([[True, True, True, False], [True, True, False, False]]).unsqueeze(1)  # (N, 1, L_k)
    causal = subsequent_mask(4)[:, 1:]  # (1, 3, 4): query i may read keys 0..i+1
    return q, k, v, padding, causal


@expects_function("(q, k, v, mask=None) -> (context, weights)")
def _check_masked_attention(attention):
    q, k, v, padding, causal = _attention_inputs()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (N, L_q, L_k)
    for mask, label in ((None, "without a mask"), (padding, "with a padding mask"), (causal, "with a causal mask")):
        result = attention(q, k, v, mask) if mask is not None else attention(q, k, v)
        if not isinstance(result, tuple) or len(result) != 2:
            return f"expected a pair (context, weights), got {type(result).__name__}"
        context, weights = result
        if not isinstance(context, torch.Tensor) or not isinstance(weights, torch.Tensor):
            return (f"expected two tensors (context, weights), got {type(context).__name__} and "
                    f"{type(weights).__name__}")
        expected_context, expected_weights = scaled_dot_product(q, k, v, mask)
        if tuple(weights.shape) != (2, 3, 4) or tuple(context.shape) != (2, 3, 5):
            return (f"expected weights (N, L_q, L_k) = (2, 3, 4) and context (N, L_q, d_v) = (2, 3, 5), "
                    f"got {tuple(weights.shape)} and {tuple(context.shape)}")
        weights = weights.detach()
        if mask is not None:
            allowed = mask.expand_as(weights)  # (N, L_q, L_k)
            inverted = torch.softmax(scores.masked_fill(allowed, float("-inf")), dim=-1)  # NaN in rows with no key
            if torch.allclose(weights.nan_to_num(), inverted.nan_to_num(), atol=1e-5):
                return (f"{label}, your weights go to the keys the mask blocks: True in the mask means 'may attend', "
                        "so fill the scores where it is False")
            after = torch.softmax(scores, dim=-1) * allowed  # (N, L_q, L_k): masked after normalising
            if torch.allclose(weights, after, atol=1e-5):
                return (f"{label}, the blocked keys get no weight, but the rows no longer sum to 1: the weight they "
                        "had is lost rather than shared among the allowed keys. Where in the computation should the "
                        "mask act?")
        if not torch.allclose(weights.sum(-1), torch.ones(2, 3), atol=1e-5):
            return f"{label}, each query's weights must sum to 1: take the softmax over the keys, the last dimension"
        if mask is not None and weights.masked_select(~mask.expand_as(weights)).abs().max() > 1e-6:
            return f"{label}, blocked keys still get weight: their scores must not take part in the softmax"
        unscaled = torch.softmax(q @ k.transpose(-2, -1), dim=-1)  # (N, L_q, L_k)
        if mask is None and torch.allclose(weights, unscaled, atol=1e-5):
            return "your weights are those of unscaled dot products: the scores are missing their scaling"
        if not torch.allclose(weights, expected_weights, atol=1e-5):
            return f"the weights {label} are not softmax(q kᵀ / √d_k)"
        if not torch.allclose(context, expected_context, atol=1e-5):
            return f"the weights are right but the context {label} is not: it is weights @ v"
    return None


masked_attention = Exercise(
    "repair suspect_attention",
    _check_masked_attention,
    "print weights.sum(-1) of suspect_attention under a mask: what should every row sum to? A blocked key "
    "should behave as if it were not there at all.",
    _masked_attention_solution,
)


# ---------------------------------------------------------------- shift as a rotation
def _shift_rotation_solution(omega, k):
    angle = torch.tensor(omega * k, dtype=torch.float64)
    cos, sin = torch.cos(angle), torch.sin(angle)
    # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
    return torch.stack([torch.stack([cos, sin]), torch.stack([-sin, cos])])  # (2, 2)


@expects_function("(omega, k) -> (2, 2) tensor")
def _check_shift_rotation(rotation):
    d_model, max_len = 8, 30
    table = sinusoidal_table(max_len, d_model).double()  # (max_len, d_model)
    for pair in range(d_model // 2):
        omega = 10000.0 ** (-2 * pair / d_model)
        for k in (1, 3, 7):
            matrix = torch.as_tensor(rotation(omega, k), dtype=torch.float64)
            if tuple(matrix.shape) != (2, 2):
                return f"expected a (2, 2) matrix, got shape {tuple(matrix.shape)}"
            start = table[: max_len - k, 2 * pair: 2 * pair + 2]  # (T, 2): (sin, cos) at t
            shifted = table[k:, 2 * pair: 2 * pair + 2]  # (T, 2): (sin, cos) at t + k
            moved = start @ matrix.T  # (T, 2): R applied to every row
            if torch.allclose(moved, shifted, atol=1e-5):
                continue
            if torch.allclose(start @ matrix, shifted, atol=1e-5):
                return "your matrix rotates the wrong way: it is the transpose of the right one (check the signs of sin)"
            if torch.allclose(moved, table[: max_len - k, 2 * pair: 2 * pair + 2], atol=1e-5) and k * omega > 1e-3:
                return "your matrix leaves the pair where it was: it must depend on the angle omega * k"
            return (f"for pair {pair} (omega={omega:.4g}) and k={k}, R @ [sin(ωt), cos(ωt)] is not "
                    f"[sin(ω(t+k)), cos(ω(t+k))]: your result is off by up to {(moved - shifted).abs().max():.4f}")
    return None


shift_rotation = Exercise(
    "shift as a rotation",
    _check_shift_rotation,
    "expand sin(ωt + ωk) and cos(ωt + ωk) with the angle-addition formulas; the entries of R are "
    "cos(ωk) and ±sin(ωk).",
    _shift_rotation_solution,
)


# ---------------------------------------------------------------- where the decoder starts
def _decoder_start_solution():
    import statistics

    from torch import nn, optim
    from torch.utils.data import DataLoader

    from stepbystep.data import square_datasets
    from stepbystep.models import DecoderPe, DecoderSelfAttn, EncoderDecoderSelfAttn, EncoderPe, EncoderSelfAttn
    from stepbystep.training import StepByStep

    train_data, test_data = square_datasets(n_train=256, n_test=128, train_seed=13, test_seed=17)
    runs = {"no PE": [], "PE": []}
    for variant in runs:
        for seed in range(5):
            torch.manual_seed(seed)
            if variant == "no PE":
                encoder, decoder = EncoderSelfAttn(3, 2, 10, n_features=2), DecoderSelfAttn(3, 2, 10, n_features=2)
            else:
                encoder = EncoderPe(3, 2, 10, n_features=2, max_len=2)
                decoder = DecoderPe(3, 2, 10, n_features=2, max_len=2)
            model = EncoderDecoderSelfAttn(encoder, decoder, input_len=2, target_len=2)
            sbs = StepByStep(model, nn.MSELoss(), optim.Adam(model.parameters(), lr=0.01))
            sbs.set_loaders(DataLoader(train_data, batch_size=16, shuffle=True),
                            DataLoader(test_data, batch_size=len(test_data)))
            sbs.train(20, seed=seed, progress=False)
            runs[variant].append(sbs)
    medians = {variant: statistics.median(sbs.val_losses[-1] for sbs in trainers) for variant, trainers in runs.items()}
    print(medians)
    # No: the decoder's first input is the last source corner and cross-attention gives it the
    # set of both, so the first corner is the other one; the order reaches the decoder without
    # positions. The order-blind median falls far below the fixed-start floor of 0.5 (some seeds
    # solve the task, 0.02), and with positions the median is about the same: over 16 seeds,
    # 0.25 without and 0.26 with, each variant winning at 8 of them. In this setup positions
    # add nothing the first input did not already give.
    return runs  # ch02.decoder_start.check(runs)


_START_VARIANTS = {"no PE": (EncoderSelfAttn, DecoderSelfAttn), "PE": (EncoderPe, DecoderPe)}
_START_EPOCHS, _START_SEEDS = 20, 5


def _a(name):
    """``name`` with its article: "an EncoderPe", "a DecoderPe"."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _run_problem(variant, i, sbs, source, target):
    """What is wrong with run ``i`` of ``variant``, a trainer of the book's setup; ``None`` if nothing."""
    run = f'your "{variant}" run {i}'
    if not isinstance(sbs, StepByStep):
        return f"{run} is {_a(type(sbs).__name__)}: hand in the StepByStep trainer of each seed"
    model = sbs.model
    if isinstance(model, FixedStartSeq2Seq):
        return (f"{run} is a FixedStartSeq2Seq, whose decoder starts from a fixed vector: this exercise is about "
                "the book's setup, EncoderDecoderSelfAttn, whose decoder starts from the last source corner")
    if type(model) is not EncoderDecoderSelfAttn:
        return f"{run} trains {_a(type(model).__name__)}: the book's setup is an EncoderDecoderSelfAttn"
    encoder_class, decoder_class = _START_VARIANTS[variant]
    if type(model.encoder) is not encoder_class or type(model.decoder) is not decoder_class:
        return (f"{run} has {_a(type(model.encoder).__name__)} and {_a(type(model.decoder).__name__)}: "
                f'"{variant}" is {encoder_class.__name__} with {decoder_class.__name__}')
    if variant == "PE" and not (model.encoder.pe.pe.any() and model.decoder.pe.pe.any()):
        return f"{run} has its positional table zeroed: that is the study's control, not positions"
    if len(sbs.val_losses) != _START_EPOCHS:
        return (f"{run} recorded {len(sbs.val_losses)} test losses: train it for {_START_EPOCHS} epochs, "
                "with the test set as its validation loader, as the study above did")
    lr = sbs.optimizer.param_groups[0]["lr"]
    if not isinstance(sbs.loss_fn, nn.MSELoss) or lr != 0.01:
        return f"{run} trains with {type(sbs.loss_fn).__name__} at lr {lr}: the study used MSELoss and Adam at 0.01"
    test_loss = float(((sbs.predict(source) - target) ** 2).mean())  # greedy, from the sources alone
    if abs(test_loss - sbs.val_losses[-1]) > 1e-4 * max(1.0, test_loss):
        return (f"{run} recorded a last test loss of {sbs.val_losses[-1]:.4f}, but its model scores {test_loss:.4f} "
                "on the test set of square_datasets(n_train=256, n_test=128, train_seed=13, test_seed=17): "
                "validate on that set, and hand in the trainer as training left it")
    return None


def _check_decoder_start(answer):
    keys = tuple(_START_VARIANTS)
    shape = '{"no PE": [trainer per seed], "PE": [trainer per seed]}'
    if isinstance(answer, dict) and set(answer) == set(keys) and all(as_number(v) is not None for v in answer.values()):
        return (f"expected your trained runs, {shape}, got two numbers: the checker reads the test losses from the "
                "trainers themselves, so train the runs and hand them in")
    if not isinstance(answer, dict) or set(answer) != set(keys):
        got = sorted(answer) if isinstance(answer, dict) else type(answer).__name__
        return f"expected a dict {shape} of StepByStep trainers, got {got}"
    for variant, runs in answer.items():
        if not isinstance(runs, (list, tuple)):
            return f'expected a list of trainers, one per seed, for "{variant}", got {type(runs).__name__}'
        if len(runs) < _START_SEEDS:
            return f'expected at least {_START_SEEDS} runs, one per seed, for "{variant}", got {len(runs)}'
    if len(answer["no PE"]) != len(answer["PE"]):
        return (f'you trained {len(answer["no PE"])} "no PE" runs and {len(answer["PE"])} "PE" runs: compare the '
                "two variants on the same seeds")
    _, test_data = square_datasets(n_train=256, n_test=128, train_seed=13, test_seed=17)
    source, target = (tensor.numpy() for tensor in test_data.tensors)  # (128, 2, 2) each
    for variant, runs in answer.items():
        for i, sbs in enumerate(runs):
            problem = _run_problem(variant, i, sbs, source, target)
            if problem:
                return problem
        histories = [tuple(sbs.val_losses) for sbs in runs]
        if len(set(histories)) < len(histories):
            return (f'two of your "{variant}" runs trained exactly alike: seed each run with its own seed, '
                    "the weights (torch.manual_seed) and the batch order (train(20, seed=seed))")
    return None


decoder_start = Exercise(
    "where the decoder starts",
    _check_decoder_start,
    "the decoder's first input is the last source corner, and cross-attention hands it both corners as a set. "
    "Knowing the set and which corner came last, do you still need positions to know which came first?",
    _decoder_start_solution,
)
