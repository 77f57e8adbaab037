"""QK-norm at a high learning rate (chapter 17): without warm-up, a large step lets the queries and
keys grow, the attention logits ``q·k/√d_k`` with them, until the softmax saturates and the loss
spikes or diverges (Dehghani et al., Scaling Vision Transformers to 22 Billion Parameters, 2023;
Wortsman et al., Small-scale proxies for large-scale Transformer training instabilities, 2023).
An RMSNorm on each head's queries and keys (``qk_norm="head"``) bounds the logits by the norms'
gains: ``|q̂·k̂| / √d_k <= √d_k · max|g_q| · max|g_k|``.

The study trains today's block (RoPE, RMSNorm, SwiGLU, no biases) on chapter 10's lag-copy task,
with and without QK-norm, at a high learning rate and at a low one (the control: the difference is
the learning rate, not the model), over ``SEEDS``, Adam at a constant rate. For each run it keeps
the largest attention logit after training (``max_attention_logit``), the final loss (the mean of
the last ``TAIL`` steps), the largest jump of the loss over its best so far (a spike) and whether
the loss stopped being finite.
"""
import math
import sys

import torch

from ...data.lag_copy import lag_copy_accuracy, lag_copy_batch
from ...expect import Claim
from ...models.attention.narrow import NarrowMultiHeadAttention
from ...models.gpt.config import DecoderConfig
from ...training import Callback
from .recipe import load_study, median, run_at, spread, thread_count, train_decoder, write_study

__all__ = ["SEEDS", "LEARNING_RATES", "VARIANTS", "STEPS", "TAIL", "qk_config", "lag_batches",
           "max_attention_logit", "qk_run", "qk_study", "load_qk_study", "qk_claims", "qk_live", "qk_table"]

SEEDS = tuple(range(10))
LEARNING_RATES = {"high": 0.1, "middle": 0.03, "low": 3e-3}
VARIANTS = {"plain": None, "QK-norm": "head"}  # name: qk_norm
STEPS, TAIL, BATCH, LENGTH, VOCAB, LAG = 200, 20, 32, 32, 16, 3
PROBE_EVERY = 10  # steps between measures of the largest logit during training
NAME = "after_llama_qk_norm"


def qk_config(qk_norm=None, d_model=32, n_heads=4, n_layers=2):
    """Today's block (Llama's, ``DecoderConfig.llama``) at toy size for the lag-copy task, with ``qk_norm``."""
    return DecoderConfig.llama(VOCAB, d_model=d_model, n_heads=n_heads, n_layers=n_layers, n_kv_heads=n_heads,
                               max_len=LENGTH, ff_units=64, qk_norm=qk_norm)


def lag_batches(seed, steps=STEPS, batch_size=BATCH):
    """``steps`` lag-copy batches ``(x, y)`` ``(B, LENGTH)``, drawn by a generator seeded with ``1000 + seed``."""
    generator = torch.Generator().manual_seed(1000 + seed)
    return [lag_copy_batch(batch_size, LENGTH, LAG, VOCAB, generator) for _ in range(steps)]


def max_attention_logit(model, ids):
    """The largest attention logit ``q·k/√d_k`` any head of ``model`` gives a key it may read, over
    ``ids`` ``(N, L)``: the queries and keys rebuilt from each attention's input as its forward pass
    makes them (QK-norm and the rotation included), masked as it masks them."""
    found = []

    def hook(module, args, kwargs):
        x, mask, rotation = args[0], kwargs.get("mask"), kwargs.get("rotation")
        q = module.rotate(module.normed_chunks(module.linear_query(x), module.q_norm), rotation)  # (N, h, L, d_k)
        k, _ = module.project_keys(x, rotation)  # (N, h_kv, L, d_k)
        k = k.repeat_interleave(module.groups, dim=1)  # (N, h, L, d_k)
        logits = q @ k.transpose(-2, -1) / math.sqrt(module.d_k)  # (N, h, L, L)
        if mask is not None:
            logits = logits.masked_fill(~mask.bool().unsqueeze(1), -math.inf)  # (N, h, L, L): keys it may read
        found.append(logits.max().item())

    attentions = [m for m in model.modules() if isinstance(m, NarrowMultiHeadAttention)]
    handles = [m.register_forward_pre_hook(hook, with_kwargs=True) for m in attentions]
    try:
        with torch.no_grad():
            model(ids)
    finally:
        for handle in handles:
            handle.remove()
    return max(found)


