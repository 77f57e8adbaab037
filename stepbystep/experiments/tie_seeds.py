"""Chapter 09's tied-embedding comparison, stored: three seeds of tied and untied models, 120 steps.

The chapter's measure took as long as its own training, so ``python -m stepbystep.experiments.tie_seeds``
runs ``tied_embedding_study`` on one thread and writes ``results/tie_seeds.json``; the chapter reads it
and a test recomputes one seed.
"""
import json
from dataclasses import asdict
from pathlib import Path

import torch

from ..data import completion_vocab, date_datasets
from ..devices import torch_threads
from .design_choices import SeedRun, tied_embedding_study

__all__ = ["SEEDS", "MODEL_SIZE", "N_STEPS", "EVAL_EVERY", "RESULTS", "tie_seeds", "load_tie_seeds"]

SEEDS = (0, 1, 2)
MODEL_SIZE = dict(d_model=64, n_heads=4, ff_units=128, n_layers=2, dropout=0.0, max_len=48, embedding_std=0.3)
N_STEPS, EVAL_EVERY = 120, 20
RESULTS = Path(__file__).parent / "results" / "tie_seeds.json"


def tie_seeds(seeds=SEEDS):
    """``tied_embedding_study`` on chapter 09's data (the first 6,400 training pairs, 500 validation
    streams), on one thread: ``{"untied": [SeedRun, ...], "tied": [...]}``, one run per seed."""
    train_pairs, val_pairs = date_datasets(n_train=12_800, n_val=2_000, seed=0)
    vocab = completion_vocab(train_pairs)
    with torch_threads(1):
        return tied_embedding_study(vocab, train_pairs[:6_400], val_pairs[:500], seeds=tuple(seeds), n_steps=N_STEPS,
                                    eval_every=EVAL_EVERY, **MODEL_SIZE)


def load_tie_seeds(path=RESULTS):
    """The stored runs, as ``tie_seeds`` returns them."""
    runs = json.loads(Path(path).read_text())["runs"]
    return {name: [SeedRun(**run) for run in seed_runs] for name, seed_runs in runs.items()}


if __name__ == "__main__":
    computed = tie_seeds()
    RESULTS.write_text(json.dumps({"written_by": "python -m stepbystep.experiments.tie_seeds",
                                   "torch": torch.__version__.split("+")[0], "device": "cpu", "threads": 1,
                                   "runs": {name: [asdict(run) for run in seed_runs]
                                            for name, seed_runs in computed.items()}}, indent=1) + "\n")
    print(f"wrote {sum(map(len, computed.values()))} runs to {RESULTS}")
