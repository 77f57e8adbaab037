"""Chapter 04's six training settings repeated over 25 seeds, too long to run in the chapter.

``norm_placement_seed_runs`` trains each setting of ``SETTINGS`` (norm-first and norm-last, with
and without warm-up, and the control: norm-last without warm-up at smaller rates) from each seed
with ``layer_gradient_norms`` and keeps what the chapter reads of a run: its final loss, the largest
final gradient of layers 1-3 and, for norm-first, how far apart its layers' gradients ever were.
``python -m stepbystep.experiments.norm_placement_seeds`` writes them to
``results/norm_placement_seeds.json``; ``load_norm_placement_seeds`` reads them back, and
``stored_seed_claims`` is what the chapter says about them.
"""
import json
import statistics
from pathlib import Path

import numpy as np
import torch

from stepbystep.devices import environment
from stepbystep.expect import Claim

from .gradient_norms import layer_gradient_norms

__all__ = ["SETTINGS", "SEEDS", "RESULTS", "setting_label", "norm_placement_seed_runs", "norm_placement_seed_study",
           "load_norm_placement_seeds", "stored_seed_claims"]

SETTINGS = ((True, 0, 0.03), (True, 20, 0.03), (False, 0, 0.03), (False, 20, 0.03),
            (False, 0, 0.01), (False, 0, 0.003))  # (norm_first, warmup_steps, lr): the chapter's section 9
SEEDS = tuple(range(25))  # the chapter's five seeds, 0 to 4, and twenty more
RESULTS = Path(__file__).parent / "results" / "norm_placement_seeds.json"
FIRST_FLAT, FIRST_WARM = "norm-first, no warm-up", "norm-first, warm-up 20 steps"
LAST_FLAT, LAST_WARM = "norm-last, no warm-up", "norm-last, warm-up 20 steps"


def setting_label(norm_first, warmup_steps, lr):
    """The chapter's name for a setting: the run's label, and the rate when it is not the full 0.03."""
    placement = "norm-first" if norm_first else "norm-last"
    warmup = f"warm-up {warmup_steps} steps" if warmup_steps else "no warm-up"
    return f"{placement}, {warmup}" + ("" if lr == 0.03 else f", lr {lr}")


def norm_placement_seed_runs(seeds=SEEDS, steps=35, settings=SETTINGS):
    """``{label: [{"seed", "final_loss", "lower_gradient", "step_spread"}, one per seed]}``.

    ``lower_gradient``: the largest of layers 1-3's gradient norms at the last step;
    ``step_spread``: the largest, over the steps, of (largest / smallest layer gradient).
    """
    study = {}
    for norm_first, warmup_steps, lr in settings:
        runs = []
        for seed in seeds:
            run = layer_gradient_norms(6, norm_first, steps=steps, lr=lr, warmup_steps=warmup_steps, seed=seed)
            runs.append({"seed": seed, "final_loss": float(run.losses[-1]),
                         "lower_gradient": float(run.norms[-1, :3].max()),
                         "step_spread": float((run.norms.max(axis=1) / run.norms.min(axis=1)).max())})
        study[setting_label(norm_first, warmup_steps, lr)] = runs
    return study


def norm_placement_seed_study(seeds=SEEDS, steps=35):
    """``norm_placement_seed_runs`` with how and where it ran: a dict ready for JSON."""
    return {"command": "python -m stepbystep.experiments.norm_placement_seeds", "steps": steps,
            "environment": environment(), "settings": norm_placement_seed_runs(seeds, steps)}


def load_norm_placement_seeds(path=RESULTS):
    """The stored study: ``{"command", "steps", "environment", "settings": {label: [one dict per seed]}}``."""
    return json.loads(Path(path).read_text())


def _values(settings, label, key):
    return np.array([run[key] for run in settings[label]])


def stored_seed_claims(settings):
    """What chapter 04 says about the stored runs (``study["settings"]``), for ``expect_all``."""
    final = {label: _values(settings, label, "final_loss") for label in settings}
    lower = {label: _values(settings, label, "lower_gradient") for label in settings}
    controls = [label for label in settings if label.startswith(LAST_FLAT + ", lr ")]
    n = len(final[LAST_FLAT])
    stuck, warm_trained = int((final[LAST_FLAT] > 0.2).sum()), int((final[LAST_WARM] < 0.05).sum())
    first_spread = max(_values(settings, label, "step_spread").max() for label in (FIRST_FLAT, FIRST_WARM))
    median = {label: statistics.median(values) for label, values in final.items()}
    stuck_lower = lower[LAST_FLAT][final[LAST_FLAT] > 0.2]  # (stuck seeds,)
    return [
        Claim(all((final[label] < 0.05).all() for label in (FIRST_FLAT, FIRST_WARM)),
              f"norm-first, with or without warm-up, ends below 0.05 in all {n} seeds",
              {label: final[label].max() for label in (FIRST_FLAT, FIRST_WARM)}),
        Claim(first_spread < 10, "and at every step of every seed its six layers' gradients stay within a factor of 10",
              first_spread),
        Claim(stuck == n - 2, f"norm-last without warm-up ends above 0.2 in {n - 2} seeds of {n}", final[LAST_FLAT]),
        Claim(warm_trained == n - 2 and (final[LAST_WARM] < 0.25).all(),
              f"norm-last with warm-up ends below 0.05 in {n - 2} seeds of {n}, and below 0.25 in all",
              final[LAST_WARM]),
        Claim(len(controls) == 2 and all((final[label] < 0.05).all() for label in controls),
              f"the control, norm-last without warm-up at lr 0.01 or 0.003, ends below 0.05 in all {n} seeds",
              {label: final[label].max() for label in controls}),
        Claim(all(median[LAST_FLAT] > 10 * median[label] for label in settings if label != LAST_FLAT),
              "the median final loss of norm-last without warm-up is over ten times every other setting's", median),
        Claim((stuck_lower < 1e-3).sum() >= len(stuck_lower) / 3 and (stuck_lower > 1e-2).sum() >= len(stuck_lower) / 5,
              "of its stuck runs, at least a third end with layers 1-3's gradient below 1e-3, and at least a fifth "
              "above 1e-2", {"below 1e-3": int((stuck_lower < 1e-3).sum()), "above 1e-2": int((stuck_lower > 1e-2).sum()),
                             "stuck runs": len(stuck_lower)}),
    ]


if __name__ == "__main__":
    torch.set_num_threads(1)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(norm_placement_seed_study(), indent=1) + "\n")
    print(f"wrote {RESULTS}")
