"""Chapter 16's "Your turn": the bytes a ring all-reduce sends, the memory ZeRO stage 2 leaves on each
GPU, gradient accumulation written by hand, the loss scale that keeps shards of unequal size one
model under DDP's average (once right, run on two gloo ranks), and which one-process run a DDP run
still matches when ``set_epoch`` is forgotten.

In the notebook::

    from stepbystep.exercises import ch16
    ch16.ring_bytes.check(my_bytes)
    ch16.ring_bytes.hint()
    ch16.ring_bytes.solution()
"""
import math

import torch

from ..models.gpt.model import completion_loss
from ..training.data_parallel import DataParallelRun, build_model, manual_train, repeat_dataset, unequal_shards_train
from ..training.processes import run_ranks
from .exercise import Exercise, as_number, expects_function

__all__ = ["ring_bytes", "zero_memory", "accumulate", "shard_scale", "set_epoch_runs"]


UNITS = (("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30))


def _number_checker(expected, slips, unit, fallback):
    """A checker for one number: ``slips`` maps a wrong value to what it says about the reasoning; a value
    that is the answer in kB, MB, GB (or KiB, MiB, GiB) is a unit slip; ``fallback`` follows "too many/few"."""
    def check(answer):
        value = as_number(answer)
        if value is None:
            return f"expected one number of {unit}, got {type(answer).__name__}"
        if math.isclose(value, expected, rel_tol=1e-3):
            return None
        for wrong, why in slips:
            if math.isclose(value, wrong, rel_tol=1e-3):
                return why
        for name, size in UNITS:
            if any(math.isclose(value * size, target, rel_tol=1e-3) for target in (expected, *(w for w, _ in slips))):
                return f"{value:g} looks like a count in {name}: give the answer in {unit}, a plain number"
        direction = "too many" if value > expected else "too few"
        shown = f"{value:,.0f}" if abs(value) >= 1e3 else f"{value:g}"  # every digit a learner typed
        return f"{shown} {unit} is {direction}: {fallback}"
    return check


# ----------------------------------------------------------------------------- 1. the bytes of a ring all-reduce
N_PROCESSES, N_PARAMETERS = 8, 100_000_000  # fp32 gradients: 4 bytes each


def _ring_bytes_solution():
    gradient = N_PARAMETERS * 4  # bytes of one full gradient, fp32
    # reduce-scatter then all-gather: N - 1 steps each, one chunk of gradient / N per step
    return 2 * (N_PROCESSES - 1) * gradient / N_PROCESSES


_GRADIENT = N_PARAMETERS * 4
ring_bytes = Exercise(
    "the bytes one process sends per step",
    _number_checker(_ring_bytes_solution(), [
        ((N_PROCESSES - 1) * _GRADIENT / N_PROCESSES,
         "that is one phase of the ring: after the reduce-scatter every process holds one summed chunk, and the "
         "summed chunks must still go round"),
        (2 * _GRADIENT,  # also N steps of 1/N per phase
         "that is twice the whole gradient: each step sends one chunk, a 1/N share of the gradient, not all of it; "
         "and count the steps of one phase again: how many does a ring of N need before every chunk has been "
         "everywhere?"),
        (2 * (N_PROCESSES - 1) * _GRADIENT,  # = N times the answer (and 8 times: bits, with N = 8)
         "that is what all the processes send together (or one sending the whole gradient at every step): the "
         "question is one process, and each step sends one chunk, 1/N of the gradient (and it asks for bytes, "
         "not bits)"),
        (_ring_bytes_solution() / 4, "that counts numbers, not bytes: an fp32 number is 4 bytes"),
        (_GRADIENT, "that is the gradient's size once: count the steps of both phases, and what one step sends"),
    ], "bytes", "count the ring's steps in each of its two phases, and the share of the gradient each step sends"),
    "The gradient is cut into N chunks. How many steps does each phase (reduce-scatter, all-gather) take, and "
    "how much does one process send in a step?",
    _ring_bytes_solution,
)


# ----------------------------------------------------------------------------- 2. ZeRO stage 2's memory
PSI, GPUS = 1_500_000_000, 16  # parameters; mixed-precision Adam: 2 + 2 + 12 bytes per parameter


def _zero_memory_solution():
    parameters = 2 * PSI  # fp16, on every GPU (stage 3 would shard them)
    gradients = 2 * PSI / GPUS  # fp16, sharded from stage 2
    optimizer = 12 * PSI / GPUS  # fp32 weights, momentum, variance: sharded from stage 1
    return parameters + gradients + optimizer


zero_memory = Exercise(
    "ZeRO stage 2's model state per GPU",
    _number_checker(_zero_memory_solution(), [
        (16 * PSI, "that is plain data parallelism: every GPU holds everything; stage 2 shards two of the three parts"),
        (4 * PSI + 12 * PSI / GPUS, "that is stage 1: only the optimizer state is sharded; stage 2 shards the "
                                   "gradients too"),
        (16 * PSI / GPUS, "that is stage 3 (FSDP): it shards the parameters too; stage 2 keeps every parameter on every GPU"),
        (4 * PSI + 8 * PSI / GPUS, "mixed-precision Adam keeps 12 bytes per parameter: a 4-byte copy of the weights "
                                  "besides momentum and variance"),
    ], "bytes", "write the three parts of the model state per parameter, and say which of them stage 2 divides"),
    "Write the three parts (parameters, gradients, optimizer state) per parameter, then ask of each part: is it "
    "divided among the GPUs in stage 2?",
    _zero_memory_solution,
)


# ----------------------------------------------------------------------------- 3. gradient accumulation by hand
def _accumulate_solution(model, loss_fn, micro_batches):
    k = len(micro_batches)
    for x, y in micro_batches:
        loss = loss_fn(model(x), y) / k  # each micro-batch's share of the large batch's mean
        loss.backward()  # backward adds into .grad: no zero_grad in between


_RUN = DataParallelRun(n_samples=16, global_batch=8, seed=2)


def _gradients(model):
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]


def _matches(grads, reference, scale=1.0):
    return all(g is not None and torch.allclose(g, r * scale, rtol=1e-4, atol=1e-7) for g, r in zip(grads, reference))


@expects_function("accumulate(model, loss_fn, micro_batches)")
def _check_accumulate(answer):
    inputs, targets = repeat_dataset(_RUN).tensors
    x, y = inputs[:8], targets[:8]  # (8, L) each
    model = build_model(_RUN)
    completion_loss(model(x), y).backward()
    whole = _gradients(model)  # the large batch's gradient
    for k in (2, 4):
        model.zero_grad(set_to_none=True)
        micro = list(zip(x.chunk(k), y.chunk(k)))
        answer(model, completion_loss, micro)
        grads = _gradients(model)
        if _matches(grads, whole):
            continue
        if any(g is None for g in grads):
            return "some parameters have no gradient after your function: call backward on each micro-batch's loss"
        if _matches(grads, whole, k):
            return f"with k = {k} your gradient is k times the large batch's: the large batch's loss is a mean"
        if _matches(grads, whole, 1 / k):
            return (f"with k = {k} your gradient is 1/k of the large batch's: each micro-batch's loss needs dividing "
                    "by k once")
        for which, (mx, my) in (("last", micro[-1]), ("first", micro[0])):
            model.zero_grad(set_to_none=True)
            completion_loss(model(mx), my).backward()
            alone = _gradients(model)
            if _matches(grads, alone) or _matches(grads, alone, 1 / k):
                return (f"your gradient is the {which} micro-batch's alone: only some micro-batches reach .grad"
                        + (", something clears the earlier ones' gradients" if which == "last" else ""))
        ratio = _constant_ratio(grads, whole)
        if ratio is not None:
            return (f"with k = {k} your gradient points the right way but is {ratio:.4g} times the large batch's: "
                    "what share of the large batch's mean loss is one micro-batch's mean loss?")
        return f"with k = {k} your gradient is not the large batch's"
    return None


def _constant_ratio(grads, reference):
    """The one number ``c`` with every gradient ``c`` times the reference's (to 1e-4), or None."""
    flat = torch.cat([g.reshape(-1) for g in grads])
    ref = torch.cat([r.reshape(-1) for r in reference])
    ratio = (flat @ ref / (ref @ ref)).item()
    return ratio if ratio > 0 and _matches(grads, reference, ratio) else None


accumulate = Exercise(
    "gradient accumulation",
    _check_accumulate,
    "backward adds to .grad rather than replacing it. The large batch's loss is the mean over its samples: "
    "what share of it is one micro-batch's mean loss?",
    _accumulate_solution,
)


# ----------------------------------------------------------------------------- 4. shards of unequal size
SHARDS = ((3, 5), (2, 2, 4), (1, 1, 1, 5), (4, 4))  # terms per rank; B = 8 in each, N = len(shards)


def _shard_scale_solution(n, B, N):
    # DDP's gradient: (1/N) sum_r scale_r * (1/n_r) sum over rank r's terms; each term must weigh 1/B
    return N * n / B  # 1 when every shard holds B/N terms


def _term_weights(answer, shards):
    """What one term of each rank weighs in DDP's averaged gradient, ``scale / (N n)``, times ``B``: 1 is right."""
    B, N = sum(shards), len(shards)
    scales = [answer(n, B, N) for n in shards]
    values = [as_number(scale) for scale in scales]
    if None in values:
        bad = scales[values.index(None)]
        raise TypeError(f"expected one number from shard_scale(n, B, N), got {type(bad).__name__}")
    return [B * value / (N * n) for value, n in zip(values, shards)]


@expects_function("shard_scale(n, B, N)")
def _check_shard_scale(answer):
    for shards in SHARDS:
        weights = _term_weights(answer, shards)
        if all(math.isclose(weight, 1, rel_tol=1e-6) for weight in weights):
            continue
        B, N = sum(shards), len(shards)
        if any(weight == 0 for weight in weights):
            return (f"with shards of {shards} a scale is 0, so that rank's terms drop out of the gradient "
                    "(an integer division?)")
        if all(math.isclose(answer(n, B, N), 1, rel_tol=1e-6) for n in shards):
            return (f"a scale of 1 is right only when every shard holds B/N terms: with shards of {shards}, work out "
                    "what one term of each shard weighs in DDP's average")
        if all(math.isclose(weight, weights[0], rel_tol=1e-6) for weight in weights):
            if math.isclose(weights[0], 1 / N, rel_tol=1e-6):
                return ("every term weighs the same now, but N times too little: DDP divides the summed gradients by N "
                        "after your scale")
            if math.isclose(weights[0], B / N, rel_tol=1e-6):
                return "every term weighs the same now, but 1/N rather than 1/B: the whole batch's loss is a mean"
            return (f"every term weighs the same now, but {weights[0]:.6g} times what a term of the whole batch's "
                    "mean does")
        small, large = weights[shards.index(min(shards))], weights[shards.index(max(shards))]
        if small > large * (1 + 1e-6):
            return (f"with shards of {shards}, a term of the smallest shard still weighs {small / large:.3g} times one "
                    "of the largest: a rank with fewer terms must count less")
        return (f"with shards of {shards}, a term of the smallest shard weighs {small / large:.3g} times one of the "
                "largest: your scale corrects too much (its mean loss already divides by n)")
    return None


SHARD_RUN = DataParallelRun(steps=6, global_batch=8, n_samples=16, seed=0)  # shards of 3 and 5 streams


def _run_shards(answer):
    """Train ``SHARD_RUN`` on two gloo ranks holding 3 and 5 of every 8 streams, with the answer's scales and
    with a scale of 1, and say how far each ends from one process on the whole batch."""
    shards = (3, 5)
    # the ranks get the answer's numbers, not the function: a function defined in a notebook cannot travel
    scales = tuple(as_number(answer(n, sum(shards), len(shards))) for n in shards)
    ranks = run_ranks(unequal_shards_train, 2, SHARD_RUN, shards, [scales, (1.0, 1.0)])  # [ (steps, P) ] per rank
    one = manual_train(0, 1, SHARD_RUN)  # (steps, P): one process, whole batches
    yours, plain = (max(float((rank[i] - one).abs().max()) for rank in ranks) for i in (0, 1))
    return (f"  Run on two gloo ranks holding 3 and 5 of every 8 streams, {SHARD_RUN.steps} SGD steps under DDP, "
            f"against one process on the whole batch: with your scales ({scales[0]:.4g}, {scales[1]:.4g}) the "
            f"weights stay within {yours:.1e} of it at every step; with a scale of 1 on both, {plain:.2g}.")


class _RunWhenRight(Exercise):
    """An exercise whose check, once the answer is right, also runs it and reports what the run gives."""

    def __init__(self, *args, run):
        super().__init__(*args)
        self._run = run

    def check(self, answer):
        result = super().check(answer)
        if result:
            result.message += "\n" + self._run(answer)
        return result


shard_scale = _RunWhenRight(
    "the loss scale for shards of unequal size",
    _check_shard_scale,
    "DDP's gradient is (1/N) Σ_r scale_r · (the gradient of rank r's mean over its n_r terms). Write how much one "
    "term of rank r weighs in it, and set that equal to what it weighs in the whole batch's mean loss.",
    _shard_scale_solution,
    run=_run_shards,
)


# ----------------------------------------------------------------------------- 5. forget set_epoch: predict, then run
BROKEN_RUNS = {"no rank calls set_epoch": False, "only rank 0 calls set_epoch": (0,)}  # DataParallelRun.set_epoch
REFERENCES = ("reshuffling", "no reshuffling", "neither")  # the one-process run each matches, if any


def _set_epoch_solution():
    # A DistributedSampler draws its permutation from its seed plus its own epoch number, 0 until set_epoch
    # moves it. Two ranks deal out one permutation only while they agree on both.
    return {
        "no rank calls set_epoch": "no reshuffling",  # every rank stays at epoch 0: one order, every epoch
        "only rank 0 calls set_epoch": "neither",  # from epoch 1 the ranks deal from two permutations
    }


def _check_set_epoch(answer):
    if not isinstance(answer, dict):
        return f"expected a dict from each run's name to one of {REFERENCES}, got {type(answer).__name__}"
    if set(answer) != set(BROKEN_RUNS):
        return f"expected the keys {list(BROKEN_RUNS)}, got {list(answer)}"
    for name, wanted in _set_epoch_solution().items():
        got = answer[name]
        if not isinstance(got, str) or got.strip().lower() not in REFERENCES:
            return f"for {name!r} write one of {REFERENCES}, got {got!r}"
        got = got.strip().lower()
        if got == wanted:
            continue
        if name == "no rank calls set_epoch" and got == "reshuffling":
            return (f"you predict that {name!r} still reshuffles: which epoch does a sampler hold when nobody calls "
                    "set_epoch, and what does it draw its permutation from?")
        if name == "no rank calls set_epoch":
            return (f"you predict that {name!r} matches no one-process run: a run leaves one process only when its "
                    "ranks deal from different permutations; here, do the ranks differ in seed or in epoch?")
        return (f"you predict that {name!r} matches {got!r}: from the second epoch on, which epoch does each rank's "
                "sampler hold, and do the ranks still deal out one permutation between them?")
    return None


set_epoch_runs = Exercise(
    "which one-process run each broken DDP run matches",
    _check_set_epoch,
    "A DistributedSampler seeds its permutation with seed + epoch, and the epoch is the sampler's own number, 0 "
    "until set_epoch changes it. For each run, write down which epoch each rank's sampler holds in the second "
    "epoch, then ask whether the two ranks' shards still make up one permutation, and whose.",
    _set_epoch_solution,
)
