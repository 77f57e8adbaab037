"""Mixed precision on the CPU: the course's decoder-only model trained under ``torch.autocast("cpu",
dtype=torch.bfloat16)`` against float32, with the same seed, weights and batches.

Autocast keeps the parameters, their gradients and the optimizer in float32. Inside its region it keeps
two lists: the operations it lowers to bfloat16 (the matrix products: ``linear``, ``matmul``, ``bmm``...)
run on bfloat16 copies of their inputs, and those it raises to float32 (on the CPU the losses, such as
``cross_entropy`` and ``nll_loss``, and a few others) on float32 copies. Every other operation follows
its inputs: a softmax or an activation after a matrix product computes in bfloat16, and a residual sum
of a bfloat16 branch and a float32 stream is float32 (``autocast_rules`` shows one of each). bfloat16
keeps float32's 8 exponent bits and only 7 stored bits of mantissa (float32: 23): the same range,
coarser steps. float16 has 5 exponent bits: small gradients fall below its smallest number and become
zero, which is why float16 training multiplies the loss by a scale first (``torch.amp.GradScaler``) and
bfloat16 training does not.

The task is chapter 13's random tokens, then the same tokens again, of ``length`` 4: the first 3 of the
7 predicted tokens cannot be known, so on fresh streams the loss cannot fall below 3/7 ln(vocab_size)
(``loss_floor``); on the streams it revisits, a model can dip a little below it by remembering some.
300 steps, because after 200 some seeds have not yet learned to copy.
"""
import math

import torch

from ..checks import check_instance, check_positive_int
from ..models.gpt.model import completion_loss
from ..seeding import get_rng_state
from ..training import StepByStep
from ..training.data_parallel import DataParallelRun, build_model, repeat_dataset

__all__ = ["PRECISION_RUN", "loss_floor", "precision_losses", "precision_study", "autocast_rules", "autocast_dtypes",
           "float_formats"]

PRECISION_RUN = DataParallelRun(steps=300, global_batch=32, n_samples=256, length=4, lr=1e-2)


def loss_floor(run):
    """The lowest mean loss a model can reach on ``run``'s streams: the first ``length - 1`` of the
    ``2·length - 1`` targets are uniform over the vocabulary, the rest copies."""
    return (run.length - 1) / (2 * run.length - 1) * math.log(run.vocab_size)


def precision_losses(run, bf16):
    """Adam (``run.lr``) for ``run.steps`` steps on ``run``'s batches in order, through ``StepByStep`` with
    ``precision="bf16-mixed"`` (the forward pass and the loss under bfloat16 autocast) if ``bf16``, else
    ``"32"``: each step's loss ``(steps,)``."""
    check_instance("run", run, DataParallelRun)
    check_instance("bf16", bf16, bool, "True or False")
    inputs, targets = repeat_dataset(run).tensors  # (n_samples, 2·length - 1) each
    model = build_model(run)
    batches = [(inputs[start:start + run.global_batch], targets[start:start + run.global_batch])  # (B, L) each
               for start in range(0, run.n_samples - run.global_batch + 1, run.global_batch)]
    losses = []

    def loss_fn(logits, y):
        loss = completion_loss(logits, y)  # float32 either way: autocast raises cross_entropy
        losses.append(loss.item())
        return loss

    trainer = StepByStep(model, loss_fn, torch.optim.Adam(model.parameters(), lr=run.lr), device="cpu",
                         precision="bf16-mixed" if bf16 else "32")
    trainer.set_loaders(batches)
    trainer.rng_state = get_rng_state()  # no seeding: the streams go on from the model's seed
    trainer.train_steps(run.steps, progress=False)  # the gradients land in the float32 parameters' .grad
    return torch.tensor(losses)


