"""The one training recipe chapter 17's experiments share: a ``DecoderConfig`` built under a seed,
Adam at a constant learning rate (no warm-up: the setting where attention logits can run away),
``StepByStep.train_steps`` over batches drawn in advance from a seeded generator, one loss per
step kept. A loss that stops being finite ends the run: it diverged."""
import json
import statistics
from pathlib import Path

import torch

from ...checks import check_positive_int, check_positive_number
from ...devices import torch_threads
from ...models.gpt.model import completion_loss
from ...seeding import get_rng_state
from ...training import Callback, StepByStep

__all__ = ["RESULTS_DIR", "StepLosses", "cache_bytes_held", "run_at", "load_study", "median", "spread", "thread_count", "train_decoder",
           "write_study"]

RESULTS_DIR = Path(__file__).parent.parent / "results"


class StepLosses(Callback):
    """Each optimizer step's training loss, in ``losses``."""

    def __init__(self):
        self.losses = []

    def on_batch_end(self, trainer, epoch, batch_index, loss):
        self.losses.append(loss)


def train_decoder(config, batches, seed, lr, loss_fn=None, callbacks=()):
    """``config.build()`` under ``torch.manual_seed(seed)``, trained on ``batches`` (a list of ``(x, y)``,
    one per step) by Adam at ``lr`` through ``StepByStep.train_steps``. ``loss_fn(model)``: the loss
    for the trainer (``None``: ``completion_loss``). Returns the model (eval mode), the per-step
    losses (a list) and whether the loss became non-finite (training stopped there)."""
    check_positive_number("lr", lr)
    check_positive_int("steps", len(batches))
    torch.manual_seed(seed)
    model = config.build()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    record = StepLosses()
    trainer = StepByStep(model, completion_loss if loss_fn is None else loss_fn(model), optimizer, device="cpu",
                         callbacks=[record, *callbacks])
    trainer.set_loaders(batches)
    trainer.rng_state = get_rng_state()  # no reseeding: the batches are drawn already
    try:
        trainer.train_steps(len(batches), progress=False)
        diverged = False
    except FloatingPointError:
        diverged = True
    model.eval()
    return model, record.losses, diverged


def median(values):
    """The median of numbers (the mean of the two middle ones for an even count)."""
    return statistics.median(float(v) for v in values)


def spread(values):
    """``(median, min, max)`` of numbers, for tables and claims."""
    values = [float(v) for v in values]
    return statistics.median(values), min(values), max(values)


def thread_count(default_threads):
    """The thread count a study runs at: 1, or ``None`` (PyTorch's default) with ``default_threads``."""
    return None if default_threads else 1


def write_study(study, name, default_threads=False):
    """Write ``study`` (a JSON-ready dict) to ``results/<name>.json`` (``_default_threads`` added at
    PyTorch's default thread count); returns the path."""
    path = RESULTS_DIR / f"{name}{'_default_threads' if default_threads else ''}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(study, indent=1) + "\n")
    return path


def load_study(name, default_threads=False):
    """The stored study ``results/<name>.json`` (or its ``_default_threads`` twin), as a dict."""
    return json.loads((RESULTS_DIR / f"{name}{'_default_threads' if default_threads else ''}.json").read_text())


def run_at(threads, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` at ``threads`` PyTorch threads (``None``: as it is)."""
    with torch_threads(threads):
        return fn(*args, **kwargs)


def cache_bytes_held(cache):
    """The bytes a ``KVCache`` holds now, every layer's keys and values (latent attention: its latents
    and rotated keys)."""
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
