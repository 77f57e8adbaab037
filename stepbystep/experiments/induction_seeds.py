"""Chapter 13's circuit over many seeds, too long to run in the chapter.

For each seed, ``seed_circuit`` trains the chapter's two-layer model (``train_on_repeats``, 300
steps), its one-layer control and a one-layer model on halves of 12 only, then measures on the
chapter's test sequences what the chapter measures on its three: the heads' scores, the
previous-token heads found by ablation (``previous_token_heads``, on the selection sequences, so that
what they do is measured on others) and the heads a score cut-off would pick, every group and path
ablation (the other layer-0 heads' only where a seed has any), the copying scores, the first half,
the repeat's first token, the bet on seen tokens, the fixed-length models, and, every
``PROBE_EVERY`` steps of training, the best induction score with layer 0 intact and switched off.
``python -m stepbystep.experiments.induction_seeds`` writes ``SEEDS`` at one thread to ``RESULTS``
and at PyTorch's default thread count to ``RESULTS_DEFAULT_THREADS``; ``load_induction_seeds`` reads
one back, ``both_thread_counts`` both together.
"""
import json
import math
from itertools import combinations
from pathlib import Path

import torch

from ..checks import check_positive_int
from ..data.repeated_sequences import repeated_sequences
from ..devices import environment, torch_threads
from ..expect import Claim
from ..interpret import (
    READS,
    ablate_heads,
    ablate_path,
    attention_weights,
    composition_scores,
    copying_score,
    half_losses,
    head_scores,
    induction_score,
    per_position_loss,
    qk_circuit,
)
from ..models.gpt.generation import generate
from ..training import Callback
from .induction import (
    VOCAB_SIZE,
    ablation_claims,
    build_model,
    circuit_claims,
    composition_claims,
    copying_claims,
    drop_step,
    enough_controls,
    first_half_claims,
    first_half_loss,
    first_half_losses,
    first_token_claims,
    fixed_length_claims,
    fixed_length_scores,
    group_claims,
    one_layer_claims,
    phase_claims,
    phase_numbers,
    previous_token_heads,
    repeat_loss,
    seen_bet_claims,
    seen_token_mass,
    train_on_repeats,
)

__all__ = ["SEEDS", "RESULTS", "RESULTS_DEFAULT_THREADS", "TEST_LENGTH", "PROBE_EVERY", "test_sequences",
           "other_length_sequences", "selection_sequences", "both_thread_counts",
           "previous_key_weight",
           "qk_diagonal", "train_with_layer0_probe",
           "seed_circuit", "induction_seeds", "load_induction_seeds", "early_rise_claims", "history_bests", "fade_claims", "written_claims", "dependence_claims",
           "layer1_claims", "needed_claims",
           "k_composition_claims", "study_claims", "to_json"]

SEEDS = tuple(range(12))
RESULTS = Path(__file__).parent / "results" / "induction_seeds.json"  # at one thread
RESULTS_DEFAULT_THREADS = RESULTS.with_name("induction_seeds_default_threads.json")  # at PyTorch's default
TEST_LENGTH, PROBE_EVERY, STEPS = 12, 10, 300
QK_OFFSETS = (3, 7, 11, 15)  # the distances to the key an induction head reads, for halves of 4 to 16


def test_sequences():
    """The chapter's test sequences ``(256, 24)`` (data seed 0, never trained on), its 200 prompts of 10
    different tokens, then the first two again ``(200, 20)``, and 256 sequences of 24 random tokens that
    do not repeat ``(256, 24)`` (the first halves of longer ones)."""
    test_ids = repeated_sequences(256, TEST_LENGTH, VOCAB_SIZE, seed=0)  # (256, 24)
    candidates = repeated_sequences(1_000, 10, VOCAB_SIZE, seed=60002)  # (1000, 20)
    different = torch.tensor([len(set(row[:10].tolist())) == 10 for row in candidates])  # (1000,)
    unrepeated = repeated_sequences(256, 2 * TEST_LENGTH, VOCAB_SIZE, seed=60003)[:, :2 * TEST_LENGTH]  # (256, 24)
    return test_ids, candidates[different][:200], unrepeated


def other_length_sequences():
    """Test sequences of another half-length, 8 ``(256, 16)``, from a data seed (60000) no batch uses: where a
    model trained on halves of 12 alone must read the tokens to copy."""
    return repeated_sequences(256, 8, VOCAB_SIZE, seed=60000)  # (256, 16)


