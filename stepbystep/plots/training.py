"""Training curves: the loss of every epoch, and the loss against the learning rate."""
import math

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, NullFormatter

__all__ = ["loss_curves", "lr_range_curve"]


def loss_curves(losses, val_losses=(), val_label="validation loss", reference=None, reference_label="reference"):
    """Training (and validation) loss per epoch on a log scale; returns the Figure.

    A log scale shows the late, small improvements that a linear one flattens; it falls back
    to linear when a loss is zero or negative. Over less than about a decade the log axis is
    labelled in plain decimals (0.2, 0.3, 0.5, 1), not in powers of ten. ``val_label`` names the second curve in the
    legend (a chapter that holds out a test set says so). ``reference`` (optional) draws a
    level to compare the losses with as a dashed horizontal line, named ``reference_label``.
    """
    losses, val_losses = list(losses), list(val_losses)
    if not losses:
        raise ValueError("no losses to plot yet: train the model first")
    fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
    epochs = range(1, len(losses) + 1)
    ax.plot(epochs, losses, color="tab:blue", label="training loss")
    if val_losses:
        ax.plot(range(1, len(val_losses) + 1), val_losses, color="tab:red", label=val_label)
    if reference is not None:
        ax.axhline(float(reference), color="black", ls="--", lw=1, label=reference_label)
    if min(losses + val_losses) > 0:
        ax.set_yscale("log")
        _plain_ticks_within_a_decade(ax)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.legend()
    return fig


def _plain_ticks_within_a_decade(ax):
    """Label a short log y axis at 1, 2, 3 and 5 times powers of ten, in plain decimals."""
    low, high = ax.get_ylim()
    if high / low > 20:  # a decade or more: the powers of ten label it
        return
    ticks = [m * 10.0**e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
             for m in (1, 2, 3, 5) if low <= m * 10.0**e <= high]
    ax.set_yticks(ticks)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def lr_range_curve(tracking, log_scale=True, ax=None):
    """The smoothed loss against the learning rate of a range test; returns the Figure.

    ``tracking`` is ``{'loss': [...], 'lr': [...]}`` as ``stepbystep.training.lr_range_test`` returns it.
    A geometric sweep reads best on a log axis (``log_scale``). Draws on ``ax`` when given.
    """
    if len(tracking["lr"]) != len(tracking["loss"]):
        raise ValueError(f"tracking must hold one loss per learning rate, got {len(tracking['loss'])} losses "
                         f"and {len(tracking['lr'])} rates")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    else:
        fig = ax.get_figure()
    ax.plot(tracking["lr"], tracking["loss"], color="tab:blue")
    if log_scale:
        ax.set_xscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("smoothed loss")
    return fig
