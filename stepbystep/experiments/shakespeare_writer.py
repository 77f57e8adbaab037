"""Chapter 15's trained writer: GPT-2's block at a larger size than the chapter's live model,
trained longer, on the same 37 plays read with the same BPE tokens (1,024 ids), saved in one small
file that the chapter loads.

``python -m stepbystep.experiments.shakespeare_writer`` trains it, seeded, on one thread (about 8
CPU-minutes) and writes ``results/shakespeare_writer.pt``; ``load_writer`` rebuilds the model and
its tokenizer. The file holds only tensors, numbers, strings and containers, so that
``torch.load(path, weights_only=True)`` reads it: the weights in bfloat16 (half the bytes of
float32; read back as float32), the model's ``DecoderConfig`` as a dict, the tokenizer's merges
and pattern, the recipe and seed, the loss of every step, and the held-out bits per byte of the
model **as loaded** (its bfloat16 weights read back), so that anyone can recompute that number.
"""
import dataclasses
import time
from pathlib import Path

import torch

from ..checks import check_positive_int
from ..data import BytePairTokenizer
from ..devices import torch_threads
from ..expect import Claim
from ..models.gpt.config import DecoderConfig
from ..serialization import atomic_save, safe_load
from .subword_model import bits_per_byte, lm_config, split_plays, train_lm

__all__ = ["CHECKPOINT", "FORMAT", "VERSION", "WRITER", "load_writer", "train_writer", "writer_claims",
           "writer_writing_claims"]

FORMAT = "stepbystep.shakespeare_writer"
VERSION = 1
CHECKPOINT = Path(__file__).parent / "results" / "shakespeare_writer.pt"
# the model's size and the recipe of train_lm; the chapter's live model: d_model 64, 2 layers, 64 positions, 300 steps
WRITER = dict(vocab_size=1024, d_model=128, n_heads=4, n_layers=4, context=128, steps=2000, batch_size=16, lr=2e-3,
              warmup=100, seed=0)
COMMAND = "python -m stepbystep.experiments.shakespeare_writer"


def _bfloat16(state):
    """``state`` (a state dict) with its floating tensors in bfloat16; tensors that share memory
    (the tied embedding and output layer) stay one tensor, stored once."""
    done = {}
    for name, tensor in state.items():
        key = (tensor.data_ptr(), tensor.shape)
        if key not in done:
            done[key] = tensor.to(torch.bfloat16) if tensor.is_floating_point() else tensor.clone()
        state[name] = done[key]
    return state


def _rebuild(config, weights):
    """The model of ``config`` (a dict of ``DecoderConfig``'s fields) with ``weights`` read back as
    float32, in eval mode."""
    model = DecoderConfig(**config).build()
    model.load_state_dict({name: w.float() if w.is_floating_point() else w for name, w in weights.items()})
    return model.eval()


def train_writer(text=None, held_out=None, **recipe):
    """Train the writer and return the checkpoint, a dict ready for ``torch.save``: a BPE tokenizer of
    ``vocab_size`` ids trained on ``text`` (default: the 37 training plays), the model
    (``lm_config`` at the recipe's sizes) trained by ``train_lm`` with the recipe's seed on one thread,
    and its bits per byte on ``held_out`` (default: *The Tempest*) after its weights went through
    bfloat16. ``recipe`` overrides ``WRITER`` (a test trains it at toy size)."""
    recipe = {**WRITER, **recipe}
    for name in ("vocab_size", "d_model", "n_heads", "n_layers", "context", "steps", "batch_size", "warmup"):
        check_positive_int(name, recipe[name])
    if (text is None) != (held_out is None):
        raise ValueError("give both text and held_out, or neither (the chapter's split: 37 plays, The Tempest)")
    if text is None:
        text, held_out = split_plays()
    with torch_threads(1):
        start = time.process_time()
        tokenizer = BytePairTokenizer.train(text, recipe["vocab_size"])
        ids = torch.tensor(tokenizer.encode(text))  # (T,)
        config = lm_config(tokenizer.vocab_size, context=recipe["context"], d_model=recipe["d_model"],
                           n_heads=recipe["n_heads"], n_layers=recipe["n_layers"])
        model, losses = train_lm(config, ids, recipe["seed"], steps=recipe["steps"], batch_size=recipe["batch_size"],
                                 context=recipe["context"], lr=recipe["lr"], warmup=recipe["warmup"])
        weights = _bfloat16(model.state_dict())
        config = dataclasses.asdict(config)
        bpb = bits_per_byte(_rebuild(config, weights), tokenizer, held_out, recipe["context"])
        seconds = time.process_time() - start
    return {"format": FORMAT, "version": VERSION, "command": COMMAND, "recipe": recipe, "config": config,
            "weights": weights, "merges": [list(pair) for pair in tokenizer.merges], "pattern": tokenizer.pattern,
            "losses": losses, "held_out_bytes": len(held_out.encode("utf-8")), "bits_per_byte": bpb,
            "cpu_seconds": seconds, "torch": str(torch.__version__)}


