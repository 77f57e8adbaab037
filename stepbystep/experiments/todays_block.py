"""Chapter 12's study: from the 2017 block to Llama's, one change at a time, on chapter 09's dates.

Every variant is a ``DecoderConfig`` trained with the same recipe (``train_block``) for a few
seeds; ``block_study`` returns, per variant, the validation loss and the token accuracy of each
seed, ``(seeds, 2)``. ``paired_table`` compares two variants seed for seed. ``block_claims``,
``position_claims``, ``paired_claims`` and ``kv_head_claims`` are the claims the text makes. Every
median is the middle value, or the mean of the two middle ones for an even count
(``statistics.median``; ``torch.median`` would give the lower of the two).
"""
import math
import statistics

import torch

from ..checks import check_positive_int, check_positive_number
from ..data.date_completions import IGNORE_INDEX, CompletionDataset, completion_collate, completion_vocab
from ..data.dates import date_datasets
from ..devices import torch_threads
from ..expect import Claim
from ..models.gpt.config import DecoderConfig
from ..models.gpt.model import completion_loss
from ..seeding import get_rng_state
from ..training import StepByStep
from ..training.schedules import warmup_linear

__all__ = ["BLOCK_STEPS", "BLOCK_GROUPS", "PAIRS", "block_configs", "block_claims", "block_study", "chance_of_split",
           "date_streams", "kv_head_claims", "paired", "paired_claims", "paired_table", "position_claims", "summary",
           "train_block"]

BLOCK_STEPS = ("2017 block", "+ RMSNorm", "+ SwiGLU", "+ no biases", "+ RoPE")
BLOCK_GROUPS = {  # the study's variants by role, in block_configs' order
    "one change at a time, to Llama's block": BLOCK_STEPS,
    "controls": ("2017 block + RoPE", "2017 block, no positions", "2017 block, learned positions", "+ RMSNorm, GELU"),
    "Llama's block, shared key-value heads": ("2 KV heads", "1 KV head", "1 KV head, wider FFN"),
}
PAIRS = {  # a change, seed for seed: (the variant with it, the variant without it); each pair differs in that alone
    "RMSNorm for LayerNorm": ("+ RMSNorm", "2017 block"),
    "GELU for ReLU": ("+ RMSNorm, GELU", "+ RMSNorm"),
    "SwiGLU for ReLU": ("+ SwiGLU", "+ RMSNorm"),
    "SwiGLU for GELU": ("+ SwiGLU", "+ RMSNorm, GELU"),
    "no biases": ("+ no biases", "+ SwiGLU"),
    "sinusoidal table for none": ("2017 block", "2017 block, no positions"),
    "learned table for none": ("2017 block, learned positions", "2017 block, no positions"),
}


def date_streams(n_train=3_200, n_val=500, seed=0):
    """Chapter 09's date streams as padded tensors: ``vocab, (train_x, train_y), (val_x, val_y)``,
    each ``(n, L)``, the prompt's targets ``IGNORE_INDEX`` (the completion-only loss)."""
    train_pairs, val_pairs = date_datasets(n_train=n_train, n_val=n_val, seed=seed)
    vocab = completion_vocab(train_pairs)
    tensors = [completion_collate(list(CompletionDataset(pairs, vocab))) for pairs in (train_pairs, val_pairs)]
    return vocab, tensors[0], tensors[1]