def precision_study(seeds=(0, 1, 2), run=PRECISION_RUN):
    """``run`` on each seed in float32 and under bfloat16 autocast: ``{"float32": (seeds, steps),
    "bfloat16": (seeds, steps), "floor": loss_floor(run)}``."""
    check_instance("seeds", seeds, (list, tuple), "a list of seeds")
    if not seeds:
        raise ValueError("seeds must hold at least one seed, got none")
    curves = {name: torch.stack([precision_losses(run.replace(seed=seed), name == "bfloat16") for seed in seeds])
              for name in ("float32", "bfloat16")}
    return {**curves, "floor": loss_floor(run)}


def autocast_rules():
    """One operation of each kind under CPU bfloat16 autocast, the dtype it returns: ``{"linear"`` (lowered,
    on float32 inputs), ``"cross_entropy"`` (raised, on bfloat16 logits) and ``"cross_entropy outside"`` (the
    same call without autocast), ``"softmax of bfloat16"`` and ``"softmax of float32"`` (neither list: it
    follows its input), ``"bfloat16 + float32"`` (the residual sum)``}``."""
    generator = torch.Generator().manual_seed(0)
    x, weight = torch.randn(4, 8, generator=generator), torch.randn(8, 8, generator=generator)  # float32
    targets = torch.randint(0, 8, (4,), generator=generator)
    low = x.bfloat16()
    rules = {"cross_entropy outside": torch.nn.functional.cross_entropy(low, targets).dtype}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        rules["linear"] = torch.nn.functional.linear(x, weight).dtype
        rules["cross_entropy"] = torch.nn.functional.cross_entropy(low, targets).dtype
        rules["softmax of bfloat16"] = torch.softmax(low, -1).dtype
        rules["softmax of float32"] = torch.softmax(x, -1).dtype
        rules["bfloat16 + float32"] = (low + x).dtype
    return rules


def autocast_dtypes(run=PRECISION_RUN, batch=4):
    """One training step of ``run``'s model (``StepByStep``, ``precision="bf16-mixed"``, plain SGD) on
    ``batch`` streams: the dtype of each leaf module's output (``{name: dtype}``, in call order), of the
    model's output (``"logits"``), of the loss, and the dtypes of the parameters and of their gradients (sets)."""
    check_positive_int("batch", batch)
    model = build_model(run)
    x, y = repeat_dataset(run)[:batch]  # (batch, 2·length - 1) each
    outputs = {}

    def record(name):
        def hook(_module, _inputs, output):
            outputs.setdefault(name, output.dtype)  # returns None: the output goes on unchanged
        return hook

    leaves = [(name, module) for name, module in model.named_modules() if not list(module.children())]  # Linear...
    hooks = [module.register_forward_hook(record(name)) for name, module in leaves + [("logits", model)]]
    trainer = StepByStep(model, completion_loss, torch.optim.SGD(model.parameters(), lr=0.1), device="cpu",
                         precision="bf16-mixed")
    loss = trainer.batch_loss((x, y))
    for hook in hooks:
        hook.remove()
    trainer.step(loss)  # the backward pass: the gradients land in the float32 parameters' .grad
    logits = outputs.pop("logits")
    return {"modules": outputs, "logits": logits, "loss": loss.dtype,
            "parameters": {p.dtype for p in model.parameters()}, "gradients": {p.grad.dtype for p in model.parameters()}}


def float_formats():
    """float32, bfloat16 and float16 side by side: ``{name: {"exponent_bits", "mantissa_bits", "max",
    "smallest_normal", "smallest", "eps"}}`` (``smallest``: the smallest positive number, subnormal)."""
    formats = {}
    for name, dtype, exponent in (("float32", torch.float32, 8), ("bfloat16", torch.bfloat16, 8), ("float16", torch.float16, 5)):
        info = torch.finfo(dtype)
        formats[name] = {"exponent_bits": exponent, "mantissa_bits": info.bits - 1 - exponent, "max": info.max,
                         "smallest_normal": info.smallest_normal, "smallest": info.smallest_normal * info.eps,
                         "eps": info.eps}
    return formats