def selection_sequences():
    """The sequences the previous-token heads are found on ``(256, 24)``: half-length 12 like the test
    sequences, from a data seed (60004) that neither training nor any test set uses. Finding the heads on
    these and measuring what they do on the test sequences keeps the measure from being the rule that
    chose them."""
    return repeated_sequences(256, TEST_LENGTH, VOCAB_SIZE, seed=60004)  # (256, 24)


def previous_key_weight(model, ids, head, length):
    """The mean weight layer 0's ``head`` puts on the key just before each query of ``ids`` ``(N, 2 · length)``:
    ``(first, repeat)``, over the queries ``1 .. length - 1`` and ``length + 1 .. 2 · length - 1``."""
    before = attention_weights(model, ids)[0][:, head].diagonal(offset=-1, dim1=-2, dim2=-1)  # (N, 2 · length - 1)
    return before[:, :length - 1].mean(), before[:, length:].mean()  # entry i: query i + 1


class _Snapshots(Callback):
    """Copies of the model's parameters after every ``every``-th optimizer step, in ``taken``: a trainer
    callback, so nothing outside this training run sees it."""

    def __init__(self, every):
        self.every, self.taken = every, []

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        if trainer.total_steps % self.every == 0:
            self.taken.append([p.detach().clone() for p in trainer.model.parameters()])


def _best_induction(model, ids, heads=()):
    """The best layer-1 induction score on ``ids`` with ``heads`` switched off."""
    with ablate_heads(model, list(heads)):
        return head_scores(model, ids)[1][1].max()


def qk_diagonal(model, previous, induction, offset):
    """The share of query tokens whose highest ``qk_circuit`` score is on the key the token ``previous``
    read came before: 1.0 when the head always prefers the key after its own token, about 1 / V by chance."""
    circuit = qk_circuit(model, previous, induction, offset)  # (V, V)
    return (circuit.argmax(dim=1) == torch.arange(circuit.shape[0])).float().mean().item()


def train_with_layer0_probe(seed=0, probe=None, steps=STEPS, probe_every=PROBE_EVERY):
    """``train_on_repeats(n_layers=2, ...)`` with ``probe`` ids, and one more record: at every probe
    step, the best layer-1 induction score with all of layer 0 switched off,
    ``history["induction_layer0_off"]`` ``(P,)``. The models along the way are rebuilt from copies of
    the parameters taken after every ``probe_every``-th update. Returns the model and the history."""
    check_positive_int("probe_every", probe_every)
    if steps % probe_every:
        raise ValueError(f"steps must be a multiple of probe_every ({probe_every}), got {steps}")
    snapshots = _Snapshots(probe_every)
    model, history = train_on_repeats(n_layers=2, seed=seed, steps=steps, probe=probe, probe_every=probe_every,
                                      callbacks=[snapshots])
    layer0 = [(0, head) for head in range(model.layers[0].self_attn_heads.n_heads)]
    off = []
    for parameters in [list(build_model(2, seed).parameters())] + snapshots.taken:  # the initial model, then every copy
        along = build_model(2, seed).eval()
        with torch.no_grad():
            for p, value in zip(along.parameters(), parameters):
                p.copy_(value)
        off.append(_best_induction(along, probe, layer0))
    history["induction_layer0_off"] = torch.stack(off[:len(history["probe_steps"])])  # (P,)
    return model, history


