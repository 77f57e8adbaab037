"""Chapter 15: the byte and the BPE model's training curves in bits per byte, the stored seeds, and
the trained writer's curve beside the held-out levels."""
import math

import matplotlib.pyplot as plt
import torch

__all__ = ["bits_per_byte_study", "writer_curve"]


def bits_per_byte_study(curves, bytes_per_token, stored, window=20, live=None, chance=None, levels=None):
    """Left: each live run's training loss (nats per token, ``{name: (steps,)}``) as bits per byte,
    ``loss / ln 2 / bytes_per_token[name]``, a running mean over ``window`` steps, and each run's
    ``chance[name]`` (a uniform guess's bits per byte) dashed. Right: the stored study's held-out
    bits per byte, ``{arm: (seeds,)}``, one dot per seed (side by side, so that equal values stay
    visible) and a bar at the median; ``live`` (``{arm: value}``) a hollow marker beside its arm;
    ``levels`` (``{arm: {label: value}}``, e.g. count tables) grey lines across the arm, one line
    style per label. Returns the Figure."""
    fig, (curve_ax, seed_ax) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained",
                                            gridspec_kw={"width_ratios": [1.6, 1]})
    for k, (name, losses) in enumerate(curves.items()):
        bits = torch.as_tensor(losses) / math.log(2) / bytes_per_token[name]  # (steps,)
        smooth = bits.unfold(0, window, 1).mean(-1)  # (steps - window + 1,)
        curve_ax.plot(range(window, len(bits) + 1), smooth, color=f"C{k}", label=name)
        if chance is not None and name in chance:
            guess = f"a uniform guess ({chance[name] * bytes_per_token[name]:.0f} bits per token)"
            curve_ax.axhline(chance[name], color=f"C{k}", linestyle="--", linewidth=1,
                             label=guess if len(curves) == 1 else f"{name}: {guess}")
    runs_title = "live run" if len(curves) == 1 else "live runs"
    curve_ax.set(xlabel="step", ylabel="bits per byte (training batches)",
                 title=f"{runs_title}, running mean over {window} steps")
    curve_ax.legend(fontsize=8)
    styles = {}
    for x, (arm, runs) in enumerate(stored.items()):
        runs = torch.as_tensor(runs)
        shifts = (torch.arange(len(runs)) - (len(runs) - 1) / 2) * 0.08  # (seeds,)
        seed_ax.scatter(x + shifts, runs, color=f"C{x}", s=18, zorder=3)
        seed_ax.hlines(runs.median(), x - 0.25, x + 0.25, color=f"C{x}", zorder=2)
        for label, value in (levels or {}).get(arm, {}).items():
            new = label not in styles
            styles.setdefault(label, ("--", ":", "-.")[len(styles) % 3])
            seed_ax.hlines(value, x - 0.42, x + 0.42, colors="0.45", linestyles=styles[label], linewidth=1.2,
                           label=label if new else None)
        if live is not None and arm in live:
            seed_ax.scatter([x + 0.3], [live[arm]], facecolors="none", edgecolors=f"C{x}", s=30, zorder=3,
                            label=f"live {arm} run")
    seed_ax.set_xticks(range(len(stored)), list(stored), fontsize=8)
    seed_ax.set(xlim=(-0.5, len(stored) - 0.5), ylabel="held-out bits per byte",
                title=f"stored study: {len(next(iter(stored.values())))} seeds, median bar"
                + ("\ngrey: count tables" if levels else ""))
    if levels:  # the tables span the columns: the legend goes where no dot is, above the byte arms' bigram
        seed_ax.legend(fontsize=7, loc="center right", bbox_to_anchor=(1, 0.7))
    elif live:
        seed_ax.legend(fontsize=8)
    return fig


def writer_curve(losses, bytes_per_token, held_out, window=50):
    """The trained writer's training loss (nats per token, ``(steps,)``) as bits per byte,
    ``loss / ln 2 / bytes_per_token``, a running mean over ``window`` steps; and ``held_out``
    (``{label: bits per byte}``: the writer's, the live model's, the count tables'...) as horizontal
    lines, one colour each, labelled with their values. Returns the Figure."""
    fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
    bits = torch.as_tensor(losses, dtype=torch.float64) / math.log(2) / bytes_per_token  # (steps,)
    smooth = bits.unfold(0, window, 1).mean(-1)  # (steps - window + 1,)
    ax.plot(range(window, len(bits) + 1), smooth, color="0.2", label="the writer's training batches")
    for k, (label, value) in enumerate(held_out.items()):
        ax.axhline(value, color=f"C{k}", linestyle="--", linewidth=1.2, label=f"{label}: {value:.2f}")
    ax.set(xlabel="step", ylabel="bits per byte", ylim=(min(held_out.values()) - 0.5, smooth[0].item() + 0.2),
           title=f"the trained writer, running mean over {window} steps; dashed: scores on the held-out play")
    ax.legend(fontsize=8)
    return fig
