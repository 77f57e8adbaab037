"""Chapter 14's figures draw what they are given and refuse what does not fit."""
import numpy as np
import pytest
import torch

from stepbystep import plots
from stepbystep.models import online_softmax_steps, tile_plan


def test_online_softmax_blocks_draws_the_values_the_max_and_the_sum():
    x = torch.tensor([1.0, 0.5, 2.0, 1.2, 3.5, 0.3, 1.0, 4.2, 2.2])
    m, l, _ = online_softmax_steps(x, 4)
    fig = plots.online_softmax_blocks(x, 4, m, l)
    left, right = fig.axes
    assert np.allclose([bar.get_height() for bar in left.patches if bar.get_width() == 0.7], x.numpy())
    maxima = [segments.get_segments()[0][0][1] for segments in left.collections]
    assert np.allclose(maxima, m.numpy())
    assert np.allclose(right.lines[0].get_ydata(), l.numpy())
    assert np.isclose(right.lines[1].get_ydata()[0], torch.exp(x - x.max()).sum().item())  # the one-pass sum
    assert left.get_xlabel() and right.get_ylabel() == "running sum l"
    with pytest.raises(ValueError, match=r"m, l \(3,\)"):
        plots.online_softmax_blocks(x, 4, m[:2], l)


def test_tile_grid_colours_each_state():
    states = np.array([[1, 3], [1, 1]])
    fig = plots.tile_grid({"causal": states, "current": np.array([[2, 0], [1, 1]])}, 32, 32)
    assert [ax.get_title() for ax in fig.axes] == ["causal", "current"]
    assert np.array_equal(fig.axes[0].images[0].get_array(), states)
    assert [text.get_text() for text in fig.legends[0].get_texts()] == ["to do", "done", "current", "skipped"]
    assert [label.get_text() for label in fig.axes[0].get_xticklabels()] == ["0", "32"]
    with pytest.raises(ValueError, match="codes 0-3"):
        plots.tile_grid({"bad": np.array([[4]])}, 1, 1)
    with pytest.raises(ValueError, match="at least one grid"):
        plots.tile_grid({}, 1, 1)


def test_memory_by_length_draws_one_line_per_method_and_labels_the_log_ticks():
    lengths = [256, 512, 1024]
    peaks = {"naive": [2 ** 20, 2 ** 22, 2 ** 24], "tiled": [2 ** 18, 2 ** 19, 2 ** 20]}
    fig = plots.memory_by_length(lengths, peaks, [2 ** 16, 2 ** 17, 2 ** 18])
    ax = fig.axes[0]
    assert [list(line.get_ydata()) for line in ax.lines] == [peaks["naive"], peaks["tiled"], [2 ** 16, 2 ** 17, 2 ** 18]]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["256", "512", "1,024"]
    labels = [label.get_text() for label in ax.get_yticklabels()]
    assert labels[0] == "64 KiB" and "1 MiB" in labels and "16 MiB" in labels
    assert [text.get_text() for text in fig.legends[0].get_texts()] == ["naive", "tiled", "the output alone"]
    with pytest.raises(ValueError, match="one value per length"):
        plots.memory_by_length(lengths, {"naive": [1, 2]}, [1, 2, 3])


def test_plan_states_marks_computed_and_skipped_tiles():
    plan, _ = tile_plan(10, 12, 4, 5, is_causal=True)
    assert plots.plan_states(plan, 12, 5).tolist() == [[1, 3, 3], [1, 1, 3], [1, 1, 3]]
    plan, _ = tile_plan(10, 12, 4, 5)
    assert (plots.plan_states(plan, 12, 5) == 1).all()
