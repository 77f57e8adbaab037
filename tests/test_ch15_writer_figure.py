"""Chapter 15's figure of the trained writer: its training curve in bits per byte, and the held-out
levels as labelled dashed lines."""
import math

import matplotlib.pyplot as plt
import pytest
import torch

from stepbystep.plots import writer_curve


def test_the_curve_is_in_bits_per_byte_and_each_level_a_labelled_dashed_line():
    losses = torch.full((60,), 3 * math.log(2))  # 3 bits per token
    fig = writer_curve(losses, 1.5, {"writer": 1.2, "bigram table": 2.6}, window=10)
    (ax,) = fig.axes
    curve, writer, table = ax.get_lines()
    assert list(curve.get_xdata()) == list(range(10, 61))
    assert curve.get_ydata() == pytest.approx([2.0] * 51)
    assert list(writer.get_ydata()) == [1.2, 1.2] and writer.get_linestyle() == "--"
    assert list(table.get_ydata()) == [2.6, 2.6] and table.get_color() != writer.get_color()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "the writer's training batches", "writer: 1.20", "bigram table: 2.60"]
    assert ax.get_ylim()[0] == pytest.approx(0.7)
    plt.close(fig)
