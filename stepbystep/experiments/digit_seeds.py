"""Chapter 07's digits model from other seeds: how far its first run's numbers carry.

``digit_seed_run`` trains the chapter's digits model (3 epochs, Adam 5e-3) from one seed, which sets
the initial weights and the batch order, and measures what the chapter checks on its own run.
``python -m stepbystep.experiments.digit_seeds`` does it for ``SEEDS``, seeds the chapter does not
run, at one thread, and writes the runs to ``results/digit_seeds.json``; ``load_digit_seeds`` reads
them back and ``digit_seed_claims`` bounds what the chapter says about them.
"""
import json
import statistics
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ..data import pad_collate
from ..devices import environment, torch_threads
from ..expect import Claim
from ..models import SequenceCrossEntropy, TokenTransformer, greedy_decode, sequence_accuracy
from ..training import StepByStep
from .embedding_scale import digit_data

__all__ = ["SEEDS", "RESULTS", "MEASURES", "digit_seed_run", "digit_seeds", "load_digit_seeds", "digit_seed_lines",
           "digit_seed_claims"]

SEEDS = tuple(range(50, 116))  # the chapter's own run: initial weights from seed 2, batches from the trainer's 42
RESULTS = Path(__file__).parent / "results" / "digit_seeds.json"
MEASURES = {"val_loss": "validation loss", "exact": "exact match", "reads_right": "most-read digit right",
            "near": "weight within one", "eos_first": "<eos> reads digit 0"}


def digit_seed_run(seed, epochs=3, batch_seed=None):
    """Train the chapter's digits model from ``seed`` (the batch order from ``batch_seed``, by default
    ``seed`` too) and measure it on the 300 validation strings:
    ``{"seed", "val_loss", "exact", "reads_right", "near", "eos_first"}`` (the last three read from the
    cross-attention, the two heads averaged, as the chapter does)."""
    vocab, train_set, val_set = digit_data()
    torch.manual_seed(seed)
    model = TokenTransformer(len(vocab), len(vocab), d_model=32, n_heads=2, ff_units=64,
                             n_layers=1, dropout=0.0, max_len=17)
    trainer = StepByStep(model, SequenceCrossEntropy(ignore_index=vocab.pad_id),
                         torch.optim.Adam(model.parameters(), lr=5e-3, fused=True))
    trainer.set_loaders(DataLoader(train_set, batch_size=64, shuffle=True, collate_fn=pad_collate,
                                   generator=torch.Generator()),
                        DataLoader(val_set, batch_size=len(val_set), collate_fn=pad_collate))
    trainer.train(epochs, seed=seed if batch_seed is None else batch_seed, progress=False)
    (source, _), target_out = pad_collate(list(val_set))  # (300, 16), (300, 17)
    source, target_out = source.to(trainer.device), target_out.to(trainer.device)
    greedy = greedy_decode(model, source, vocab.sos_id, vocab.eos_id, max_new_tokens=17)  # (300, 17)
    sos = torch.full((len(source), 1), vocab.sos_id, device=source.device)  # (300, 1)
    with torch.no_grad():
        model.decode(torch.cat([sos, greedy[:, :-1]], dim=1), model.encode(source), model.source_mask(source))
    heads_mean = model.decoder.layers[-1].cross_attn_heads.alphas.mean(dim=1)  # (300, 17, 16)
    rows = torch.arange(16, device=source.device)  # (16,): the digit positions
    right = 15 - rows  # (16,): output position t reads source 15 - t
    near = sum(heads_mean[:, rows, (right + shift).clamp(0, 15)] * ((right + shift >= 0) & (right + shift <= 15))
               for shift in (-1, 0, 1))  # (300, 16): weight on the right digit and its two neighbours
    return {"seed": seed, "val_loss": trainer.val_losses[-1], "exact": sequence_accuracy(greedy, target_out),
            "reads_right": (heads_mean[:, :16].argmax(dim=-1) == right).float().mean().item(),
            "near": near.mean().item(), "eos_first": (heads_mean[:, 16].argmax(dim=-1) == 0).float().mean().item()}


def digit_seeds(seeds=SEEDS):
    """``digit_seed_run`` for each of ``seeds`` at one thread: a dict ready for JSON."""
    with torch_threads(1):
        runs = [digit_seed_run(seed) for seed in seeds]
        setting = environment()
    return {"command": "python -m stepbystep.experiments.digit_seeds", "environment": setting, "runs": runs}


def load_digit_seeds(path=RESULTS):
    """The stored study: ``{"command", "environment", "runs": [digit_seed_run's dicts]}``."""
    return json.loads(Path(path).read_text())


def digit_seed_lines(runs):
    """Text lines: for each of ``MEASURES``, its lowest, median and highest value over ``runs``."""
    lines = [f"{'':>22}  {'lowest':>7} {'median':>7} {'highest':>7}"]
    for key, label in MEASURES.items():
        values = [run[key] for run in runs]
        lines.append(f"{label:>22}: {min(values):7.4f} {statistics.median(values):7.4f} {max(values):7.4f}")
    return lines


def digit_seed_claims(runs):
    """What chapter 07 says about the digits model over ``runs``, for ``expect_all``."""
    low = {key: min(run[key] for run in runs) for key in MEASURES}
    median = {key: statistics.median(run[key] for run in runs) for key in MEASURES}
    n = len(runs)
    return [
        Claim(max(run["val_loss"] for run in runs) < 0.05 and sum(run["val_loss"] < 0.02 for run in runs) >= n - 1,
              f"the validation loss is below 0.05 on all {n} seeds, and below 0.02 on all but one",
              sorted(run["val_loss"] for run in runs)[-2:]),
        Claim(low["exact"] >= 0.8 and sum(run["exact"] >= 0.94 for run in runs) >= n - 1,
              f"at least 80% of the strings come out exactly reversed on all {n} seeds, and at least 94% on all "
              "but one", sorted(run["exact"] for run in runs)[:2]),
        Claim(median["exact"] >= 0.99, "and at least 99% in the median seed", median["exact"]),
        Claim(low["reads_right"] > 0.9, f"the most-read digit is the right one in over 90% of the rows on all {n}",
              low["reads_right"]),
        Claim(low["near"] > 0.9, f"over 0.9 of the weight lies within one position of the right digit on all {n}",
              low["near"]),
        Claim(median["eos_first"] > 0.9 and sum(run["eos_first"] > 0.5 for run in runs) >= n - 5,
              "over 90% of the <eos> rows read the first source digit most in the median seed, and over half "
              "of them on all seeds but five", sorted(run["eos_first"] for run in runs)[:6]),
    ]


if __name__ == "__main__":
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(digit_seeds(), indent=1) + "\n")
    print(f"wrote {RESULTS}")