class _LogitProbe(Callback):
    """``max_attention_logit`` on ``ids`` every ``every`` optimizer steps, in ``logits``."""

    def __init__(self, ids, every=PROBE_EVERY):
        self.ids, self.every, self.logits = ids, every, []

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        if trainer.total_steps % self.every == 0:
            self.logits.append(max_attention_logit(trainer.model, self.ids))


def _spike(losses):
    """The largest rise of the loss over the lowest loss seen before it (0 if it never rose)."""
    best, spike = math.inf, 0.0
    for loss in losses:
        spike = max(spike, loss - best) if best < math.inf else spike
        best = min(best, loss)
    return spike


def qk_run(qk_norm, lr, seed, steps=STEPS):
    """One run: ``{"final_loss", "max_logit", "spike", "diverged", "accuracy", "losses", "logits"}``:
    the mean loss of the last ``TAIL`` steps (``nan`` for a diverged run), the largest logit on 256
    test streams after training, the largest spike, the test accuracy, the per-step losses and the
    largest logit on 32 of the test streams every ``PROBE_EVERY`` steps."""
    batches = lag_batches(seed, steps)
    test_x, test_y = lag_copy_batch(256, LENGTH, LAG, VOCAB, torch.Generator().manual_seed(99))
    probe = _LogitProbe(test_x[:32])
    model, losses, diverged = train_decoder(qk_config(qk_norm), batches, seed, lr, callbacks=[probe])
    with torch.no_grad():
        logits = model(test_x)  # (256, L, V)
    finite = bool(torch.isfinite(logits).all())
    return {"final_loss": math.nan if diverged else sum(losses[-TAIL:]) / len(losses[-TAIL:]),
            "max_logit": max_attention_logit(model, test_x) if finite else math.inf,
            "spike": _spike(losses), "diverged": diverged,
            "accuracy": lag_copy_accuracy(logits, test_y) if finite and not diverged else math.nan,
            "losses": [round(loss, 4) for loss in losses], "logits": [round(x, 2) for x in probe.logits]}


def qk_study(seeds=SEEDS, default_threads=False, steps=STEPS):
    """Every variant at every learning rate for ``seeds``: a JSON-ready dict ``{"seeds", "steps",
    "learning_rates", "torch", "runs": {lr_name: {variant: [run, ...]}}}``."""
    runs = run_at(thread_count(default_threads), lambda: {
        lr_name: {name: [qk_run(qk_norm, lr, seed, steps) for seed in seeds] for name, qk_norm in VARIANTS.items()}
        for lr_name, lr in LEARNING_RATES.items()})
    return {"seeds": list(seeds), "steps": steps, "learning_rates": LEARNING_RATES, "torch": torch.__version__,
            "threads": "default" if default_threads else 1, "runs": runs}


def load_qk_study(default_threads=False):
    """The stored study (``python -m stepbystep.experiments.after_llama.qk_norm``), as ``qk_study`` returns it."""
    return load_study(NAME, default_threads)


def _column(study, lr_name, variant, key):
    return [run[key] for run in study["runs"][lr_name][variant]]