def block_configs(vocab_size, d_model=32, n_heads=4, n_layers=2, max_len=48):
    """The study's variants, ``{name: DecoderConfig}``: chapter 09's 2017 block (LayerNorm, a
    ``4 · d_model`` ReLU network, biases, sinusoidal positions), then each change of
    ``BLOCK_STEPS`` added to the one before (SwiGLU ``8 · d_model // 3`` wide: the same number of
    weights); then controls: ``"2017 block + RoPE"`` (RoPE alone), the 2017 block with no positions
    and with learned ones (what RoPE is measured against), and ``"+ RMSNorm, GELU"`` (GELU where the
    next step puts SwiGLU: the same weights as ReLU); and the Llama block (the
    last step) with 2 and 1 key-value heads, and with 1 and a SwiGLU network widened to hold the
    weights the shared heads save (``"1 KV head, wider FFN"``: as many weights as 4 KV heads)."""
    check_positive_int("d_model", d_model)
    base = DecoderConfig(vocab_size, d_model=d_model, n_heads=n_heads, ff_units=4 * d_model, n_layers=n_layers,
                         dropout=0.0, max_len=max_len, embedding_std=0.3, tie_weights=False)
    changes = ({}, dict(norm="rmsnorm"), dict(mlp="swiglu", ff_units=8 * d_model // 3),
               dict(bias=False, head_bias=False), dict(position_scheme="rope"))
    configs, config = {}, base
    for name, change in zip(BLOCK_STEPS, changes):
        config = configs[name] = config.replace(**change)
    configs["2017 block + RoPE"] = base.replace(position_scheme="rope")
    configs["2017 block, no positions"] = base.replace(position_scheme="none")
    configs["2017 block, learned positions"] = base.replace(position_scheme="learned")
    configs["+ RMSNorm, GELU"] = configs["+ RMSNorm"].replace(mlp="gelu")
    for n_kv_heads in (2, 1):
        configs[f"{n_kv_heads} KV head{'s' if n_kv_heads > 1 else ''}"] = config.replace(n_kv_heads=n_kv_heads)
    saved = 2 * (n_heads - 1) * (d_model // n_heads) * d_model  # per layer: the key and value weights one KV head drops
    extra = saved // (3 * d_model)  # SwiGLU units that hold them (3 · d_model weights each)
    configs["1 KV head, wider FFN"] = configs["1 KV head"].replace(ff_units=config.ff_units + extra)
    return configs


def _batches(train, steps, batch_size, generator):
    """``steps`` batches ``(x, y)``, ``(B, length)`` each: ``batch_size`` streams at a time in one order
    drawn by ``generator``, starting over at the end, each batch cut after its longest stream (the
    padding after it changes nothing: causal attention never reads ahead)."""
    train_x, train_y = train  # (n, L) each
    order = torch.randperm(len(train_x), generator=generator)  # (n,)
    batches = []
    for step in range(steps):
        start = step * batch_size % len(train_x)
        rows = order[start:start + batch_size]  # (B,)
        x, y = train_x[rows], train_y[rows]  # (B, L) each
        length = int((y != IGNORE_INDEX).nonzero()[:, 1].max()) + 1  # the last scored position: then padding
        batches.append((x[:, :length], y[:, :length]))
    return batches


def train_block(config, seed, train, val, steps=100, batch_size=16, lr=1e-2, warmup=10):
    """The recipe: ``config.build()`` under ``torch.manual_seed(seed)``; Adam, warm-up over ``warmup``
    steps to ``lr`` then a linear decay to zero (``warmup_linear``), ``steps`` mini-batches of
    ``batch_size`` streams in an order drawn by a generator seeded with ``100 + seed`` (``_batches``),
    through ``StepByStep.train_steps`` on the CPU. Returns the validation loss and the token accuracy
    (argmax right, completion tokens only) on ``val``."""
    check_positive_int("steps", steps)
    check_positive_number("lr", lr)
    torch.manual_seed(seed)
    model = config.build()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, fused=True)  # one kernel for every weight: faster
    trainer = StepByStep(model, completion_loss, optimizer, device="cpu")
    trainer.set_lr_scheduler(warmup_linear(optimizer, warmup, steps), interval="batch")
    trainer.set_loaders(_batches(train, steps, batch_size, torch.Generator().manual_seed(100 + seed)))
    trainer.rng_state = get_rng_state()  # no seeding: the streams go on from the model's seed
    trainer.train_steps(steps, progress=False)
    val_x, val_y = val
    with torch.no_grad():
        logits = model(val_x)  # (n_val, L, V)
    counted = val_y != IGNORE_INDEX  # (n_val, L)
    accuracy = (logits.argmax(dim=-1)[counted] == val_y[counted]).float().mean()
    return completion_loss(logits, val_y).item(), accuracy.item()


def block_study(configs, seeds, train, val, **recipe):
    """``{name: tensor (seeds, 2)}``: each variant's validation loss and token accuracy per seed.
    On one thread (restored after): ops this small only wait for each other across threads."""
    with torch_threads(1):
        return {name: torch.tensor([train_block(config, seed, train, val, **recipe) for seed in seeds])
                for name, config in configs.items()}


def summary(results):
    """``block_study``'s results as a table: each variant's validation loss and token accuracy, the
    median over the seeds and the range, one line per variant."""
    lines = [f"{'variant':>30} {'validation loss: median (min-max)':>35} {'token accuracy: median (min-max)':>34}"]
    for name, runs in results.items():  # runs: (seeds, 2)
        cells = [f"{_median(column):.3f} ({column.min():.3f}-{column.max():.3f})" for column in runs.T]
        lines.append(f"{name:>30} {cells[0]:>35} {cells[1]:>34}")
    return "\n".join(lines)


def _loss(results, name):
    return results[name][:, 0]  # (seeds,)


def _median(values):
    """The median of a 1-D tensor as a float: the mean of the two middle values for an even count."""
    return statistics.median(values.tolist())


def paired(results, change):
    """``PAIRS[change]`` seed for seed: the loss with the change minus the loss without it, ``(seeds,)``
    (below 0: the change lowered it)."""
    with_it, without = PAIRS[change]
    return _loss(results, with_it) - _loss(results, without)  # (seeds,)


def chance_of_split(k, n):
    """How often ``n`` fair coin tosses split at least as unevenly as ``k`` to ``n - k``, either way: the
    chance that a change which does nothing ends lower in at least ``max(k, n - k)`` seeds or in at
    most ``min(k, n - k)`` (a two-sided sign test)."""
    tail = sum(math.comb(n, i) for i in range(max(k, n - k), n + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired_table(results, changes=tuple(PAIRS)):
    """One line per change of ``PAIRS``: in how many seeds it lowered the loss, the median paired
    difference and its range, and ``chance_of_split`` for that count."""
    lines = [f"{'change':>26} {'lower in':>9} {'loss difference: median (min to max)':>38} {'chance of the split':>20}"]
    for change in changes:
        diff = paired(results, change)  # (seeds,)
        lower, n = int((diff < 0).sum()), len(diff)
        lines.append(f"{change:>26} {f'{lower} of {n}':>9} "
                     f"{f'{_median(diff):+.3f} ({diff.min():+.3f} to {diff.max():+.3f})':>38} "
                     f"{chance_of_split(lower, n):>20.2f}")
    return "\n".join(lines)


def block_claims(results):
    """What the text says about the steps: RoPE's large gain (with its control), the others' small moves."""
    median = {name: _median(_loss(results, name)) for name in results}
    small = {step: abs(median[step] - median[before]) for before, step in zip(BLOCK_STEPS, BLOCK_STEPS[1:-1])}
    small["+ RMSNorm, GELU"] = abs(median["+ RMSNorm, GELU"] - median["+ RMSNorm"])
    rope_gain = _loss(results, "+ no biases") - _loss(results, "+ RoPE")  # (seeds,): same seeds, paired
    control_gain = _loss(results, "2017 block") - _loss(results, "2017 block + RoPE")  # (seeds,)
    base = _loss(results, "2017 block")
    return [
        Claim(rope_gain.min() > 0.3, "RoPE lowers the validation loss by more than 0.3 in every seed", rope_gain),
        Claim(control_gain.min() > 0.3, "RoPE alone on the 2017 block also lowers it by more than 0.3 in every seed",
              control_gain),
        Claim(max(small.values()) < 0.15, "RMSNorm, SwiGLU, GELU and dropping the biases each move the median loss "
                                          "by less than 0.15", small),
        Claim(max(small.values()) < 0.5 * min(_median(rope_gain), _median(control_gain)),
              "each of those moves is less than half of RoPE's median gain", small),
        Claim(max(small.values()) < 2 * (base.max() - base.min()),
              "each of those moves is less than twice the spread of the 2017 block's own seeds",
              (small, base.max() - base.min())),
    ]


def position_claims(results):
    """What RoPE is measured against: the 2017 block with its sinusoidal table, with no positions and
    with learned ones."""
    sinusoidal, none = _loss(results, "2017 block"), _loss(results, "2017 block, no positions")  # (seeds,) each
    learned, rope = _loss(results, "2017 block, learned positions"), _loss(results, "2017 block + RoPE")  # (seeds,)
    over_learned = learned - rope  # (seeds,): same seeds, paired
    learned_gain = _median(none) - _median(learned)
    return [
        Claim(abs(_median(sinusoidal) - _median(none)) < 0.1,
              "the sinusoidal table's median loss is within 0.1 of no positions' at all",
              (_median(sinusoidal), _median(none))),
        Claim(_median(learned) < min(_median(none), _median(sinusoidal)),
              "learned positions' median is below both", (_median(learned), _median(none), _median(sinusoidal))),
        Claim(over_learned.min() > 0.25, "RoPE's loss is more than 0.25 below learned positions' in every seed",
              over_learned),
        Claim(learned_gain < 0.5 * _median(over_learned),
              "what learned positions gain over none is less than half of what RoPE gains over them",
              (learned_gain, _median(over_learned))),
    ]


def paired_claims(stored, fresh):
    """What the text says of the small changes and the position tables, seed for seed: over the
    stored ten seeds (``stored``), over ten more (``fresh``: the variants of ``PAIRS``) and over the
    twenty. SwiGLU's lead over ReLU in the stored ten, which the ten more lean towards without
    confirming; the other changes' splits, one of them reversed by the fresh seeds; the sinusoidal
    and learned tables against none."""
    twenty = {name: torch.cat([stored[name], fresh[name]]) for name in fresh}  # {name: (20, 2)}
    lower = {label: {change: int((paired(study, change) < 0).sum()) for change in PAIRS}
             for label, study in (("stored", stored), ("fresh", fresh), ("twenty", twenty))}
    n, n_fresh = len(_loss(twenty, "2017 block")), len(_loss(fresh, "2017 block"))
    median = {change: _median(paired(twenty, change)) for change in PAIRS}
    mixed = ("RMSNorm for LayerNorm", "GELU for ReLU", "SwiGLU for GELU", "no biases")
    split = {change: max(lower["twenty"][change], n - lower["twenty"][change]) for change in mixed}
    sinusoidal = paired(twenty, "sinusoidal table for none")  # (20,)
    counts = {change: (lower["stored"][change], lower["fresh"][change]) for change in PAIRS}
    swiglu_fresh = lower["fresh"]["SwiGLU for ReLU"]
    return [
        Claim(n == 20 and counts["SwiGLU for ReLU"] == (9, 7),
              "SwiGLU in ReLU's place lowers the loss in 9 of the ten stored seeds and in 7 of ten more",
              counts["SwiGLU for ReLU"]),
        Claim(n_fresh / 2 < swiglu_fresh and chance_of_split(swiglu_fresh, n_fresh) > 0.05,
              "the ten more lean the same way, but by a split that chance gives more often than one time in "
              "twenty: they do not confirm it", (swiglu_fresh, chance_of_split(swiglu_fresh, n_fresh))),
        Claim(-0.03 < _median(paired(fresh, "SwiGLU for ReLU")) < -0.02, "over the ten more, by a median of 0.02 to "
              "0.03", _median(paired(fresh, "SwiGLU for ReLU"))),
        Claim(lower["twenty"]["GELU for ReLU"] <= n / 2,
              "GELU in ReLU's place, at ReLU's width, lowers it in half of the twenty seeds or fewer",
              lower["twenty"]["GELU for ReLU"]),
        Claim(max(split.values()) <= 13 and max(abs(median[change]) for change in mixed if change != "SwiGLU for GELU")
              < 0.02, "RMSNorm, GELU, dropping the biases, and SwiGLU against GELU: over the twenty seeds none "
                      "goes one way in more than 13; the first three move the loss by a median of less than 0.02",
              (split, median)),
        Claim(counts["no biases"] == (2, 9), "dropping the biases lowers the loss in 2 of the stored ten, and in 9 "
                                             "of ten more", counts["no biases"]),
        Claim(counts["sinusoidal table for none"] == (1, 2), "the sinusoidal table ends above no positions in 9 of "
                                                             "the stored ten and 8 of ten more: 17 of 20",
              counts["sinusoidal table for none"]),
        Claim(chance_of_split(counts["sinusoidal table for none"][1], n_fresh) > 0.05,
              "the ten more's split is one that chance gives more often than one time in twenty: they do not "
              "confirm a cost", chance_of_split(counts["sinusoidal table for none"][1], n_fresh)),
        Claim(0.03 < _median(sinusoidal) < 0.05 and sinusoidal.abs().max() < 0.11,
              "by a median of 0.03 to 0.05, and by less than 0.11 either way in every seed", sinusoidal),
        Claim(lower["twenty"]["learned table for none"] == n, "a learned table ends below no positions in all twenty",
              paired(twenty, "learned table for none")),
    ]


def kv_head_claims(results):
    """Fewer key-value heads on the Llama block (``"+ RoPE"``: 4 heads), over the stored ten seeds."""
    four, two, one = (_loss(results, name) for name in ("+ RoPE", "2 KV heads", "1 KV head"))  # (seeds,) each
    wider = _loss(results, "1 KV head, wider FFN")  # (seeds,)
    paired = wider - one  # (seeds,) what the wider network changes, seed for seed
    base = _median(_loss(results, "2017 block"))
    medians = [_median(x) for x in (four, two, one)]
    return [
        Claim(bool((one > four).all()), "one KV head ends with a higher loss than four in every seed, seed for seed",
              (four, one)),
        Claim(_median(two) > _median(four), "two KV heads' median is above four's too", (_median(four), _median(two))),
        Claim(bool((two > four).float().mean() > 0.5), "and two KV heads end above four in more than half the seeds, "
              "seed for seed", (four, two)),
        Claim(bool(max((paired < 0).float().mean(), (paired > 0).float().mean()) <= 0.7),
              "widening one KV head's feed-forward network has no consistent effect: seed for seed, its loss "
              "ends lower in some seeds and higher in others, neither in more than 70% of them", paired),
        Claim(base - max(medians) > 0.3, "4, 2 and 1 KV heads each keep most of RoPE's gain: medians more than 0.3 "
                                         "below the 2017 block's", (base, medians)),
    ]
