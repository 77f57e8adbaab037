"""Chapter 12's study: from the 2017 block to Llama's, one change at a time, on chapter 09's dates.

Every variant is a ``DecoderConfig`` trained with the same recipe (``train_block``) for a few
seeds; ``block_study`` returns, per variant, the validation loss and the token accuracy of each
seed, ``(seeds, 2)``. ``paired_table`` compares two variants seed for seed. ``block_claims``,
``position_claims``, ``paired_claims``, ``kv_head_claims`` and ``kv_head_counts`` are the claims the
text makes; the counts over the forty stored seeds are settled where ``chance_of_split`` is below one
in a hundred both on the thirty seeds a claim was not read from and over all forty. Every
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

__all__ = ["BLOCK_STEPS", "BLOCK_GROUPS", "PAIRS", "KV_REFERENCE", "block_configs", "block_claims", "block_study",
           "chance_of_split", "date_streams", "kv_head_claims", "kv_head_counts", "with_kv_reference", "paired",
           "paired_claims", "paired_table", "position_claims", "summary", "train_block"]

BLOCK_STEPS = ("2017 block", "+ RMSNorm", "+ SwiGLU", "+ no biases", "+ RoPE")
BLOCK_GROUPS = {  # the study's variants by role, in block_configs' order
    "one change at a time, to Llama's block": BLOCK_STEPS,
    "controls": ("2017 block + RoPE", "2017 block, no positions", "2017 block, learned positions", "+ RMSNorm, GELU"),
    "Llama's block, shared key-value heads": ("2 KV heads", "1 KV head", "1 KV head, wider FFN"),
}
KV_REFERENCE = "4 KV heads (= + RoPE)"  # Llama's block as it is, shown again beside its shared-head variants
PAIRS = {  # a change, seed for seed: (the variant with it, the variant without it); each pair differs in that alone
    "RMSNorm for LayerNorm": ("+ RMSNorm", "2017 block"),
    "GELU for ReLU": ("+ RMSNorm, GELU", "+ RMSNorm"),
    "SwiGLU for ReLU": ("+ SwiGLU", "+ RMSNorm"),
    "SwiGLU for GELU": ("+ SwiGLU", "+ RMSNorm, GELU"),
    "no biases": ("+ no biases", "+ SwiGLU"),
    "sinusoidal table for none": ("2017 block", "2017 block, no positions"),
    "learned table for none": ("2017 block, learned positions", "2017 block, no positions"),
}


SMALL_CHANGES = ("RMSNorm for LayerNorm", "GELU for ReLU", "SwiGLU for ReLU", "no biases")  # block_claims' small moves


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


def with_kv_reference(results, groups=BLOCK_GROUPS):
    """``results`` and ``groups`` with ``"+ RoPE"`` (4 KV heads) shown again as ``KV_REFERENCE``, first in
    the shared-key-value-heads group: what 2 and 1 KV heads compare with, beside them in a figure."""
    kv_label, kv_names = list(groups)[-1], groups[list(groups)[-1]]
    shown = {}
    for name, runs in results.items():
        if name == kv_names[0]:
            shown[KV_REFERENCE] = results["+ RoPE"]
        shown[name] = runs
    return shown, {**groups, kv_label: (KV_REFERENCE, *kv_names)}


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
    moves = torch.stack([paired(results, change).abs() for change in SMALL_CHANGES])  # (changes, seeds)
    share = moves.max(dim=0).values / torch.minimum(rope_gain, control_gain)  # (seeds,): the largest, over RoPE's
    return [
        Claim(rope_gain.min() > 0.3, "RoPE lowers the validation loss by more than 0.3 in every seed", rope_gain),
        Claim(control_gain.min() > 0.3, "RoPE alone on the 2017 block also lowers it by more than 0.3 in every seed",
              control_gain),
        Claim(max(small.values()) < 0.15, "RMSNorm, SwiGLU, GELU and dropping the biases each move the median loss "
                                          "by less than 0.15", small),
        Claim(max(small.values()) < 0.5 * min(_median(rope_gain), _median(control_gain)),
              "each of those moves is less than half of RoPE's median gain", small),
        Claim(bool((share < 0.5).all()), "seed for seed, each of those changes moves the loss by less than half "
              "of what RoPE gains in the same seed (on Llama's path and alone)", share),
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


def _counts(stored, fresh, lower):
    """``lower(study)`` (a count) on ``stored``, on ``fresh`` and on both: ``(stored, fresh, all)``."""
    both = {name: torch.cat([stored[name], fresh[name]]) for name in stored}  # {name: (seeds, 2)}
    return lower(stored), lower(fresh), lower(both)


def _settled(k, n, k_all, n_all):
    """The chapter's rule: a split that chance gives less than one time in a hundred, both on the seeds
    the claim was not read from (``k`` of ``n``) and over all of them (``k_all`` of ``n_all``)."""
    return chance_of_split(k, n) < 0.01 and chance_of_split(k_all, n_all) < 0.01


def paired_claims(stored, fresh):
    """What the text says of the small changes and the position tables, seed for seed: over the
    stored ten seeds (``stored``), over thirty more (``fresh``, seeds 10 to 39) and over the forty.
    SwiGLU's lead over ReLU and the sinusoidal table's cost, which the stored ten suggested and the
    thirty confirm; GELU's and no biases' leans, which the thirty show and the stored ten do not;
    RMSNorm's and SwiGLU-against-GELU's splits, which settle nothing."""
    count = {change: _counts(stored, fresh, lambda study, c=change: int((paired(study, c) < 0).sum())) for change in PAIRS}
    n, n_all = len(_loss(fresh, "2017 block")), len(_loss(stored, "2017 block")) + len(_loss(fresh, "2017 block"))
    forty = {name: torch.cat([stored[name], fresh[name]]) for name in stored}
    median = {change: _median(paired(forty, change)) for change in PAIRS}
    above = {change: tuple(len_ - k for len_, k in zip((n_all - n, n, n_all), count[change])) for change in PAIRS}
    settled = {change: _settled(max(c[1], n - c[1]), n, max(c[2], n_all - c[2]), n_all) for change, c in count.items()}
    sinusoidal = paired(forty, "sinusoidal table for none")  # (40,)
    return [
        Claim(count["SwiGLU for ReLU"] == (9, 24, 33), "SwiGLU in ReLU's place lowers the loss in 9 of the stored ten "
              "seeds and in 24 of the thirty more: 33 of 40", count["SwiGLU for ReLU"]),
        Claim(settled["SwiGLU for ReLU"] and -0.05 < median["SwiGLU for ReLU"] < -0.03,
              "settled: splits that chance gives less than one time in a hundred, on the thirty more and over the "
              "forty; by a median of 0.03 to 0.05", (count["SwiGLU for ReLU"], median["SwiGLU for ReLU"])),
        Claim(above["sinusoidal table for none"] == (9, 26, 35), "the sinusoidal table ends above no positions in 9 "
              "of the stored ten and in 26 of the thirty more: 35 of 40", above["sinusoidal table for none"]),
        Claim(settled["sinusoidal table for none"] and 0.03 < median["sinusoidal table for none"] < 0.05
              and sinusoidal.abs().max() < 0.12, "settled too: by a median of 0.03 to 0.05, and by less than 0.12 "
              "either way in every seed", sinusoidal),
        Claim(count["learned table for none"][2] == n_all, "a learned table ends below no positions in all forty",
              paired(forty, "learned table for none")),
        Claim((count["GELU for ReLU"], count["no biases"]) == ((4, 23, 27), (2, 24, 26)),
              "GELU in ReLU's place lowers the loss in 4 of the stored ten and in 23 of the thirty more (27 of 40); "
              "dropping the biases in 2 and 24 (26 of 40)", (count["GELU for ReLU"], count["no biases"])),
        Claim(all(chance_of_split(count[c][1], n) < 0.01 and not settled[c] and -0.02 < median[c] < 0
                  for c in ("GELU for ReLU", "no biases")),
              "for both, the thirty more split as chance would less than one time in a hundred, but the forty do "
              "not (the stored ten went the other way): leans towards a gain of less than 0.02 in the median, not "
              "settled", {c: (chance_of_split(count[c][1], n), chance_of_split(count[c][2], n_all), median[c])
                          for c in ("GELU for ReLU", "no biases")}),
        Claim(count["RMSNorm for LayerNorm"] == (7, 18, 25) and count["SwiGLU for GELU"] == (8, 21, 29)
              and not settled["RMSNorm for LayerNorm"] and not settled["SwiGLU for GELU"]
              and abs(median["RMSNorm for LayerNorm"]) < 0.02,
              "RMSNorm lowers it in 7 of the stored ten and 18 of the thirty more (25 of 40, by a median of less than "
              "0.02); SwiGLU against GELU in 8 and 21 (29 of 40): neither settled",
              (count["RMSNorm for LayerNorm"], count["SwiGLU for GELU"])),
    ]


def kv_head_counts(stored, fresh):
    """What the text counts of the key-value heads over the stored ten seeds (``stored``) and thirty
    more (``fresh``): one KV head above four, settled; two above four, a lean; one KV head's wider
    feed-forward network, no consistent effect."""
    def above(worse, better):
        return lambda study: int((_loss(study, worse) > _loss(study, better)).sum())
    n, n_all = len(_loss(fresh, "+ RoPE")), len(_loss(stored, "+ RoPE")) + len(_loss(fresh, "+ RoPE"))
    one, two = _counts(stored, fresh, above("1 KV head", "+ RoPE")), _counts(stored, fresh, above("2 KV heads", "+ RoPE"))
    wider = _counts(stored, fresh, above("1 KV head", "1 KV head, wider FFN"))  # the wider network lower
    return [
        Claim(one == (10, 28, 38) and _settled(one[1], n, one[2], n_all), "one KV head ends above four in 38 of the "
              "forty seeds, all of the stored ten and 28 of the thirty more: settled", one),
        Claim(two == (8, 21, 29) and not _settled(two[1], n, two[2], n_all), "two KV heads end above four in 29 of the "
              "forty, 8 of the stored ten and 21 of the thirty more, a split that chance gives about one time in 23: "
              "a lean, not settled", (two, chance_of_split(two[1], n))),
        Claim(wider == (7, 10, 17) and chance_of_split(wider[2], n_all) > 0.2, "one KV head with a wider feed-forward "
              "network ends lower than without in 17 of the forty (7 of the stored ten, 10 of the thirty more): no "
              "consistent effect", (wider, chance_of_split(wider[2], n_all))),
    ]


def kv_head_claims(results):
    """Fewer key-value heads on the Llama block (``"+ RoPE"``: 4 heads), over any set of seeds: what
    holds on the stored ten and on the thirty more alike (``kv_head_counts`` gives the counts)."""
    four, one = _loss(results, "+ RoPE"), _loss(results, "1 KV head")  # (seeds,) each
    base = _median(_loss(results, "2017 block"))
    medians = [_median(_loss(results, name)) for name in ("+ RoPE", "2 KV heads", "1 KV head")]
    return [
        Claim(bool((one > four).float().mean() > 0.75), "one KV head ends with a higher loss than four in more than "
              "three seeds in four, seed for seed", (four, one)),
        Claim(base - max(medians) > 0.3, "4, 2 and 1 KV heads each keep most of RoPE's gain: medians more than 0.3 "
                                         "below the 2017 block's", (base, medians)),
    ]
