"""Chapter 05's dropout figure: long row labels are wrapped, so the plot, not the labels, takes
most of the figure's width; short labels are left as they are."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from stepbystep.plots import loss_comparison  # noqa: E402

LONG = {"training mode (dropout on, teacher forcing)": np.linspace(0.018, 0.039, 20),
        "eval mode (dropout off, greedy)": 0.0146}


def test_long_labels_are_wrapped_and_short_ones_kept():
    fig = loss_comparison(dict(LONG, zeros=0.5))
    labels = [label.get_text() for label in fig.axes[0].get_yticklabels()]
    assert labels == ["training mode (dropout\non, teacher forcing)", "eval mode (dropout off,\ngreedy)", "zeros"]
    plt.close(fig)


def test_the_plot_takes_most_of_the_width():
    fig = loss_comparison(LONG, title="the same 16 training sequences", xlabel="MSE")
    fig.canvas.draw()
    assert fig.axes[0].get_position().width > 0.6  # unwrapped, the labels left it under half
    plt.close(fig)
