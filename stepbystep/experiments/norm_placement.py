"""Chapter 04's claims about where the layer norm sits: gradients by depth and training, by seed.

Each function takes what the chapter's runs recorded (``norms``: ``(steps, n_layers)`` gradient
norms per layer, ``losses``: ``(steps,)``, and the run's ``label``) and returns the claims the
text makes about them, for ``expect_all``.
"""
import numpy as np

from stepbystep.expect import Claim

__all__ = ["initial_gradient_claims", "initial_gradient_rates", "initial_gradient_detail_rates", "training_claims",
           "seed_claims", "control_claims"]

FIRST_FLAT, FIRST_WARM = "norm-first, no warm-up", "norm-first, warm-up 20 steps"
LAST_FLAT, LAST_WARM = "norm-last, no warm-up", "norm-last, warm-up 20 steps"
CONTROL = "norm-last, no warm-up, lr "  # followed by the rate: the control's runs


def _spread(norms):
    return norms.max() / norms.min()


def initial_gradient_claims(norm_first, norm_last):
    """Claims about one seed's gradients at initialisation; each argument is ``(n_layers,)``."""
    norm_first, norm_last = np.asarray(norm_first), np.asarray(norm_last)
    return [
        Claim(_spread(norm_first) < 1.5 and (np.diff(norm_first) < 0).all(),
              "norm-first: every layer within a factor 1.5, each a little below the one beneath it",
              norm_first),
        Claim(norm_last.argmax() == len(norm_last) - 1 and norm_last.argmin() in (1, 2, 3),
              "norm-last: largest in the last layer, smallest in one of layers 2 to 4", norm_last),
        Claim(norm_last[-1] > 1.5 * norm_last.min(),
              "norm-last: the last layer's gradient more than 1.5 times the smallest", norm_last),
        Claim((np.diff(norm_last[2:]) > 0).all() and norm_last[0] > norm_last[1],
              "norm-last: growing from layer 3 to the output, and the first layer above the second", norm_last),
    ]


def training_claims(runs, baseline):
    """Claims about the four seed-0 runs (norm-first first), against the average-target loss."""
    final = {run.label: run.losses[-1] for run in runs}
    trained = [loss for label, loss in final.items() if label != LAST_FLAT]
    spreads = {run.label: (run.norms.max(axis=1) / run.norms.min(axis=1)).max()
               for run in runs if run.label.startswith("norm-first")}
    return [
        Claim(max(trained) < 0.05 and baseline > 0.5,
              "three runs end below 0.05, and predicting the average target costs above 0.5",
              {"final losses": final, "average target": baseline}),
        Claim(final[LAST_FLAT] > max(0.2, 10 * max(trained)),
              "norm-last without warm-up stalls above 0.2 and ten times the other runs' losses", final),
        Claim(all(spread < 10 for spread in spreads.values()),
              "norm-first: at every step the six layers' gradients stay within a factor of 10", spreads),
    ]