def load_writer(path=CHECKPOINT):
    """``(model, tokenizer, checkpoint)`` from a file ``train_writer``'s checkpoint was saved to: the
    model in eval mode on the CPU with float32 weights, its ``BytePairTokenizer``, and the whole dict
    (recipe, losses, stored bits per byte). Read with ``weights_only=True``: a file holding anything
    but tensors, numbers, strings and containers is refused; a file of another kind or another
    format version is a ValueError that says so."""
    checkpoint = safe_load(path, map_location="cpu")
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        found = checkpoint.get("format") if isinstance(checkpoint, dict) else type(checkpoint).__name__
        raise ValueError(f"{str(path)!r} is not a Shakespeare writer checkpoint: expected format {FORMAT!r}, "
                         f"found {found!r}; make one with `{COMMAND}`")
    if checkpoint.get("version") != VERSION:
        raise ValueError(f"{str(path)!r} is a writer checkpoint of format version {checkpoint.get('version')!r}, "
                         f"and this package reads version {VERSION}; remake it with `{COMMAND}`")
    tokenizer = BytePairTokenizer([tuple(pair) for pair in checkpoint["merges"]], pattern=checkpoint["pattern"])
    return _rebuild(checkpoint["config"], checkpoint["weights"]), tokenizer, checkpoint


def writer_claims(writer, live, stored_bpe, bigram_table):
    """What the chapter says of the writer's held-out bits per byte ``writer``: below the BPE bigram
    table by more than 0.2, and below the ``live`` BPE model's and every stored BPE model's
    (``stored_bpe``, ``(seeds,)``) by more than 0.5."""
    others = torch.cat([torch.as_tensor(stored_bpe, dtype=torch.float64), torch.tensor([live], dtype=torch.float64)])
    return [
        Claim(writer < bigram_table - 0.2, "the writer is below the table of BPE pairs by more than 0.2 bits per byte",
              bigram_table - writer),
        Claim(bool((others - writer > 0.5).all()),
              "the writer is below the live BPE model and every stored one by more than 0.5 bits per byte",
              others - writer),
    ]


def writer_writing_claims(shares):
    """What the chapter says of the writer's samples, over generator seeds: ``shares[writer]`` is
    ``{"words": (seeds,), "pairs": (seeds,)}``, the ``known_share`` and ``known_pair_share`` of its
    texts, beside ``"live"`` (the live model's) and ``"unigram"`` (``unigram_writes``'), on the same
    seeds. In every seed the writer writes a larger share of the plays' words than the frequency
    sampler, and more than 1.5 times the share of the plays' word pairs of either other writer."""
    writer, live, unigram = (shares[name] for name in ("writer", "live", "unigram"))
    return [
        Claim(bool((writer["words"] > unigram["words"]).all()),
              "in every seed the writer writes more words of the plays than the frequency sampler",
              writer["words"] - unigram["words"]),
        Claim(bool((writer["pairs"] > 1.5 * unigram["pairs"]).all() and (writer["pairs"] > 1.5 * live["pairs"]).all()),
              "in every seed the writer's share of word pairs of the plays is over 1.5 times the frequency "
              "sampler's and the live model's", (writer["pairs"], live["pairs"], unigram["pairs"])),
    ]


if __name__ == "__main__":
    checkpoint = train_writer()
    atomic_save(checkpoint, CHECKPOINT)
    print(f"wrote {CHECKPOINT}: {CHECKPOINT.stat().st_size / 1e6:.2f} MB, {checkpoint['cpu_seconds'] / 60:.1f} "
          f"CPU-minutes, {checkpoint['bits_per_byte']:.3f} bits per byte on the held-out play")