def seed_circuit(seed):
    """Everything the chapter measures, for one seed: a dict of numbers and lists, ready for JSON."""
    test_ids, prompts, unrepeated = test_sequences()
    log_v = math.log(VOCAB_SIZE)
    model, history = train_with_layer0_probe(seed, test_ids[:32])
    drop = drop_step(history["repeat"], log_v / 2)
    previous, induction = head_scores(model, test_ids)  # (2, 4) each
    baseline = repeat_loss(model, test_ids).item()
    found = previous_token_heads(model, selection_sequences())  # chosen on other sequences than test_ids
    others = [(0, h) for h in range(4) if (0, h) not in found]
    inductions = [(1, h) for h in range(4) if induction[1, h] > 0.3]
    subsets = {"".join(str(h) for h in heads): repeat_loss(model, test_ids, [(0, h) for h in heads]).item()
               for size in range(1, 5) for heads in combinations(range(4), size)}
    paths = {}
    for part in ("key", "query", "value"):
        logits, weights = ablate_path(model, test_ids, found, layer=1, reads=(part,))
        paths[part] = {"induction": induction_score(weights, test_ids).max().item(),
                       "repeat": half_losses(per_position_loss(logits, test_ids), TEST_LENGTH)[1].item()}
    one_layer, _ = train_on_repeats(n_layers=1, seed=seed, steps=STEPS)
    with torch.no_grad():
        one_layer_first = half_losses(per_position_loss(one_layer(test_ids), test_ids), TEST_LENGTH)[0].item()
        written = generate(model, prompts[:, :12], 8, temperature=0)[:, 12:]  # (200, 8)
    seen, fresh = first_half_losses(model, test_ids, TEST_LENGTH)
    best = previous[0].argmax().item()
    first_weight, repeat_weight = previous_key_weight(model, test_ids, best, TEST_LENGTH)
    mass, share = seen_token_mass(model, test_ids, TEST_LENGTH)
    with torch.no_grad():
        at_first_token = {name: per_position_loss(m(test_ids), test_ids)[TEST_LENGTH - 1].item()
                          for name, m in (("one_layer", one_layer), ("two_layers", model))}  # predicting token T
    fixed, _ = train_on_repeats(n_layers=1, seed=seed, steps=STEPS, lengths=(TEST_LENGTH, TEST_LENGTH))
    fixed_scores = {str(length): {key: value.item() for key, value in fixed_length_scores(fixed, ids).items()}
                    for length, ids in ((TEST_LENGTH, test_ids), (8, other_length_sequences()))}
    control = bool(others)  # False where every layer-0 head was needed: no control head, nothing to measure

    return {
        "seed": seed, "drop": drop, "phase": phase_numbers(history, drop, STEPS),
        "previous": previous.tolist(), "induction": induction.tolist(),
        "copying": [[copying_score(model, layer, head) for head in range(4)] for layer in range(2)],
        "baseline": baseline,
        "single": [[repeat_loss(model, test_ids, [(layer, head)]).item() for head in range(4)] for layer in range(2)],
        "previous_heads": [h for _, h in found], "induction_heads": [h for _, h in inductions],
        "layer0_subsets": subsets,
        "groups": {"previous-token heads off": subsets["".join(str(h) for h in sorted(h for _, h in found))],
                   "other layer-0 heads off": repeat_loss(model, test_ids, others).item() if control else None,
                   "induction heads off": repeat_loss(model, test_ids, inductions).item()},
        "mean_groups": {"previous-token heads off": repeat_loss(model, test_ids, found, how="mean").item(),
                        "other layer-0 heads off": (repeat_loss(model, test_ids, others, how="mean").item()
                                                    if control else None),
                        "induction heads off": repeat_loss(model, test_ids, inductions, how="mean").item()},
        "best_induction_without": {"previous-token heads": _best_induction(model, test_ids, found).item(),
                                   "other layer-0 heads": (_best_induction(model, test_ids, others).item()
                                                           if control else None)},
        "paths": paths,
        "first_half": {"seen": seen.item(), "fresh": fresh.item(), "on": first_half_loss(model, test_ids).item(),
                       "induction heads off": first_half_loss(model, test_ids, inductions).item()},
        "one_layer": {"repeat": repeat_loss(one_layer, test_ids).item(), "first": one_layer_first,
                      "induction": head_scores(one_layer, test_ids)[1][0].max().item()},
        "composition": composition_scores(model).tolist(),
        "qk_diagonal": {str(offset): qk_diagonal(model, best, induction[1].argmax().item(), offset)
                        for offset in QK_OFFSETS},
        "previous_key_weight": {"first": first_weight.item(), "repeat": repeat_weight.item(),
                                "unrepeated": previous_key_weight(model, unrepeated, best, TEST_LENGTH)[1].item()},
        "written_whole": (written == prompts[:, 12:]).all(dim=1).float().mean().item(),
        "seen_token_mass": {"mass": mass.item(), "share": share.item(),
                            "one_layer": seen_token_mass(one_layer, test_ids, TEST_LENGTH)[0].item()},
        "first_token": at_first_token,
        "fixed_length": fixed_scores,
        "probes": {"steps": history["probe_steps"].tolist(), "previous": history["previous"][:, 0].amax(dim=1).tolist(),
                   "induction": history["induction"][:, 1].amax(dim=1).tolist(),
                   "induction_layer0_off": history["induction_layer0_off"].tolist()},
    }


