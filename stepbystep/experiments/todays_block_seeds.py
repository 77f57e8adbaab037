"""Chapter 12's block study over ten seeds, too long to run in the chapter.

Every variant of ``block_configs`` trained with ``train_block``'s recipe on chapter 09's dates for
``SEEDS``; ``python -m stepbystep.experiments.todays_block_seeds`` writes the results to
``results/todays_block_seeds.json`` (one thread, as ``block_study`` runs), and
``load_block_seeds`` reads them back as ``block_study`` returns them: ``{name: tensor (seeds, 2)}``,
the validation loss and the token accuracy of each seed. Thirty more seeds, ``FRESH_SEEDS`` (10 to 39),
of every variant (``python -m stepbystep.experiments.todays_block_seeds fresh`` writes
``results/todays_block_fresh_seeds.json``, with the environment it ran in) test the claims on seeds
they were not read from.
"""
import json
import sys
from pathlib import Path

import torch

from ..devices import environment
from .todays_block import PAIRS, block_configs, block_study, date_streams

__all__ = ["SEEDS", "RESULTS", "FRESH_SEEDS", "FRESH_RESULTS", "PAIRED_VARIANTS", "block_seeds", "load_block_seeds",
           "load_block_environment", "to_json"]

SEEDS = tuple(range(10))
RESULTS = Path(__file__).parent / "results" / "todays_block_seeds.json"
FRESH_SEEDS = tuple(range(10, 40))
FRESH_RESULTS = Path(__file__).parent / "results" / "todays_block_fresh_seeds.json"
PAIRED_VARIANTS = tuple(dict.fromkeys(name for pair in PAIRS.values() for name in pair))  # in PAIRS' order


def block_seeds(seeds=SEEDS, names=None):
    """Train the variants ``names`` (default: all of ``block_configs``) for ``seeds``: a dict ready for
    JSON, ``{"seeds", "steps", "torch", "results": {name: [[loss, accuracy], ...]}}``."""
    vocab, train, val = date_streams()
    configs = block_configs(len(vocab))
    if names is not None:
        configs = {name: configs[name] for name in names}
    results = block_study(configs, seeds, train, val)  # {name: (seeds, 2)}
    setting = dict(environment(), threads=1)  # block_study trains on one thread
    return {"seeds": list(seeds), "steps": 100, "torch": torch.__version__, "environment": setting,
            "results": {name: runs.tolist() for name, runs in results.items()}}


def load_block_seeds(path=RESULTS):
    """The stored study: ``(seeds, {name: tensor (seeds, 2)})``."""
    stored = json.loads(Path(path).read_text())
    return tuple(stored["seeds"]), {name: torch.tensor(runs) for name, runs in stored["results"].items()}


def load_block_environment(path=FRESH_RESULTS):
    """Where a stored study ran: ``environment()``'s dict (``None`` for the ten seeds of ``RESULTS``,
    which predate it: an AVX-512 machine, one thread)."""
    return json.loads(Path(path).read_text()).get("environment")


def to_json(study):
    """``study`` as JSON text, one line per variant."""
    head = json.dumps({key: value for key, value in study.items() if key != "results"})[:-1]
    rows = ",\n".join(f"  {json.dumps(name)}: {json.dumps(runs)}" for name, runs in study["results"].items())
    return f'{head}, "results": {{\n{rows}\n}}}}\n'


if __name__ == "__main__":
    fresh = sys.argv[1:] == ["fresh"]  # every variant, on FRESH_SEEDS
    path = FRESH_RESULTS if fresh else RESULTS
    path.parent.mkdir(exist_ok=True)
    path.write_text(to_json(block_seeds(FRESH_SEEDS) if fresh else block_seeds()))
    print(f"wrote {path}")