def initial_gradient_rates(norm_first, norm_last):
    """Claims about many seeds' gradients at initialisation; each argument is ``(seeds, n_layers)``,
    the two placements built from the same seeds."""
    first, last = np.asarray(norm_first), np.asarray(norm_last)
    n, n_layers = last.shape
    first_spread, last_spread = first.max(axis=1) / first.min(axis=1), last.max(axis=1) / last.min(axis=1)  # (seeds,)
    largest_at = last.argmax(axis=1)  # (seeds,): 0 = the first layer
    above_middle = last[:, -1] > last[:, 2:4].max(axis=1)  # (seeds,): the last layer above layers 3 and 4
    return [
        Claim((first_spread < 1.5).sum() >= 0.85 * n,
              "norm-first: all six layers within a factor 1.5 of each other in about 9 seeds of 10 (at least 85%)",
              {"seeds within 1.5": int((first_spread < 1.5).sum()), "of": n}),
        Claim((last_spread > first_spread).sum() >= 0.8 * n,
              "norm-last gradients are more uneven than norm-first's in at least 4 seeds of 5",
              {"seeds more uneven": int((last_spread > first_spread).sum()), "of": n}),
        Claim(above_middle.sum() >= 0.85 * n,
              "norm-last: the last layer's gradient is above layers 3 and 4's in about 9 seeds of 10 (at least 85%)",
              {"seeds": int(above_middle.sum()), "of": n}),
        Claim(np.isin(largest_at, (0, n_layers - 1)).all() and (largest_at == n_layers - 1).sum() > n / 2,
              "norm-last: the largest gradient is at an end of the stack in every seed, in the last layer in most",
              {f"layer {layer + 1}": int((largest_at == layer).sum()) for layer in range(n_layers)}),
        Claim((last[:, -1] > first[:, -1]).all() and np.median(last[:, -1] / first[:, -1]) > 2,
              "from the same weights, the last layer's gradient is larger norm-last than norm-first in every seed, "
              "over twice as large at the median", last[:, -1] / first[:, -1]),
    ]


def initial_gradient_detail_rates(norm_first, norm_last):
    """How often seed 0's finer details at initialisation recur over many seeds; each argument is
    ``(seeds, n_layers)``, the two placements built from the same seeds."""
    first, last = np.asarray(norm_first), np.asarray(norm_last)
    n = len(last)
    falling = (np.diff(first, axis=1) < 0).all(axis=1)  # (seeds,): each layer below the one beneath it
    middle = np.isin(last.argmin(axis=1), (1, 2, 3, 4))  # (seeds,): smallest in one of layers 2 to 5
    first_above_second = last[:, 0] > last[:, 1]  # (seeds,)
    growing = (np.diff(last[:, 2:], axis=1) > 0).all(axis=1)  # (seeds,): rising from layer 3 to the output
    return [
        Claim(n / 2 < falling.sum() < n, "norm-first: each layer a little below the one beneath it in more than half "
              "the seeds, not in all", {"seeds": int(falling.sum()), "of": n}),
        Claim(middle.sum() >= 0.8 * n and first_above_second.sum() >= 0.8 * n,
              "norm-last: smallest in the middle (layers 2 to 5), and the first layer above the second, each in at "
              "least 4 seeds of 5", {"middle": int(middle.sum()), "first above second": int(first_above_second.sum()),
                                      "of": n}),
        Claim(n / 2 < growing.sum() < n, "norm-last: growing from layer 3 to the output in more than half the seeds, "
              "not in all", {"seeds": int(growing.sum()), "of": n}),
    ]


def seed_claims(by_setting):
    """Claims over the chapter's seeds, at the median: ``by_setting`` maps each setting's label
    (the four runs' and the control's) to one run per seed."""
    finals = {label: np.median([run.losses[-1] for run in group]) for label, group in by_setting.items()}
    return [
        Claim(all(finals[LAST_FLAT] > 10 * finals[label] for label in (FIRST_FLAT, FIRST_WARM, LAST_WARM)),
              "the median final loss of norm-last without warm-up is over ten times each other run's", finals),
    ]


def control_claims(by_setting):
    """Claims over seeds about the control: norm-last without warm-up at smaller rates from the first
    step. ``by_setting`` holds the runs of ``seed_claims`` and those of each ``CONTROL`` label."""
    controls = [label for label in by_setting if label.startswith(CONTROL)]
    finals = {label: np.array([run.losses[-1] for run in by_setting[label]]) for label in controls + [LAST_FLAT]}
    return [
        Claim(len(controls) > 0 and all((finals[label] < 0.05).all() for label in controls),
              "without warm-up but at a smaller rate, norm-last ends below 0.05 in every seed", finals),
        Claim(all(np.median(finals[LAST_FLAT]) > 10 * np.median(finals[label]) for label in controls),
              "at each smaller rate its median final loss is over ten times below the full rate's", finals),
    ]