def induction_seeds(seeds=SEEDS, threads=1):
    """``seed_circuit`` for every seed at ``threads`` threads (``None``: PyTorch's default): a dict ready
    for JSON, which records the thread count used."""
    with torch_threads(threads):
        runs = [seed_circuit(seed) for seed in seeds]
        used, setting = torch.get_num_threads(), environment()
    return {"seeds": list(seeds), "steps": STEPS, "threads": used, "torch": torch.__version__, "environment": setting,
            "runs": runs}


def load_induction_seeds(path=RESULTS):
    """One stored study: ``{"seeds", "steps", "threads", "torch", "environment", "runs": [one seed_circuit dict
    per seed]}``."""
    return json.loads(Path(path).read_text())


def both_thread_counts(paths=(RESULTS, RESULTS_DEFAULT_THREADS)):
    """The stored studies together, one study whose runs are every seed at every thread count (each run
    with its ``"threads"``): a claim "in every seed" on it holds at one thread and at the default."""
    studies = [load_induction_seeds(path) for path in paths]
    runs = [dict(run, threads=study["threads"]) for study in studies for run in study["runs"]]
    return {"seeds": studies[0]["seeds"], "steps": studies[0]["steps"],
            "threads": [study["threads"] for study in studies], "runs": runs}


def _rounded(value, digits=5):
    """``value`` with every float in it rounded to ``digits`` decimals (far finer than any claim's margin)."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {key: _rounded(item, digits) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item, digits) for item in value]
    return value


def to_json(study):
    """``study`` as JSON text, one line per seed, floats to 5 decimals."""
    head = json.dumps({key: value for key, value in study.items() if key != "runs"})[:-1]
    return head + ', "runs": [\n' + ",\n".join(json.dumps(_rounded(run)) for run in study["runs"]) + "\n]}\n"


def early_rise_claims(probe_steps, previous, induction, layer0_off, drops, lead=30):
    """The induction score's rise before the drop: what layer 1 finds alone (layer 0 off) stays low, and
    ``lead`` steps before the drop the intact score is already above it while no layer-0 head yet reads
    the previous token sharply. ``probe_steps`` ``(P,)``; ``previous``, ``induction``, ``layer0_off``
    ``(seeds, P)``: the best previous-token score, the best induction score, the same with layer 0
    off; ``drops``: each seed's drop step."""
    before = torch.tensor([int((probe_steps <= d - lead).nonzero().max()) for d in drops])  # (seeds,)
    rows = torch.arange(len(drops))
    gap = induction[rows, before] - layer0_off[rows, before]  # (seeds,)
    return [
        Claim(bool((layer0_off.amax(dim=1) < 0.35).all()),
              "with layer 0 switched off, the best induction score stays below 0.35 all through training, in every "
              "seed", layer0_off.amax(dim=1)),
        Claim(bool((gap > 0).all()) and gap.median() > 0.08,
              f"{lead} steps before the drop, the intact score is above that in every seed (by more than 0.08 in "
              "the median)", gap),
        Claim(bool((previous[rows, before] < 0.35).all()),
              "while every seed's best previous-token score is still below 0.35", previous[rows, before]),
    ]


def history_bests(histories):
    """``early_rise_claims``' arrays from ``train_with_layer0_probe`` histories: ``(probe_steps, previous,
    induction, layer0_off)``, the best layer-0 previous-token and layer-1 induction scores ``(seeds, P)``."""
    previous = torch.stack([h["previous"][:, 0].amax(dim=1) for h in histories])  # (seeds, P)
    induction = torch.stack([h["induction"][:, 1].amax(dim=1) for h in histories])  # (seeds, P)
    return histories[0]["probe_steps"], previous, induction, torch.stack([h["induction_layer0_off"] for h in histories])


def written_claims(written):
    """In-context copying, run by run: ``written`` ``(seeds,)``, the share of the 200 prompts whose rest each
    model writes token for token. One wrong token can derail the rest, so a run varies by several points
    (seed 0 by six between one and two threads): every seed is held to 75%, the median seed to 85%."""
    return [Claim(bool((written >= 0.75).all()) and written.median() >= 0.85, "every seed's model writes the rest "
                  "of the repeat token for token for at least 75% of the 200 prompts (85% in the median seed)", written)]


