"""Chapter 04's claims about where the layer norm sits: gradients by depth and training, by seed.

Each function takes what the chapter's runs recorded (``norms``: ``(steps, n_layers)`` gradient
norms per layer, ``losses``: ``(steps,)``, and the run's ``label``) and returns the claims the
text makes about them, for ``expect_all``.
"""
import numpy as np

from stepbystep.expect import Claim

__all__ = ["initial_gradient_claims", "training_claims", "seed_claims", "control_claims"]

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
    lower_at_end = {run.label: run.norms[-1, :3].max() for run in runs}
    trained = [loss for label, loss in final.items() if label != LAST_FLAT]
    spreads = {run.label: (run.norms.max(axis=1) / run.norms.min(axis=1)).max()
               for run in runs if run.label.startswith("norm-first")}
    return [
        Claim(max(trained) < 0.05 and baseline > 0.5,
              "three runs end below 0.05, and predicting the average target costs above 0.5",
              {"final losses": final, "average target": baseline}),
        Claim(final[LAST_FLAT] > max(0.2, 10 * max(trained)),
              "norm-last without warm-up stalls above 0.2 and ten times the other runs' losses", final),
        Claim(lower_at_end[LAST_FLAT] < 1e-3 < lower_at_end[LAST_WARM],
              "norm-last without warm-up: layers 1-3 end with a gradient below 1e-3, unlike with warm-up",
              lower_at_end),
        Claim(all(spread < 10 for spread in spreads.values()),
              "norm-first: at every step the six layers' gradients stay within a factor of 10", spreads),
    ]


def seed_claims(by_setting):
    """Claims over seeds: ``by_setting`` maps the four runs' labels to one run per seed."""
    finals = {label: np.array([run.losses[-1] for run in group]) for label, group in by_setting.items()}
    lowers = {label: np.array([run.norms[-1, :3].max() for run in group]) for label, group in by_setting.items()}
    starts = [(first.norms[0], last.norms[0]) for first, last in zip(by_setting[FIRST_FLAT], by_setting[LAST_FLAT])]
    finer = [g_first[0] > g_first[-1] and g_last.argmin() in (1, 2, 3) for g_first, g_last in starts]
    first_shrinks = sum(g_first[0] > g_first[-1] for g_first, _ in starts)
    last_dips = sum(g_last.argmin() in (1, 2, 3) for _, g_last in starts)
    exceptions = [pair for pair, holds in zip(starts, finer) if not holds]
    n = len(starts)
    last_largest_at = [int(g_last.argmax()) for _, g_last in starts]  # 0 = the first layer
    n_layers = len(starts[0][1])
    fifth_seed = len(exceptions) == 1 and (
        _spread(exceptions[0][0]) < 1.1 and 0 < exceptions[0][0].argmin() < len(exceptions[0][0]) - 1
        and (np.diff(exceptions[0][1]) > 0).all())
    return [
        Claim(all((finals[label] < 0.05).all() for label in (FIRST_FLAT, FIRST_WARM, LAST_WARM)),
              "norm-first with or without warm-up, and norm-last with it, end below 0.05 in every seed", finals),
        Claim((finals[LAST_FLAT] > 0.2).all() and np.median(finals[LAST_FLAT]) > 10 * np.median(finals[LAST_WARM]),
              "norm-last without warm-up ends above 0.2 in every seed, with a median over ten times the warm-up runs'",
              finals),
        Claim(np.median(lowers[LAST_FLAT]) < 0.01 * np.median(lowers[LAST_WARM]),
              "its lower layers' final gradient is, at the median, under a hundredth of the warm-up runs'", lowers),
        Claim(all(_spread(g_first) < 1.5 for g_first, _ in starts),
              "at initialisation, norm-first gradients lie within a factor 1.5 in every seed", starts),
        Claim(all(g_last[-1] > 1.1 * g_last[2:4].max() for _, g_last in starts),
              "norm-last gradients are larger in the last layer than in layers 3 and 4 in every seed", starts),
        Claim(all(_spread(g_last) > _spread(g_first) for g_first, g_last in starts),
              "norm-last gradients are more uneven than norm-first's in every seed", starts),
        Claim(last_largest_at.count(n_layers - 1) == n - 1 and last_largest_at.count(0) == 1,
              f"norm-last gradients are largest in the last layer in {n - 1} seeds of {n}, in the first layer in the other",
              {"layer with the largest norm-last gradient, per seed": [at + 1 for at in last_largest_at]}),
        Claim(first_shrinks == n - 1 and last_dips == n - 1 and len(exceptions) == 1,
              f"the finer details of one seed hold in {n - 1} seeds of {n}",
              {"norm-first shrinks": first_shrinks, "norm-last dips": last_dips}),
        Claim(fifth_seed,
              "in the other seed, norm-first is nearly flat with a dip, and norm-last grows all the way up",
              exceptions),
    ]


def control_claims(by_setting):
    """Claims over seeds about the control: norm-last without warm-up at smaller rates from the first
    step. ``by_setting`` holds the runs of ``seed_claims`` and those of each ``CONTROL`` label."""
    controls = [label for label in by_setting if label.startswith(CONTROL)]
    finals = {label: np.array([run.losses[-1] for run in by_setting[label]]) for label in controls + [LAST_FLAT]}
    lowers = {label: np.median([run.norms[-1, :3].max() for run in by_setting[label]])
              for label in controls + [LAST_FLAT]}
    return [
        Claim(len(controls) > 0 and all((finals[label] < 0.05).all() for label in controls),
              "without warm-up but at a smaller rate, norm-last ends below 0.05 in every seed", finals),
        Claim(all(np.median(finals[LAST_FLAT]) > 10 * np.median(finals[label]) for label in controls),
              "at each smaller rate its median final loss is over ten times below the full rate's", finals),
        Claim(all(lowers[label] > 100 * lowers[LAST_FLAT] for label in controls),
              "and its lower layers keep their gradient: at the median over a hundred times the full rate's",
              lowers),
    ]
