"""Chapter 09's sampling comparison over training seeds: does a filter's gain hold for other writers?

For each training seed, the chapter's whole recipe runs again: the model from scratch
(``train_from_scratch``, three epochs), then the writer (a copy fine-tuned for 120 steps with the
loss on every token), and every sampling setting draws 8 streams per partial text with each
generator seed. Too long for the chapter, so ``python -m stepbystep.experiments.writer_seeds``
writes ``results/writer_seeds.json`` (CPU, one thread) and a test recomputes one training seed.
"""
import copy
import json
import statistics
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ..data.date_completions import (
    CompletionDataset,
    completion_collate,
    completion_vocab,
    is_consistent,
    is_date_shaped,
    prompt_ids,
    split_stream,
)
from ..data.dates import date_datasets
from ..data.special_tokens import EOS
from ..devices import environment, model_device, torch_threads
from ..models.gpt.generation import generate
from ..models.gpt.model import completion_loss
from ..training import StepByStep
from ..training.schedules import linear_ramps
from .date_completion import complete_dates
from .label_smoothing import train_from_scratch

__all__ = ["SEEDS", "SAMPLE_SEEDS", "PARTIAL_TEXTS", "SETTINGS", "RESULTS", "judge_streams", "sample_counts",
           "fine_tune_writer", "writer_seed_study", "load_writer_seeds", "median_right"]

SEEDS = (0, 1, 2, 3, 4)
SAMPLE_SEEDS = (0, 1, 2, 3, 4)
PARTIAL_TEXTS = ("March", "Tue", "21", "1999/", "5 APRIL", "Saturday", "12.", "Oct")
SETTINGS = {"T = 0.5": {"temperature": 0.5}, "T = 1.0": {"temperature": 1.0}, "T = 1.5": {"temperature": 1.5},
            "T = 1.5, top-p 0.9": {"temperature": 1.5, "top_p": 0.9},
            "T = 1.5, top-k 3": {"temperature": 1.5, "top_k": 3}}
RESULTS = Path(__file__).parent / "results" / "writer_seeds.json"


def judge_streams(streams, vocab):
    """``(stream text, date-shaped, right)`` for every generated row of ``streams`` ``(N, L)``."""
    results = []
    for row in streams:
        text, iso, _ = split_stream(row, vocab)
        date_shaped = is_date_shaped(row, vocab)
        results.append((f"{text}={iso}", date_shaped, date_shaped and is_consistent(text, iso)))
    return results


def sample_counts(writer, prompts, vocab, sample_seeds=SAMPLE_SEEDS, n_samples=8, **options):
    """``n_samples`` streams per prompt with each generator seed: ``(date_shaped, right, first)``, a
    count per seed of each, and the first seed's judged streams."""
    date_shaped, right, first = [], [], None
    for seed in sample_seeds:
        generator = torch.Generator(device=model_device(writer)).manual_seed(seed)
        samples = judge_streams(generate(writer, list(prompts) * n_samples, 38, eos_id=EOS, generator=generator,
                                         **options), vocab)
        date_shaped.append(sum(shaped for _, shaped, _ in samples))
        right.append(sum(good for _, _, good in samples))
        first = first or samples
    return date_shaped, right, first


def fine_tune_writer(model, train_pairs, vocab, seed, n_pairs=3_840, lr=5e-3, warmup_steps=10):
    """The chapter's writer: a copy of ``model`` trained one epoch (120 steps of 32) on the first
    ``n_pairs`` pairs with the loss on every token, warm-up then linear decay, clipping at 1."""
    writer = copy.deepcopy(model)
    streams = CompletionDataset(train_pairs[:n_pairs], vocab, completion_only=False)
    loader = DataLoader(streams, batch_size=32, shuffle=True, collate_fn=completion_collate,
                        generator=torch.Generator())
    optimizer = torch.optim.Adam(writer.parameters(), lr=lr, fused=True)
    trainer = StepByStep(writer, completion_loss, optimizer, device=model_device(writer))
    trainer.set_loaders(loader)
    trainer.set_lr_scheduler(linear_ramps(optimizer, warmup_steps, len(loader)), interval="batch")
    trainer.set_clip_grad_norm(1.0)
    trainer.train(1, seed=seed, progress=False)
    return writer.eval()


def writer_seed_study(seeds=SEEDS, sample_seeds=SAMPLE_SEEDS, device="cpu"):
    """For each training seed: the model's greedy exact match on the 2,000 held-out dates, the
    writer's greedy streams (8, one per partial text) and each setting's counts per generator seed
    (64 streams each). A dict ready for JSON."""
    train_pairs, val_pairs = date_datasets(n_train=12_800, n_val=2_000, seed=0)
    vocab = completion_vocab(train_pairs)
    prompts = [prompt_ids(text, vocab, separator=False) for text in PARTIAL_TEXTS]
    runs = []
    for seed in seeds:
        model = train_from_scratch(seed, train_pairs, vocab, device=device)
        predictions = complete_dates(model, [text for text, _ in val_pairs], vocab)
        exact = sum(p == iso for p, (_, iso) in zip(predictions, val_pairs)) / len(val_pairs)
        writer = fine_tune_writer(model, train_pairs, vocab, seed)
        greedy = judge_streams(generate(writer, prompts, 38, temperature=0, eos_id=EOS), vocab)
        settings = {}
        for name, options in SETTINGS.items():
            date_shaped, right, _ = sample_counts(writer, prompts, vocab, sample_seeds, **options)
            settings[name] = {"date_shaped": date_shaped, "right": right}
        runs.append({"seed": seed, "exact": exact, "greedy_date_shaped": sum(s for _, s, _ in greedy),
                     "greedy_right": sum(r for _, _, r in greedy), "settings": settings})
    return {"written_by": "python -m stepbystep.experiments.writer_seeds", "torch": torch.__version__.split("+")[0],
            "environment": environment(), "device": device, "threads": torch.get_num_threads(), "sample_seeds": list(sample_seeds),
            "streams_per_seed": len(prompts) * 8, "runs": runs}


def load_writer_seeds(path=RESULTS):
    """The stored study, as ``writer_seed_study`` returns it."""
    return json.loads(Path(path).read_text())


def median_right(run, setting):
    """The median over the generator seeds of a training seed's right streams with ``setting``."""
    return statistics.median(run["settings"][setting]["right"])


if __name__ == "__main__":
    with torch_threads(1):
        study = writer_seed_study()
    RESULTS.write_text(json.dumps(study, indent=1) + "\n")
    print(f"wrote {len(study['runs'])} training seeds to {RESULTS}")