def dependence_claims(best, without_previous, without_others, median_below=0.5):
    """The induction heads' attention needs the previous-token heads and not the other layer-0 heads:
    ``(seeds,)`` each, the best layer-1 induction score intact, with the previous-token heads off and
    with the other layer-0 heads off (NaN in a seed that has none: the control counts where it exists,
    ``enough_controls``). ``median_below``: the median seed's share kept (half for three live seeds,
    whose median one seed moves; the stored 24 runs are held to 0.4)."""
    control = ~without_others.isnan()  # (seeds,)
    moved = (without_others - best)[control]  # (control seeds,)
    kept = without_previous / best  # (seeds,)
    return [
        Claim(bool((kept < 0.6).all()) and kept.median() < median_below,
              "with the previous-token heads off, every seed's best induction score falls below 60% of its value "
              f"(below {median_below:.0%} in the median seed)", kept),
        Claim(enough_controls(control) and bool((moved.abs() < 0.1).all()),
              "with the other layer-0 heads off, it stays within 0.1 of its value, up or down, in every seed that "
              "has any (two seeds in three at least)", (moved, f"{int(control.sum())} of {len(control)} seeds have other "
                                                    "layer-0 heads")),
    ]


def layer1_claims(inductions):
    """Layer 1 has no control head: ``inductions`` ``(seeds, H)`` bool, the layer-1 heads that score as
    induction heads. In most seeds all of them do, so switching them off switches layer 1 off."""
    every = inductions.all(dim=1)  # (seeds,)
    k, n = int(every.sum()), len(every)
    return [Claim(k >= 0.75 * n, f"in at least three seeds in four ({k} of {n} here), every layer-1 head is an "
                  "induction head: switching them off switches layer 1 off", inductions.sum(dim=1))]


def needed_claims(previous, needed):
    """The previous-token heads that ablation finds: ``previous`` ``(seeds, H)`` layer 0's scores,
    ``needed`` ``(seeds, H)`` bool, the heads ``previous_token_heads`` returned."""
    several = needed.sum(dim=1) > 1  # (seeds,)
    lowest = torch.where(needed, previous, torch.inf).amin(dim=1)  # (seeds,): the weakest needed head
    return [
        Claim(several.float().mean() >= 0.5, "in at least half the seeds, more than one layer-0 head must be "
              "switched off to break the copying", needed.sum(dim=1)),
        Claim(bool((lowest < 0.5).any()), "in at least one seed a head it needs scores below 0.5", lowest),
    ]


def k_composition_claims(composition, in_previous, qk_diagonal, d_model):
    """From the weights: layer 1's keys read the previous-token heads more than its queries and values do,
    more than random matrices would, and more than they read the other layer-0 heads; its queries and
    values read them less than random matrices would, and (in the median seed) less than the other
    layer-0 heads, which its queries too read less than random; and the QK circuit prefers the key after
    the query's own token. ``composition`` ``(seeds, 3, H0, H1)``, ``in_previous`` ``(seeds, H0)``,
    ``qk_diagonal`` ``(seeds,)`` (``qk_diagonal`` of each seed's best pair)."""
    random = 1 / d_model ** 0.5
    read = torch.stack([c[:, mine].mean(dim=(1, 2)) for c, mine in zip(composition, in_previous)])  # (seeds, 3)
    # (seeds, 3): the same for the other layer-0 heads, NaN in a seed that has none
    others = torch.stack([c[:, ~mine].mean(dim=(1, 2)) for c, mine in zip(composition, in_previous)])
    queries, keys, values = read.unbind(dim=1)  # (seeds,) each
    control = ~others[:, 0].isnan()  # (seeds,)
    other_queries, other_keys, other_values = others[control].unbind(dim=1)  # (control seeds,) each
    return [
        Claim(bool(((keys > queries) & (keys > values)).all()), "in every seed layer 1's keys read the "
              "previous-token heads' output more than its queries and its values do", read),
        Claim(bool((keys > 1.5 * random).all()), "and over 1.5 times as much as two random matrices would",
              keys),
        Claim(enough_controls(control) and bool((keys[control] > other_keys).all()),
              "and more than they read the other layer-0 heads, in every seed that has any (two seeds in three at least)",
              (keys[control], other_keys)),
        Claim(bool(((queries < random) & (values < random)).all()),
              "while its queries and its values read it less than two random matrices would", (queries, values)),
        Claim(bool(other_queries.median() < random), "its queries read the other layer-0 heads less than random "
              "matrices would too, in the median seed", other_queries),
        Claim(bool((other_queries - queries[control]).median() > 0 and (other_values - values[control]).median() > 0),
              "and its queries and its values read the previous-token heads less than the other layer-0 heads, in "
              "the median seed", (other_queries - queries[control], other_values - values[control])),
        Claim(bool((qk_diagonal >= 0.75).all()), "in every seed the best pair's QK circuit scores the key after the "
              "query's own token highest for at least 3 tokens in 4", qk_diagonal),
    ]


