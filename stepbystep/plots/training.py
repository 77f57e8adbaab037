"""Training curves: the loss of every epoch, for training and validation."""
import matplotlib.pyplot as plt

__all__ = ["loss_curves"]


def loss_curves(losses, val_losses=()):
    """Training (and validation) loss per epoch on a log scale; returns the Figure.

    A log scale shows the late, small improvements that a linear one flattens; it falls back
    to linear when a loss is zero or negative.
    """
    losses, val_losses = list(losses), list(val_losses)
    if not losses:
        raise ValueError("no losses to plot yet: train the model first")
    fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
    epochs = range(1, len(losses) + 1)
    ax.plot(epochs, losses, color="tab:blue", label="training loss")
    if val_losses:
        ax.plot(range(1, len(val_losses) + 1), val_losses, color="tab:red", label="validation loss")
    if min(losses + val_losses) > 0:
        ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.legend()
    return fig
