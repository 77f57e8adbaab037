"""Chapter 15: the byte and the BPE model's training curves in bits per byte, and the stored seeds."""
import math

import matplotlib.pyplot as plt
import torch

__all__ = ["bits_per_byte_study"]


def bits_per_byte_study(curves, bytes_per_token, stored, window=20):
    """Left: each live run's training loss (nats per token, ``{name: (steps,)}``) as bits per byte,
    ``loss / ln 2 / bytes_per_token[name]``, a running mean over ``window`` steps. Right: the stored
    study's held-out bits per byte, ``{arm: (seeds,)}``, one dot per seed and a bar at the median.
    Returns the Figure."""
    fig, (curve_ax, seed_ax) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained",
                                            gridspec_kw={"width_ratios": [1.6, 1]})
    for name, losses in curves.items():
        bits = torch.as_tensor(losses) / math.log(2) / bytes_per_token[name]  # (steps,)
        smooth = bits.unfold(0, window, 1).mean(-1)  # (steps - window + 1,)
        curve_ax.plot(range(window, len(bits) + 1), smooth, label=name)
    curve_ax.set(xlabel="step", ylabel="bits per byte (training batches)",
                 title=f"live runs, running mean over {window} steps")
    curve_ax.legend()
    for x, (arm, runs) in enumerate(stored.items()):
        runs = torch.as_tensor(runs)
        seed_ax.scatter([x] * len(runs), runs, color=f"C{x}", s=18, zorder=3)
        seed_ax.hlines(runs.median(), x - 0.25, x + 0.25, color=f"C{x}")
    seed_ax.set_xticks(range(len(stored)), list(stored), fontsize=8)
    seed_ax.set(xlim=(-0.5, len(stored) - 0.5), ylabel="held-out bits per byte",
                title=f"stored study: {len(next(iter(stored.values())))} seeds, median bar")
    return fig
