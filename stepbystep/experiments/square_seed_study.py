"""Chapter 05's run repeated over nine seeds, too long to run in the chapter.

``square_seed_spread`` for ``SEEDS`` (the chapter's own run, seed 42, then 0 to 7);
``python -m stepbystep.experiments.square_seed_study`` writes the results to
``results/square_seed_study.json`` on one thread, as the chapter's committed outputs are computed,
with the machine that computed them, and ``load_square_seed_study`` reads them back.
``training_spread_claims``, ``spike_spread_claims``, ``attention_spread_claims`` and
``heldout_spread_claims`` are what chapter 05 says about the runs.
"""
import json
import statistics
from pathlib import Path

import torch

from stepbystep.devices import environment
from stepbystep.expect import Claim

from .square_baselines import square_seed_spread

__all__ = ["SEEDS", "RESULTS", "square_seed_study", "load_square_seed_study", "seed_table",
           "training_spread_claims", "spike_spread_claims", "attention_spread_claims", "heldout_spread_claims"]

SEEDS = (42, 0, 1, 2, 3, 4, 5, 6, 7)  # the chapter's run first
RESULTS = Path(__file__).parent / "results" / "square_seed_study.json"


def square_seed_study(seeds=SEEDS, epochs=50):
    """``square_seed_spread(seeds, epochs)`` with the environment it ran in: a dict ready for JSON."""
    return {"command": "python -m stepbystep.experiments.square_seed_study", "epochs": epochs,
            "environment": environment(), "runs": square_seed_spread(seeds, epochs=epochs)}


def load_square_seed_study(path=RESULTS):
    """The stored study: ``{"command", "epochs", "environment", "runs": [one dict per seed]}``."""
    return json.loads(Path(path).read_text())


def _spread(runs, key):
    values = [run[key] for run in runs]
    return min(values), statistics.median(values), max(values)


def seed_table(runs, keys):
    """Text lines: a header of seeds, then one row per key of ``keys`` ``{key: label}``, each run's
    value and the row's median, lowest and highest."""
    lines = [f"{'seed':>26} " + " ".join(f"{run['seed']:>7}" for run in runs) + f" {'median':>7} {'min':>7} {'max':>7}"]
    for key, label in keys.items():
        low, median, high = _spread(runs, key)
        cells = [run[key] for run in runs] + [median, low, high]
        lines.append(f"{label:>26} " + " ".join(f"{value:7.4g}" for value in cells))
    return lines


def training_spread_claims(runs):
    """What chapter 05 says about the training of the runs (``square_seed_spread``'s dicts), for ``expect_all``."""
    low, median, high = _spread(runs, "final_val")
    return [
        Claim(high < 0.04, "every run's final validation loss is below 0.04, the chapter's bound", (low, median, high)),
        Claim(0.0105 <= low and high < 0.0265, "they range from 0.011 to 0.026, to three decimals", (low, high)),
        Claim(all(run["final_val"] < run["first_val"] / 10 for run in runs), "the validation loss falls more than "
              "tenfold from the first epoch to the last in every run",
              [round(run["first_val"] / run["final_val"], 1) for run in runs]),
        Claim(min(run["below"] for run in runs) >= 40, "the validation loss is below the training loss in 40 or more "
              "of the 50 epochs in every run", _spread(runs, "below")),
        Claim(min(run["mode_ratio"] for run in runs) > 1.5, "training mode's mean loss is more than 1.5 times the "
              "eval-mode loss in every run", _spread(runs, "mode_ratio")),
        Claim(max(run["mode_ratio"] for run in runs) > 2 * min(run["mode_ratio"] for run in runs),
              "and the highest of these ratios is more than twice the lowest", _spread(runs, "mode_ratio")),
        Claim(all(run["draws_above"] == 20 for run in runs), "all 20 dropout draws lie above it in every run",
              [run["draws_above"] for run in runs]),
    ]


def spike_spread_claims(runs):
    """What chapter 05 says about the spikes of the runs' validation loss, for ``expect_all``."""
    low, median, high = _spread(runs, "largest_jump")
    doubled = sum(run["jumps_over_2"] > 0 for run in runs)
    return [
        Claim(median > 2 and low > 1.5 and high > 4, "the largest rise of the validation loss from one epoch to the "
              "next is over 2-fold in the median run, over 1.5-fold in every run and over 4-fold in the most jumpy",
              (low, median, high)),
        Claim(len(runs) / 2 < doubled < len(runs), "it more than doubled at some epoch in more than half the runs, "
              "not in all", {"runs": doubled, "of": len(runs)}),
    ]


def heldout_spread_claims(runs, zeros, noise_floor):
    """What chapter 05 says about the runs' test MSE, against predicting zeros (``zeros``, its test MSE)
    and the targets' noise variance ``noise_floor``; each run's test MSE is measured once, after training."""
    low, median, high = _spread(runs, "test_mse")
    beaten = [run["seed"] for run in runs if run["test_to_mirror"] >= 1]
    return [
        Claim(noise_floor < low and high < zeros / 20, "every run's test MSE lies above the noise floor and more "
              "than 20 times below predicting zeros", (low, median, high)),
        Claim(0.0125 < low and median < 0.016 and high < 0.0275, "median under 0.016, from over 0.0125 to under 0.0275",
              (low, median, high)),
        Claim(len(beaten) == 1 and max(run["test_to_mirror"] for run in runs) < 1.5, "the Transformer beats the "
              "mirror in all runs but one, where it is under 1.5 times the mirror's MSE",
              {"runs not below the mirror": beaten, "spread": _spread(runs, "test_to_mirror")}),
        Claim(all(0.7 < run["test_to_val"] < 1.4 for run in runs), "in every run the test MSE is within 0.7 to 1.4 "
              "times the last validation loss", _spread(runs, "test_to_val")),
    ]


def attention_spread_claims(runs):
    """What chapter 05 says about the runs' attention, for ``expect_all``."""
    margins = [run["cross_decided"] - run["encoder_decided"] for run in runs]
    return [
        Claim(min(run["matching"] for run in runs) > 0.6, "the mean weight on the matching corner is above 0.6 in "
              "every run", _spread(runs, "matching")),
        Claim(min(run["weakest_head"] for run in runs) < 0.5, "in some run the weakest head does not prefer the "
              "matching corner at all", _spread(runs, "weakest_head")),
        Claim(min(run["cross_decided"] for run in runs) > 0.8, "the cross-attention is decided, above 0.8, in "
              "every run", _spread(runs, "cross_decided")),
        Claim(0 < min(margins) < 0.1, "it is more decided than the encoder self-attention in every run, but by "
              "under 0.1 in the closest", margins),
        Claim(min(run["cross_gap"] for run in runs) > 2, "the median gap between a cross-attention row's two scores "
              "exceeds 2 in every run", _spread(runs, "cross_gap")),
        Claim(all(run["encoder_gap"] < run["cross_gap"] for run in runs), "and is larger than the encoder "
              "self-attention's in every run", [(run["encoder_gap"], run["cross_gap"]) for run in runs]),
    ]


if __name__ == "__main__":
    torch.set_num_threads(1)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(square_seed_study(), indent=1) + "\n")
    print(f"wrote {RESULTS}")
