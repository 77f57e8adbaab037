"""Chapter 13's experiment: attention-only models trained on repeated random sequences, and the
claims the chapter makes about them.

Every training batch has its own half-length, drawn from ``MIN_LENGTH .. MAX_LENGTH``: with one fixed
length, a head that attends ``length - 1`` positions back would predict the repeat from positions
alone, and even a one-layer model could do it. With the length changing, only reading the tokens
works. ``train_on_repeats`` records the loss on both halves of every batch, and every
``probe_every`` steps the heads' scores on a probe set, so the drop of the loss can be set beside
the heads that appear.
"""
import math

import torch

from ..checks import check_int_range, check_positive_int, check_positive_number
from ..data.repeated_sequences import repeated_sequences
from ..expect import Claim
from ..devices import evaluating, model_device
from ..interpret import ablate_heads, attention_weights, half_losses, head_scores, per_position_loss
from ..models import AttentionOnlyTransformer
from ..seeding import get_rng_state
from ..training import Callback, StepByStep

__all__ = ["VOCAB_SIZE", "MIN_LENGTH", "MAX_LENGTH", "build_model", "train_on_repeats", "drop_step",
           "first_half_losses", "first_half_loss", "repeat_loss", "seen_token_mass", "fixed_length_scores",
           "previous_token_heads", "enough_controls", "key_weight", "phase_numbers", "phase_change_claims",
           "phase_claims", "circuit_claims", "composition_claims", "copying_claims",
           "group_claims", "seen_bet_claims", "first_token_claims",
           "ablation_claims", "first_half_claims", "one_layer_claims", "fixed_length_claims",
           "position_claims"]

VOCAB_SIZE, MIN_LENGTH, MAX_LENGTH = 32, 4, 16  # tokens; the shortest and longest half


def build_model(n_layers=2, seed=0, n_heads=4, d_model=64):
    """The chapter's attention-only model (RoPE positions, room for two halves of ``MAX_LENGTH``)."""
    torch.manual_seed(seed)
    return AttentionOnlyTransformer(VOCAB_SIZE, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                                    max_len=2 * MAX_LENGTH, position_scheme="rope")


def train_on_repeats(n_layers=2, seed=0, steps=300, batch_size=32, lr=1e-2, probe=None, probe_every=10,
                     lengths=(MIN_LENGTH, MAX_LENGTH), callbacks=()):
    """Train ``build_model(n_layers, seed)`` with Adam for ``steps`` batches of repeated sequences.

    Batch ``step`` holds ``batch_size`` sequences from ``repeated_sequences`` with data seed
    ``1 + seed · steps + step`` (seed 0 is left to test sets) and a half-length drawn from
    ``lengths`` (shortest, longest; both included) by this seed's own generator. Returns the model
    in eval mode and a dict: ``"first"`` and ``"repeat"``
    ``(steps,)``, the batch's mean loss on each half before its update; with ``probe`` ids, also
    ``"probe_steps"`` ``(P,)`` and the heads' ``"previous"`` and ``"induction"`` scores on it
    ``(P, n_layers, H)`` every ``probe_every`` steps and after the last. ``callbacks`` join the
    trainer's, after the recorder.
    """
    for name, value in (("n_layers", n_layers), ("steps", steps), ("batch_size", batch_size),
                        ("probe_every", probe_every)):
        check_positive_int(name, value)
    check_positive_number("lr", lr)
    shortest, longest = lengths
    check_int_range("shortest length", shortest, 2, MAX_LENGTH)
    check_int_range("longest length", longest, shortest, MAX_LENGTH)
    model = build_model(n_layers, seed)
    lengths = torch.randint(shortest, longest + 1, (steps,), generator=torch.Generator().manual_seed(seed))
    batches = [(ids, ids) for ids in (repeated_sequences(batch_size, length, VOCAB_SIZE, seed=1 + seed * steps + step)
                                      for step, length in enumerate(lengths.tolist()))]  # (B, 2 · length) each
    record = _RepeatRecord(steps, probe, probe_every)
    trainer = StepByStep(model, _next_token_loss, torch.optim.Adam(model.parameters(), lr=lr),
                         device=model_device(model), callbacks=[record, *callbacks])
    trainer.set_loaders(batches)
    trainer.rng_state = get_rng_state()  # no seeding: the streams go on from the model's seed
    trainer.train_steps(steps, progress=False)
    history = {"first": torch.stack(record.first).cpu(), "repeat": torch.stack(record.repeat).cpu()}  # (steps,) each
    if probe is not None:
        history["probe_steps"] = torch.tensor([p[0] for p in record.probes])  # (P,)
        history["previous"] = torch.stack([p[1] for p in record.probes])  # (P, n_layers, H)
        history["induction"] = torch.stack([p[2] for p in record.probes])  # (P, n_layers, H)
    return model, history


