"""Chapter 07's warm-up at a learning rate of 0.01: the word model with and without it, over seeds.

``python -m stepbystep.experiments.warmup_seeds`` trains ``word_trainer(lr=1e-2, warmup=...)`` for
three epochs from each of ``SEEDS`` (initial weights and batch order), at one thread as the chapter
runs, and writes each run's validation loss and greedy exact match to ``results/warmup_seeds.json``;
``load_warmup_seeds`` reads them back and ``warmup_claims`` bounds what the chapter says about them.
"""
import json
import math
from pathlib import Path

import torch

from ..devices import environment, torch_threads
from ..expect import Claim
from .word_reversal import padding_exact, word_data, word_trainer

__all__ = ["SEEDS", "RESULTS", "FAILED", "warmup_run", "warmup_seeds", "load_warmup_seeds", "load_warmup_environment",
           "warmup_lines", "warmup_claims"]

SEEDS = tuple(range(14))  # the chapter runs 0 and 1 live
RESULTS = Path(__file__).parent / "results" / "warmup_seeds.json"
FAILED = 0.5  # a run has failed when it reverses under half of the validation words


def warmup_run(seed, warmup, lr=1e-2, epochs=3):
    """The word model trained from ``seed`` with or without the warm-up: ``[validation loss, exact match]``."""
    trainer = word_trainer(lr=lr, warmup=warmup, seed=seed)
    trainer.train(epochs, seed=seed, progress=False)
    return [trainer.val_losses[-1], padding_exact(trainer.model, "as in training")]


def warmup_seeds(seeds=SEEDS, lr=1e-2, epochs=3):
    """Each seed with and without the warm-up, at one thread: ``{"runs": {"with warm-up" | "without":
    [[val loss, exact], ...]}}`` and the environment it ran in."""
    with torch_threads(1):
        runs = {name: [warmup_run(seed, warmup, lr, epochs) for seed in seeds]
                for name, warmup in (("with warm-up", True), ("without", False))}
        setting = environment()
    return {"command": "python -m stepbystep.experiments.warmup_seeds", "seeds": list(seeds), "lr": lr,
            "environment": setting, "runs": runs}


def load_warmup_seeds(path=RESULTS):
    """The stored study: ``(seeds, {"with warm-up" | "without": tensor (seeds, 2)})``, validation loss and exact match."""
    stored = json.loads(Path(path).read_text())
    return tuple(stored["seeds"]), {name: torch.tensor(runs) for name, runs in stored["runs"].items()}


def load_warmup_environment(path=RESULTS):
    """Where the stored study ran: ``environment()``'s dict."""
    return json.loads(Path(path).read_text())["environment"]


def warmup_lines(seeds, runs):
    """Text lines: the stored runs with and without the warm-up, summed up (``load_warmup_seeds``'s values)."""
    with_warmup, without = runs["with warm-up"], runs["without"]  # (seeds, 2) each
    failed = without[:, 1] < FAILED  # (seeds,)
    lines = [f"seeds {seeds[0]} to {seeds[-1]}, with the warm-up: exact match from {with_warmup[:, 1].min():.1%} "
             f"to {with_warmup[:, 1].max():.1%}, validation loss up to {with_warmup[:, 0].max():.4f}",
             f"without it: {int(failed.sum())} of {len(seeds)} failed (under {FAILED:.0%} exact; seeds "
             f"{[seed for seed, bad in zip(seeds, failed.tolist()) if bad]}), validation loss "
             f"{without[failed, 0].min():.3f} to {without[failed, 0].max():.3f}, exact match "
             f"{without[failed, 1].min():.1%} to {without[failed, 1].max():.1%}"]
    if (~failed).any():
        lines.append(f"the other {int((~failed).sum())}: exact match from {without[~failed, 1].min():.1%} to "
                     f"{without[~failed, 1].max():.1%}")
    return lines


def warmup_claims(runs):
    """What chapter 07 says about the stored runs, ``runs`` as ``load_warmup_seeds`` returns them."""
    with_warmup, without = runs["with warm-up"], runs["without"]  # (seeds, 2) each: val loss, exact
    n = len(with_warmup)
    failed = without[:, 1] < FAILED  # (seeds,)
    uniform = math.log(len(word_data()[0]))
    return [
        Claim(bool((with_warmup[:, 1] >= 0.97).all()), f"with the warm-up, every one of the {n} seeds reverses at "
              "least 97% of the words", with_warmup[:, 1]),
        Claim(0 < int(failed.sum()) < n, "without it, some seeds fail (under half of the words) and some do not",
              {"failed": int(failed.sum()), "of": n}),
        Claim(bool((without[:, 0] > 2 * with_warmup[:, 0]).all()), "seed by seed, the run without it ends with over "
              "twice the validation loss", without[:, 0] / with_warmup[:, 0]),
        Claim(bool((without[failed, 0] > 10 * with_warmup[:, 0].max()).all()
                   and (without[failed, 0] < uniform - 0.3).all()),
              "every failed run ends above 10 times any warm-up run's validation loss, and below ln V - 0.3",
              without[failed, 0]),
    ]


if __name__ == "__main__":
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(warmup_seeds(), indent=1) + "\n")
    print(f"wrote {RESULTS}")
