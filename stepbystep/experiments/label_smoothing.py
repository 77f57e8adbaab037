"""Chapter 09's label-smoothing study the usual way: smoothing from the first step of the
chapter's own recipe, against the same recipe without it, over seeds.

Training 2 x 5 models takes minutes, more than a chapter may spend, so the numbers are committed
in ``label_smoothing.json`` beside this file; ``python -m stepbystep.experiments.label_smoothing``
writes it again (on the CPU, one thread), and a test recomputes one run and compares.
"""
import json
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ..checks import check_instance
from ..data.date_completions import CompletionDataset, completion_collate, completion_vocab
from ..data.dates import date_datasets
from ..devices import torch_threads
from ..models.gpt.model import DecoderOnlyTransformer, completion_loss
from ..training import StepByStep
from ..training.schedules import linear_ramps
from .date_completion import complete_dates
from .design_choices import completion_calibration

__all__ = ["RESULTS_FILE", "smoothing_from_scratch", "train_from_scratch", "load_smoothing_results"]

RESULTS_FILE = Path(__file__).with_name("label_smoothing.json")
SEEDS = (0, 1, 2, 3, 4)
EPSILONS = (0.0, 0.1)


def _smoothed_loss(epsilon):
    def loss_fn(logits, targets):
        return completion_loss(logits, targets, label_smoothing=epsilon)
    return loss_fn


def smoothing_from_scratch(epsilons=EPSILONS, seeds=SEEDS, n_epochs=3, device="cpu"):
    """Chapter 09's model and recipe (Adam 7e-3, warm-up over 100 steps then linear decay,
    clipping at 1, 3 epochs of 32 streams) trained from each seed (initial weights and batch
    order) with each label smoothing ``epsilon`` in the loss from the first step.

    Returns one dict per run: ``epsilon``, ``seed``, ``val_loss`` (the plain completion loss on
    the 2,000 held-out streams), ``completion_calibration``'s numbers on them, and ``exact``
    (greedy exact match on the 2,000 held-out dates).
    """
    check_instance("epsilons", epsilons, (list, tuple), "a list of numbers in [0, 1)")
    check_instance("seeds", seeds, (list, tuple), "a list of ints")
    train_pairs, val_pairs = date_datasets(n_train=12_800, n_val=2_000, seed=0)
    vocab = completion_vocab(train_pairs)
    val_loader = DataLoader(CompletionDataset(val_pairs, vocab), batch_size=500, collate_fn=completion_collate)
    runs = []
    for seed in seeds:
        for epsilon in epsilons:
            model = train_from_scratch(seed, train_pairs, vocab, epsilon, n_epochs, device)
            with torch.no_grad():
                val_loss = sum(completion_loss(model(x.to(device)), y.to(device)).item() * len(x)
                               for x, y in val_loader) / len(val_pairs)
            predictions = complete_dates(model, [text for text, _ in val_pairs], vocab)
            exact = sum(p == iso for p, (_, iso) in zip(predictions, val_pairs)) / len(val_pairs)
            runs.append({"epsilon": epsilon, "seed": seed, "val_loss": val_loss,
                         **completion_calibration(model, vocab, val_pairs), "exact": exact})
    return runs


def train_from_scratch(seed, train_pairs, vocab, epsilon=0.0, n_epochs=3, device="cpu"):
    """Chapter 09's model trained with its recipe from ``seed`` (initial weights and batch order) on
    ``train_pairs``, label smoothing ``epsilon`` in the loss from the first step; returned in eval mode."""
    train_loader = DataLoader(CompletionDataset(train_pairs, vocab), batch_size=32, shuffle=True,
                              collate_fn=completion_collate, generator=torch.Generator())
    total_steps, warmup_steps = n_epochs * len(train_loader), 100
    torch.manual_seed(seed)
    model = DecoderOnlyTransformer(len(vocab), d_model=64, n_heads=4, ff_units=128, n_layers=2, dropout=0.0,
                                   max_len=48, tie_weights=False, embedding_std=0.3)
    optimizer = torch.optim.Adam(model.parameters(), lr=7e-3, fused=True)
    trainer = StepByStep(model, _smoothed_loss(epsilon), optimizer, device=device)
    trainer.set_loaders(train_loader)
    trainer.set_lr_scheduler(linear_ramps(optimizer, warmup_steps, total_steps), interval="batch")
    trainer.set_clip_grad_norm(1.0)
    trainer.train(n_epochs, seed=seed, progress=False)
    return model.eval()


def load_smoothing_results(path=RESULTS_FILE):
    """The committed runs: ``{epsilon: [run, ...]}`` in seed order (each run a dict as
    ``smoothing_from_scratch`` returns)."""
    runs = json.loads(Path(path).read_text())["runs"]
    results = {}
    for run in runs:
        results.setdefault(run["epsilon"], []).append(run)
    return {epsilon: sorted(seed_runs, key=lambda run: run["seed"]) for epsilon, seed_runs in results.items()}


if __name__ == "__main__":
    with torch_threads(1):
        computed = smoothing_from_scratch()
    RESULTS_FILE.write_text(json.dumps({
        "written_by": "python -m stepbystep.experiments.label_smoothing",
        "torch": torch.__version__.split("+")[0], "device": "cpu", "threads": 1,
        "runs": computed}, indent=1) + "\n")
    print(f"wrote {len(computed)} runs to {RESULTS_FILE}")