def _next_token_loss(logits, ids):
    return torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:])  # logits (B, 2 · length, V)


class _RepeatRecord(Callback):
    """The loss on each half of every training batch, from the logits of its forward pass (a hook
    on the model), and the heads' scores on ``probe`` every ``probe_every`` steps and after the last."""

    def __init__(self, steps, probe, probe_every):
        self.steps, self.probe, self.probe_every = steps, probe, probe_every
        self.first, self.repeat, self.probes = [], [], []

    def _keep(self, model, inputs, logits):
        if model.training:
            self.batch = inputs[0], logits.detach()  # (B, 2 · length), (B, 2 · length, V)

    def _probe(self, trainer):
        if self.probe is not None:
            self.probes.append((trainer.total_steps, *head_scores(trainer.model, self.probe)))

    def on_train_start(self, trainer):
        self.hook = trainer.model.register_forward_hook(self._keep)
        self._probe(trainer)

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        ids, logits = self.batch
        first, repeat = half_losses(per_position_loss(logits, ids), ids.shape[1] // 2)
        self.first.append(first)
        self.repeat.append(repeat)
        if trainer.total_steps % self.probe_every == 0 and trainer.total_steps < self.steps:
            self._probe(trainer)

    def on_train_end(self, trainer):
        self.hook.remove()
        self._probe(trainer)


def first_half_losses(model, ids, length):
    """The mean loss over the first half's predictions, split by the token just read: ``(seen, fresh)``,
    where that token occurred earlier in the sequence (a repeat inside the first half) or not.

    ``ids`` ``(N, 2 · length)``, moved to the model's device; the predictions of tokens 1 .. length - 1,
    as in ``half_losses``. The two means come back on the CPU.
    """
    ids = ids.to(model_device(model))  # (N, 2 · length)
    with evaluating(model):
        logits = model(ids)[:, :length - 1]  # (N, length - 1, V): predicting tokens 1 .. length - 1
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:length], reduction="none")
    current = ids[:, :length - 1]  # (N, length - 1): the token each prediction reads last
    earlier = torch.ones(length - 1, length - 1, dtype=torch.bool, device=ids.device).tril(-1)  # (length - 1, length - 1)
    seen = ((current[:, :, None] == current[:, None, :]) & earlier).any(dim=-1)  # (N, length - 1)
    return losses[seen].mean().cpu(), losses[~seen].mean().cpu()