def qk_table(study):
    """One line per learning rate and variant: the largest logit, the final loss, the spike and the test
    accuracy (a diverged run counts 0), median (min-max), and how many seeds diverged."""
    lines = [f"{'lr':>10} {'variant':>8} {'largest logit':>22} {'final loss':>17} {'largest spike':>17} "
             f"{'accuracy':>17} {'diverged':>9}"]
    for lr_name, lr in study["learning_rates"].items():
        for variant in VARIANTS:
            cells = []
            for key, digits in (("max_logit", 1), ("final_loss", 2), ("spike", 2), ("accuracy", 2)):
                values = [0.0 if key == "accuracy" and math.isnan(v) else v
                          for v in _column(study, lr_name, variant, key)]
                m, lo, hi = spread(values)
                cells.append(f"{m:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})")
            diverged = sum(_column(study, lr_name, variant, "diverged"))
            lines.append(f"{f'{lr_name} {lr:g}':>10} {variant:>8} {cells[0]:>22} {cells[1]:>17} {cells[2]:>17} "
                         f"{cells[3]:>17} {diverged:>4} of {len(study['seeds'])}")
    return "\n".join(lines)


def qk_claims(study):
    """What the chapter says: at the high rate the plain block's logits run away and some seeds fail
    (how many changes with the seeds), its worst far below every QK-norm seed, while QK-norm keeps its
    logits small and learns; at the middle rate the plain loss spikes in some seeds; at the low rate
    both learn (the control)."""
    def col(lr_name, variant, key):
        return torch.tensor(_column(study, lr_name, variant, key), dtype=torch.float64)

    plain, normed = col("high", "plain", "max_logit"), col("high", "QK-norm", "max_logit")
    plain_acc = col("high", "plain", "accuracy").nan_to_num(0.0)
    normed_acc = col("high", "QK-norm", "accuracy").nan_to_num(0.0)
    low_acc = torch.cat([col("low", v, "accuracy").nan_to_num(0.0) for v in VARIANTS])
    low_plain = col("low", "plain", "max_logit")
    spikes_plain, spikes_normed = col("middle", "plain", "spike"), col("middle", "QK-norm", "spike")
    n = len(study["seeds"])
    return [
        Claim(bool(plain.min() > normed.max()), "at the high learning rate every plain seed's largest attention logit "
              "is above every QK-norm seed's", (plain, normed)),
        Claim(median(plain) > 20 * median(normed), "at the high learning rate the plain block's median largest logit "
              "is over 20 times QK-norm's", (median(plain), median(normed))),
        Claim(int((plain_acc < 0.6).sum()) >= 1, f"at the high learning rate some plain seeds fail the task (test "
              f"accuracy below 0.6, or diverged): {int((plain_acc < 0.6).sum())} of {n}", plain_acc),
        Claim(bool(normed_acc.min() > 0.9), "at the high learning rate every QK-norm seed learns it (accuracy above 0.9)",
              normed_acc),
        Claim(bool(plain_acc.min() + 0.3 < normed_acc.min()), "the plain block's worst seed is far below every "
              "QK-norm seed (by more than 0.3 of accuracy)", (plain_acc.min(), normed_acc.min())),
        Claim(int((spikes_plain > 0.5).sum()) >= 1 and bool(spikes_normed.max() < 0.5),
              "at the middle learning rate the plain loss spikes by more than 0.5 in some seeds, QK-norm's in none",
              (spikes_plain, spikes_normed)),
        Claim(bool(low_acc.min() > 0.95), "at the low learning rate both blocks learn the task in every seed "
              "(accuracy above 0.95): the failure is the learning rate's, not the block's", low_acc),
        Claim(median(low_plain) * 10 < median(plain), "the plain block's largest logit at the low rate is under a "
              "tenth of its value at the high rate", (median(low_plain), median(plain))),
    ]


def qk_live(seed=0, lr=LEARNING_RATES["high"], steps=120):
    """The chapter's live run: one seed of the plain block and of QK-norm at ``lr`` for ``steps``
    steps (a few CPU-seconds at one thread): ``{variant: run}`` as ``qk_run`` returns them."""
    return run_at(1, lambda: {name: qk_run(qk_norm, lr, seed, steps) for name, qk_norm in VARIANTS.items()})


if __name__ == "__main__":
    default = sys.argv[1:] == ["default_threads"]  # at PyTorch's default thread count
    print(f"wrote {write_study(qk_study(default_threads=default), NAME, default)}")