def fade_claims(first, repeat, unrepeated):
    """The best previous-token head's weight on the key before: ``(seeds,)`` each, over the first
    half's queries, the repeat's, and the repeat's positions on sequences that do not repeat."""
    return [
        Claim(bool((first > 0.8).all()), "in every seed the best previous-token head puts more than 0.8 of its "
              "weight on the key before, in the first half", first),
        Claim(bool((first - repeat > 0.1).all()), "and more than 0.1 less in the repeat", first - repeat),
        Claim(bool(((repeat - unrepeated).abs() < 0.05).all()), "at those positions, on sequences that do not "
              "repeat, it is within 0.05 of that: the position, not the repeat", repeat - unrepeated),
    ]


def study_claims(study):
    """Every claim the chapter makes, on a stored study (``load_induction_seeds`` or ``both_thread_counts``):
    its seeds' claims over all the study's runs. A measure stored as ``None`` (no control heads) reads as NaN."""
    runs = study["runs"]
    log_v = math.log(VOCAB_SIZE)

    def tensor(key, *inner):
        values = [run[key] for run in runs]
        for name in inner:
            values = [value[name] for value in values]
        return torch.tensor([math.nan if value is None else value for value in values])

    previous, induction = tensor("previous"), tensor("induction")  # (seeds, 2, 4) each
    baseline = tensor("baseline")  # (seeds,)
    n_heads = previous.shape[2]
    needed = torch.tensor([[h in run["previous_heads"] for h in range(n_heads)] for run in runs])  # (seeds, H)
    inductions = torch.tensor([[h in run["induction_heads"] for h in range(n_heads)] for run in runs])
    groups = {name: tensor("groups", name) for name in runs[0]["groups"]}
    mean_groups = {name: tensor("mean_groups", name) for name in runs[0]["mean_groups"]}
    intact = {"induction": induction[:, 1].amax(dim=1), "repeat": baseline}
    through = {part: {key: tensor("paths", part, key) for key in ("induction", "repeat")} for part in READS}
    probes = [run["probes"] for run in runs]
    bests = [torch.tensor([p[key] for p in probes]) for key in ("previous", "induction", "induction_layer0_off")]
    return (phase_claims([run["phase"] for run in runs], [run["drop"] for run in runs], study["steps"])
            + written_claims(tensor("written_whole"))
            + early_rise_claims(torch.tensor(probes[0]["steps"]), *bests, [run["drop"] for run in runs])
            + circuit_claims(previous, induction)
            + dependence_claims(intact["induction"], tensor("best_induction_without", "previous-token heads"),
                                tensor("best_induction_without", "other layer-0 heads"), median_below=0.4)
            + needed_claims(previous[:, 0], needed)
            + layer1_claims(inductions)
            + fade_claims(*(tensor("previous_key_weight", key) for key in ("first", "repeat", "unrepeated")))
            + composition_claims(intact, through, median_below=0.4)
            + copying_claims(tensor("copying"))
            + k_composition_claims(tensor("composition"), needed, tensor("qk_diagonal", str(QK_OFFSETS[2])),
                                   d_model=64)
            + ablation_claims(tensor("single"), baseline, torch.stack([needed, inductions], dim=1), groups, log_v)
            + group_claims(baseline, mean_groups, log_v, how="by their mean")
            + first_half_claims(*(tensor("first_half", key) for key in ("seen", "fresh", "on", "induction heads off")),
                                tensor("one_layer", "first"))
            + one_layer_claims(tensor("one_layer", "repeat"), baseline, tensor("one_layer", "induction")[:, None])
            + first_token_claims(tensor("first_token", "one_layer"), tensor("first_token", "two_layers"))
            + seen_bet_claims(*(tensor("seen_token_mass", key) for key in ("mass", "share", "one_layer")))
            + fixed_length_claims(*({key: tensor("fixed_length", length, key) for key in ("repeat", "induction")}
                                    for length in (str(TEST_LENGTH), "8")), log_v))


if __name__ == "__main__":
    for path, threads in ((RESULTS, 1), (RESULTS_DEFAULT_THREADS, None)):
        path.write_text(to_json(induction_seeds(threads=threads)))
        print(f"wrote {path}")