def repeat_loss(model, ids, heads=(), how="zero"):
    """The mean loss on the repeat of ``ids`` ``(N, 2 · length)`` with ``heads`` switched off
    (``ablate_heads``, zeroed or replaced by their mean): a scalar tensor on the CPU."""
    with ablate_heads(model, list(heads), how=how), evaluating(model), torch.no_grad():
        logits = model(ids.to(model_device(model)))  # (N, 2 · length, V)
    return half_losses(per_position_loss(logits, ids), ids.shape[1] // 2)[1].cpu()


def first_half_loss(model, ids, heads=()):
    """The mean loss on the first half of ``ids`` ``(N, 2 · length)`` with ``heads`` switched off (zeroed):
    a scalar tensor on the CPU."""
    with ablate_heads(model, list(heads)), evaluating(model), torch.no_grad():
        logits = model(ids.to(model_device(model)))  # (N, 2 · length, V)
    return half_losses(per_position_loss(logits, ids), ids.shape[1] // 2)[0].cpu()


def seen_token_mass(model, ids, length):
    """In the first half of ``ids`` ``(N, 2 · length)``: the mean probability the model gives to the tokens
    already in the sequence, and the share of the vocabulary they make up, ``(mass, share)`` on the CPU,
    over the predictions of tokens 1 .. length - 1. A model that bets on seen tokens puts more than their
    share on them."""
    ids = ids.to(model_device(model))  # (N, 2 · length)
    with evaluating(model), torch.no_grad():
        probs = model(ids)[:, :length - 1].softmax(dim=-1)  # (N, length - 1, V): predicting 1 .. length - 1
    occurred = torch.nn.functional.one_hot(ids[:, :length - 1], model.vocab_size).cummax(dim=1).values  # (N, length - 1, V)
    return (probs * occurred).sum(dim=-1).mean().cpu(), occurred.float().mean().cpu()


def fixed_length_scores(model, ids):
    """A one-layer model on repeated ``ids`` ``(N, 2 · length)``: ``{"repeat": the repeat's loss,
    "induction": its best induction score}``, scalar tensors on the CPU."""
    with evaluating(model), torch.no_grad():
        induction = head_scores(model, ids)[1][0].max().cpu()  # layer 0: the only one
    return {"repeat": repeat_loss(model, ids), "induction": induction}


def previous_token_heads(model, ids, margin=0.1):
    """Layer 0's previous-token heads, found by what switching them off does: its heads taken from the
    best previous-token score down and switched off together until the repeat's loss on ``ids``
    ``(N, 2 · length)`` rises above half of ln V, or to within ``margin`` of it (the copying broken: a
    set that close to the line breaks it on one draw of sequences and not on the next, and taking one
    more head there could leave no control). Returns ``[(0, head), ...]``, best score first; all of
    layer 0 if even that does not break it."""
    check_positive_number("margin", margin, allow_zero=True)
    previous, _ = head_scores(model, ids)  # (n_layers, H)
    heads = []
    for head in previous[0].argsort(descending=True).tolist():
        heads.append((0, head))
        if repeat_loss(model, ids, heads) > math.log(model.vocab_size) / 2 - margin:
            break
    return heads


def key_weight(model, ids, layer, head, offset):
    """The mean weight ``head`` of ``layer`` puts on the key ``offset`` positions back, over the queries of
    the second half of ``ids`` ``(N, 2 · length)`` (``offset`` at most ``length``): a scalar on the CPU."""
    length = ids.shape[1] // 2
    check_int_range("offset", offset, 1, length)
    weights = attention_weights(model, ids)[layer][:, head]  # (N, 2 · length, 2 · length)
    back = weights.diagonal(offset=-offset, dim1=-2, dim2=-1)  # (N, 2 · length - offset): queries offset ..
    return back[:, length - offset:].mean()  # queries length .. 2 · length - 1


def drop_step(repeat, threshold, window=10):
    """The first step at which the mean of the last ``window`` repeat losses is below ``threshold``;
    ``None`` if it never is. ``repeat`` ``(steps,)``."""
    check_positive_int("window", window)
    smooth = repeat.unfold(0, window, 1).mean(dim=1)  # (steps - window + 1,): mean of steps t-window+1 .. t
    below = (smooth < threshold).nonzero()
    return None if len(below) == 0 else below[0].item() + window - 1


def phase_numbers(history, drop, steps):
    """One seed's phase change in four numbers: the first half's mean loss over the last 20 steps, the
    repeat's over the first 100 and the last 20, and how far the repeat's fell from 20-10 steps before
    ``drop`` to 10-20 steps after it (``None`` without a drop far enough from both ends)."""
    repeat = history["repeat"]
    sharp = (repeat[drop - 20:drop - 10].mean().item() - repeat[drop + 10:drop + 20].mean().item()
             if drop is not None and 20 <= drop <= steps - 20 else None)
    return {"late_first": history["first"][-20:].mean().item(), "early_repeat": repeat[:100].mean().item(),
            "late_repeat": repeat[-20:].mean().item(), "sharp": sharp}


def phase_change_claims(histories, drops, steps):
    """The loss on the first half stays a little above ln V, the repeat falls far below, abruptly, in every seed.

    ``histories``: one ``train_on_repeats`` dict per seed; ``drops``: each seed's ``drop_step``.
    """
    return phase_claims([phase_numbers(h, d, steps) for h, d in zip(histories, drops)], drops, steps)


def phase_claims(numbers, drops, steps):
    """``phase_change_claims`` from each seed's ``phase_numbers``."""
    log_v = math.log(VOCAB_SIZE)
    late_first = torch.tensor([n["late_first"] for n in numbers])  # (seeds,)
    late_repeat = torch.tensor([n["late_repeat"] for n in numbers])  # (seeds,)
    sharp = [n["sharp"] for n in numbers]
    return [
        Claim(bool(((late_first > log_v) & (late_first < log_v + 0.6)).all()),
              "over the last 20 steps the first half's loss is above ln V and within 0.6 of it in every seed",
              late_first - log_v),
        Claim(all(n["early_repeat"] > 0.8 * log_v for n in numbers),
              "over the first 100 steps the repeat's loss averages above 80% of ln V in every seed",
              [n["early_repeat"] for n in numbers]),
        Claim(bool((late_repeat < log_v / 3).all()),
              "over the last 20 steps the repeat's loss is below a third of ln V in every seed", late_repeat),
        Claim(all(d is not None and d < steps - 20 for d in drops),
              "the repeat's loss drops below half of ln V in every seed, well before the end", drops),
        Claim(all(s is not None and s > 0.2 * log_v for s in sharp),
              "in every seed the repeat's loss falls by over a fifth of ln V within 30 steps around the drop",
              sharp),
    ]


def circuit_claims(previous, induction):
    """In every seed: a previous-token head in layer 0 and an induction head in layer 1.

    ``previous``, ``induction``: ``(seeds, 2, H)`` scores of the trained two-layer models.
    """
    best_previous = previous[:, 0].max(dim=1).values  # (seeds,)
    best_induction = induction[:, 1].max(dim=1).values  # (seeds,)
    return [
        Claim(bool((best_previous > 0.6).all()), "every seed has a layer-0 head with a previous-token score above 0.6",
              best_previous),
        Claim(bool((best_induction > 0.7).all()), "every seed has a layer-1 head with an induction score above 0.7",
              best_induction),
        Claim(bool((induction[:, 0].max(dim=1).values < 0.3).all()),
              "no layer-0 head has an induction score above 0.3, in any seed", induction[:, 0].max(dim=1).values),
    ]


def composition_claims(intact, through, median_below=0.5):
    """The layer-0 heads reach the induction heads through their keys, not their queries or values.

    ``intact``: ``{"induction": (seeds,), "repeat": (seeds,)}``, the best layer-1 induction score and
    the repeat's loss; ``through``: the same with the previous-token heads switched off only on the
    way into layer 1's ``"key"``, ``"query"`` or ``"value"`` (``ablate_path``); ``median_below``, the
    median seed's share of the score kept with the keys' path off (0.4 over the stored 24 runs).
    """
    keys, queries, values = through["key"], through["query"], through["value"]
    kept = keys["induction"] / intact["induction"]  # (seeds,)
    return [
        Claim(bool((kept < 0.6).all()) and kept.median() < median_below,
              "off for the keys only, every seed's best induction score falls below 60% of its value (below "
              f"{median_below:.0%} in the median seed)", kept),
        Claim(bool((keys["repeat"] > intact["repeat"] + 1.0).all()),
              "and the repeat's loss rises by more than 1", keys["repeat"] - intact["repeat"]),
        Claim(bool(((queries["induction"] - intact["induction"]).abs() < 0.1).all()
                   and ((queries["repeat"] - intact["repeat"]).abs() < 0.1).all()),
              "off for the queries only, the score and the loss move by less than 0.1 in every seed",
              (queries["induction"] - intact["induction"], queries["repeat"] - intact["repeat"])),
        Claim(bool(((values["induction"] - intact["induction"]).abs() < 0.1).all()
                   and (values["repeat"] < intact["repeat"] + 0.1).all()),
              "off for the values only, the score moves by less than 0.1 and the loss rises by less than 0.1",
              (values["induction"] - intact["induction"], values["repeat"] - intact["repeat"])),
    ]


def copying_claims(copying):
    """The layer-1 heads copy; the layer-0 heads do not. ``copying`` ``(seeds, 2, H)``: ``copying_score``s
    (the median of an even count is the lower of the two middle ones, as ``torch.median``'s)."""
    best, middle = copying[:, 1].amax(dim=1), copying[:, 1].median(dim=1).values  # (seeds,) each
    return [
        Claim(bool((best >= 0.75).all()) and best.median() > 0.9,
              "in every seed a layer-1 head's OV circuit raises the token it reads above every other token, "
              "for at least 3 tokens in 4 (over 90% in the median seed)", best),
        Claim(bool((middle > 0.6).all()), "and the median layer-1 head does so for over 60% of them", middle),
        Claim(bool((copying[:, 0] < 0.25).all()), "no layer-0 head does so for even 25% of them, in any seed",
              copying[:, 0].amax(dim=1)),
    ]


def enough_controls(control):
    """Whether a control that exists only in some seeds exists in enough: ``control`` ``(seeds,)`` bool, true
    in two seeds in three at least (and in two at least)."""
    k = int(control.sum())
    return k >= 2 and 3 * k >= 2 * len(control)


def group_claims(baseline, groups, log_v, how="by zeroing"):
    """The circuit's groups break the copying; the rest of layer 0 does not.

    ``baseline`` ``(seeds,)``: the repeat's loss with no head off; ``groups``: the repeat's loss
    ``(seeds,)`` with ``"previous-token heads off"``, ``"other layer-0 heads off"`` (NaN in a seed whose
    every layer-0 head is a previous-token head: it has no control) and ``"induction heads off"``;
    ``how`` words the ablation in the claims. The control counts only where it exists
    (``enough_controls``).
    """
    previous_off = groups["previous-token heads off"] - baseline  # (seeds,)
    others_off = groups["other layer-0 heads off"] - baseline  # (seeds,), NaN without a control
    induction_off = groups["induction heads off"]  # (seeds,)
    control = ~others_off.isnan()  # (seeds,)
    others_off = others_off[control]
    return [
        Claim(bool((previous_off > 1.0).all()),
              f"with the previous-token heads switched off {how}, the repeat's loss rises by more than 1 "
              "in every seed", previous_off),
        Claim(bool((induction_off > log_v - 0.5).all()),
              f"with the induction heads switched off {how}, it goes back to within 0.5 of ln V or above, "
              "in every seed", induction_off),
        Claim(enough_controls(control) and bool(((others_off < 0.1) & (others_off > -0.25)).all()),
              f"with the other layer-0 heads switched off {how}, it rises by less than 0.1 and falls by less than "
              "0.25 in every seed that has any (two seeds in three at least)",
              (others_off, f"{int(control.sum())} of {len(control)} seeds have other layer-0 heads")),
    ]


def ablation_claims(single, baseline, in_circuit, groups, log_v):
    """Only circuit heads matter to the repeat, one at a time; the circuit's groups break it (``group_claims``).

    ``single`` ``(seeds, n_layers, H)``: the repeat's loss with each head off; ``baseline`` ``(seeds,)``:
    with none off; ``in_circuit`` ``(seeds, n_layers, H)`` bool; ``groups`` as ``group_claims``'.
    """
    rises = single - baseline[:, None, None]  # (seeds, n_layers, H)
    # (seeds,): the largest rise among heads outside the circuit; -inf where every head is in it
    other_rise = rises.masked_fill(in_circuit, float("-inf")).flatten(1).amax(dim=1)
    best_is_circuit = [bool(c.flatten()[r.flatten().argmax()]) for r, c in zip(rises, in_circuit)]
    return [
        Claim(bool((other_rise < 0.1).all()), "one at a time, no head outside the circuit raises the repeat's loss "
              "by 0.1 or more, in any seed", other_rise),
        Claim(all(best_is_circuit), "in every seed, the largest single-head rise is a circuit head's", best_is_circuit),
    ] + group_claims(baseline, groups, log_v)


def first_half_claims(seen, fresh, first_on, first_off, one_layer_first):
    """Part of the first half's excess over ln V is the circuit copying on the first half's own repeats:
    in every seed where it can copy (after a token seen before), in most seeds overall (a tendency: a
    seed whose induction heads barely copy in the first half sits at the one-layer level already).

    ``(seeds,)`` each: the two-layer models' first-half loss after a token seen before and after a
    fresh one (``first_half_losses``); their first-half loss with the induction heads on and off; the
    one-layer models' first-half loss.
    """
    middle = one_layer_first.median()
    above, falls, n = int((fresh > middle + 0.03).sum()), int((first_off < first_on).sum()), len(fresh)
    return [
        Claim(bool((seen > fresh + 0.1).all()),
              "in every seed the first half's loss is higher after a token seen before than after a fresh one",
              (seen, fresh)),
        Claim(above >= 0.75 * n, "after a fresh token it is still more than 0.03 above the one-layer models' "
                                 f"median, in at least three seeds in four ({above} of {n} here)", (fresh, middle)),
        Claim(falls >= 0.75 * n, "with the induction heads off, the first half's loss falls, in at least three seeds "
                                 f"in four ({falls} of {n} here)", (first_on, first_off)),
        Claim(bool(((first_off - middle).abs() < 0.15).all()),
              "in every seed it ends within 0.15 of the one-layer models' median", (first_off, middle)),
    ]


def seen_bet_claims(mass, share, one_layer_mass):
    """The bet on seen tokens: ``(seeds,)`` each, ``seen_token_mass``'s two numbers for the two-layer
    models and the first for the one-layer models."""
    ratio, one_layer_ratio = mass / share, one_layer_mass / share  # (seeds,) each
    return [
        Claim(bool((ratio > 1.5).all()) and ratio.median() > 2, "in the first half, every seed's model gives the "
              "tokens already seen over 1.5 times their share of the vocabulary (over twice in the median seed)",
              ratio),
        Claim(bool((one_layer_ratio > 1.5).all()), "and so does every one-layer model", one_layer_ratio),
    ]


def first_token_claims(one_layer, two_layers):
    """The repeat's first token, which nothing announces: ``(seeds,)`` each, the loss predicting it."""
    return [Claim(bool((one_layer < two_layers).all()), "at the repeat's first token the one-layer model's loss "
                  "is below the two-layer model's, seed for seed", (one_layer, two_layers))]


def one_layer_claims(one_layer_repeat, two_layer_repeat, one_layer_induction):
    """One layer on the same budget: the repeat's loss stays high and no head scores as an induction head.

    ``one_layer_repeat``, ``two_layer_repeat`` ``(seeds,)`` test losses on the repeat;
    ``one_layer_induction`` ``(seeds, H)``.
    """
    log_v = math.log(VOCAB_SIZE)
    best = one_layer_induction.max(dim=1).values  # (seeds,)
    return [
        Claim(bool((one_layer_repeat > 0.6 * log_v).all()),
              "every one-layer seed keeps the repeat's loss above 60% of ln V", one_layer_repeat),
        Claim(bool(one_layer_repeat.median() > 3 * two_layer_repeat.median()),
              "the one-layer models' median repeat loss is over 3 times the two-layer models'",
              (one_layer_repeat.median(), two_layer_repeat.median())),
        Claim(bool((best < 0.3).all()), "no one-layer head has an induction score above 0.3, in any seed", best),
    ]


def fixed_length_claims(trained_length, other_length, log_v):
    """A one-layer model trained on a single half-length copies at that length and not at another.

    ``trained_length``, ``other_length``: dicts of ``(seeds,)`` tensors ``"repeat"`` (the repeat's
    loss) and ``"induction"`` (the best induction score), on test sequences of the trained length
    and of another one.
    """
    return [
        Claim(bool((trained_length["repeat"] < 0.25 * log_v).all()),
              "at the length it trained on, every seed's repeat loss is below a quarter of ln V",
              trained_length["repeat"]),
        Claim(bool((trained_length["induction"] > 0.5).all()) and trained_length["induction"].median() > 0.7,
              "at that length its best head scores above 0.5 as an induction head in every seed (above 0.7 in the "
              "median seed)", trained_length["induction"]),
        Claim(bool((other_length["repeat"] > log_v).all()),
              "at another length every seed's repeat loss is above ln V", other_length["repeat"]),
        Claim(bool((other_length["induction"] < 0.3).all()),
              "and no head scores above 0.3 there, in any seed", other_length["induction"]),
    ]


def position_claims(fixed_back, induction_back):
    """The fixed-length model's head reads a distance, not the tokens: ``(seeds,)`` each, the weight on the
    key 11 back, over the second half of sequences that never repeat, of the fixed-length model's best
    head and, as the control, of the two-layer models' best induction head (``key_weight``)."""
    return [
        Claim(bool((fixed_back > 0.5).all()), "on sequences that never repeat, the fixed-length model's best head "
              "still puts over half its weight on the key 11 back, in every seed", fixed_back),
        Claim(bool((induction_back < 0.25).all()), "while the two-layer models' best induction head puts under a "
              "quarter there, in every seed", induction_back),
    ]
