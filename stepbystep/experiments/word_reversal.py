"""Chapter 07's word model, and its padding-mask comparison over seeds.

``word_trainer`` builds the chapter's word-reversal model and trainer; ``padding_exact`` decodes the
validation words under three paddings. ``python -m stepbystep.experiments.word_reversal`` trains the
model with and without padding masks on ``SEEDS`` (one thread, as the chapter runs) and writes the
exact match of each under each padding to ``results/padding_masks.json``; ``load_padding_seeds``
reads them back as ``{"with padding masks" | "without": tensor (seeds, 3)}``.
"""
import functools
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from ..data import Seq2SeqDataset, Vocab, pad_collate, reverse_words_dataset, train_val_split
from ..data.special_tokens import PAD
from ..devices import environment, torch_threads
from ..expect import Claim
from ..models import SequenceCrossEntropy, TokenTransformer, greedy_decode, sequence_accuracy
from ..training import StepByStep
from ..training.schedules import warmup_cosine

__all__ = ["PADDINGS", "SEEDS", "RESULTS", "word_data", "word_trainer", "padding_exact", "padding_seeds",
           "load_padding_seeds", "padding_claims"]

PADDINGS = ("as in training", "alone", "extra")
SEEDS = (0, 1, 2, 3, 4)  # the chapter's own run uses the trainer's default seed, 42
RESULTS = Path(__file__).parent / "results" / "padding_masks.json"


@functools.lru_cache(maxsize=1)
def word_data():
    """The chapter's words: ``(vocab, val_pairs, train_set, val_set)``, 4,500 and 500 random words of
    4 to 12 letters and their reversals."""
    train, val = train_val_split(reverse_words_dataset(5000, min_len=4, max_len=12, seed=0), val_fraction=0.1, seed=0)
    vocab = Vocab.from_texts([source for source, _ in train])
    return vocab, val, Seq2SeqDataset(train, vocab, vocab), Seq2SeqDataset(val, vocab, vocab)


def word_trainer(pad_id=PAD, lr=6e-3, warmup=True, seed=42, n_epochs=3, warmup_steps=30):
    """The chapter's word model and its trainer, seeded by ``seed``: d_model 64, 4 heads, one layer in
    each stack, embeddings from N(0, 0.3²), padding masks on (``pad_id=None``: off), Adam at ``lr``.
    The schedule is ``warmup_cosine`` over ``n_epochs`` epochs of 64 words, stepped after every batch:
    a rise over ``warmup_steps`` steps (``warmup=False``: one step, i.e. none), then a cosine to zero."""
    vocab, _, train_set, val_set = word_data()
    torch.manual_seed(seed)
    model = TokenTransformer(len(vocab), len(vocab), d_model=64, n_heads=4, ff_units=128, n_layers=1,
                             dropout=0.0, max_len=16, pad_id=pad_id, embedding_std=0.3)
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, collate_fn=pad_collate,
                              generator=torch.Generator().manual_seed(seed))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    trainer = StepByStep(model, SequenceCrossEntropy(ignore_index=vocab.pad_id), optimizer)
    trainer.set_lr_scheduler(warmup_cosine(optimizer, warmup_steps if warmup else 1, n_epochs * len(train_loader)),
                             interval="batch")
    trainer.set_loaders(train_loader, DataLoader(val_set, batch_size=len(val_set), collate_fn=pad_collate))
    return trainer


def padding_exact(model, padding):
    """Greedy exact match of ``model`` on the validation words, their sources padded as ``padding`` says:
    ``"as in training"`` (all 500 in one batch, padded to the longest), ``"alone"`` (no pads: words of
    one length batched together) or ``"extra"`` (that batch with 3 more pads after every source)."""
    if padding not in PADDINGS:
        raise ValueError(f"padding should be one of {PADDINGS}, got {padding!r}")
    vocab, val, _, val_set = word_data()
    device = next(model.parameters()).device
    lengths = [len(source) for source, _ in val]
    if padding == "alone":
        groups = [[i for i, length in enumerate(lengths) if length == n] for n in sorted(set(lengths))]
    else:
        groups = [list(range(len(val)))]
    correct = 0.0
    for indices in groups:
        (source, _), target_out = pad_collate([val_set[i] for i in indices])  # (n, L_s), (n, L_t)
        if padding == "extra":
            source = F.pad(source, (0, 3), value=vocab.pad_id)  # (n, L_s + 3)
        predicted = greedy_decode(model, source.to(device), vocab.sos_id, vocab.eos_id, max_new_tokens=13)
        correct += sequence_accuracy(predicted, target_out.to(device)) * len(indices)
    return correct / len(val)


def padding_seeds(seeds=SEEDS):
    """Train the word model with and without padding masks from each of ``seeds`` (3 epochs, one thread)
    and score each under the three paddings: ``{"seeds", "torch", "results": {name: [[exact] * 3, ...]}}``."""
    results = {"with padding masks": [], "without": []}
    with torch_threads(1):
        for seed in seeds:
            for name, pad_id in (("with padding masks", PAD), ("without", None)):
                trainer = word_trainer(pad_id=pad_id, seed=seed)
                trainer.train(3, seed=seed, progress=False)
                results[name].append([padding_exact(trainer.model, padding) for padding in PADDINGS])
        setting = environment()
    return {"seeds": list(seeds), "paddings": list(PADDINGS), "torch": torch.__version__.split("+")[0],
            "environment": setting, "results": results}


def load_padding_seeds(path=RESULTS):
    """The stored study: ``(seeds, {name: tensor (seeds, 3)})``, exact match as in training, alone, extra."""
    stored = json.loads(Path(path).read_text())
    return tuple(stored["seeds"]), {name: torch.tensor(runs) for name, runs in stored["results"].items()}


def padding_claims(results):
    """What chapter 07 says about the stored study, ``results`` as ``load_padding_seeds`` returns them."""
    masked, unmasked = results["with padding masks"], results["without"]  # (seeds, 3) each
    n = len(masked)
    spread = masked.max(dim=1).values - masked.min(dim=1).values  # (seeds,)
    drop = unmasked[:, 0] - unmasked[:, 1:].max(dim=1).values  # (seeds,): as in training minus the better other
    return [
        Claim(bool((spread <= 0.004).all()), f"with masks, the three paddings score within 0.4 points on all {n} seeds",
              spread),
        Claim(bool((unmasked[:, 0] >= 0.95).all()),
              f"without masks, padded as in training, at least 95% exact on all {n} seeds", unmasked[:, 0]),
        Claim(bool((drop > 0.2).all()), f"without masks, alone or with extra pads, more than 20 points fewer on all {n}",
              drop),
    ]


if __name__ == "__main__":
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(padding_seeds()) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")
