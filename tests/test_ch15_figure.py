"""Chapter 15's figure: the live run's curve with a uniform guess's level, and the live held-out
value as a hollow marker beside its arm of the stored study."""
import math

import matplotlib.pyplot as plt
import pytest
import torch

from stepbystep.plots import bits_per_byte_study


def test_the_live_value_is_a_hollow_marker_beside_its_arm_and_chance_is_dashed():
    losses = torch.full((50,), 2 * math.log(2))  # 2 bits per token
    stored = {"bpe": torch.tensor([2.0, 2.1, 2.2]), "bytes": torch.tensor([3.0, 3.1, 3.3])}
    fig = bits_per_byte_study({"bpe (live)": losses}, {"bpe (live)": 2.0}, stored, window=10,
                              live={"bpe": 2.05}, chance={"bpe (live)": 4.4})
    curve_ax, seed_ax = fig.axes
    curve, level = curve_ax.get_lines()
    assert curve.get_ydata() == pytest.approx([1.0] * 41)
    assert list(level.get_ydata()) == [4.4, 4.4] and level.get_linestyle() == "--"
    assert level.get_color() == curve.get_color()
    assert curve_ax.get_title().startswith("live run,")
    (marker,) = [c for c in seed_ax.collections if c.get_label() == "live bpe run"]
    assert marker.get_offsets().tolist() == [[0.3, 2.05]]
    assert marker.get_facecolors().size == 0 or marker.get_facecolors()[0][3] == 0  # hollow
    assert [t.get_text() for t in seed_ax.get_legend().get_texts()] == ["live bpe run"]
    plt.close(fig)


def test_without_live_values_the_figure_draws_no_marker_and_no_legend_on_the_right():
    losses = torch.full((30,), 1.0)
    stored = {"bpe": torch.tensor([2.0, 2.1, 2.2])}
    fig = bits_per_byte_study({"a": losses, "b": losses}, {"a": 1.0, "b": 2.0}, stored, window=5)
    curve_ax, seed_ax = fig.axes
    assert len(curve_ax.get_lines()) == 2 and curve_ax.get_title().startswith("live runs,")
    assert len(seed_ax.collections) == 2 and seed_ax.get_legend() is None
    plt.close(fig)
