"""Chapter 07's embedding figure pairs the runs: one grey line per seed joins its settings (dotted
into the unpaired ones), each setting's points in its colour, a bar at each median; final loss on
a log scale on the left, exact match in percent on the right. (Moved from test_plots_tokens.py,
where the figure drew loss curves by epoch.)"""
import matplotlib
import numpy as np
import pytest

from stepbystep.plots.tokens import embedding_runs

matplotlib.use("Agg")

LOSSES = {"a": [[2.0, 1.5], [2.2, 1.9]], "b": [[0.5, 0.05], [0.4, 0.02]], "c": [[0.3, 0.2], [0.6, 0.1]]}
EXACT = {"a": [0.02, 0.0], "b": [0.99, 1.0], "c": [0.5, 0.9]}


def test_each_seed_is_one_grey_line_across_the_settings():
    fig = embedding_runs(LOSSES, EXACT, unpaired=["c"])
    left, right = fig.axes
    grey = [line for line in left.get_lines() if line.get_color() == "gray"]
    assert [list(line.get_ydata()) for line in grey] == [[1.5, 0.05], [0.05, 0.2], [1.9, 0.02], [0.02, 0.1]]
    assert [line.get_linestyle() for line in grey] == ["-", ":", "-", ":"]  # dotted into the unpaired setting
    right_grey = [line for line in right.get_lines() if line.get_color() == "gray"]
    assert [list(line.get_ydata()) for line in right_grey][0] == pytest.approx([2.0, 99.0])


def test_points_medians_and_axes():
    fig = embedding_runs(LOSSES, EXACT)
    left, right = fig.axes
    assert [list(c.get_offsets()[:, 1]) for c in left.collections] == [[1.5, 1.9], [0.05, 0.02], [0.2, 0.1]]
    assert len({tuple(c.get_facecolor()[0]) for c in left.collections}) == 3
    medians = [line for line in left.get_lines() if line.get_color() == "black"]
    assert [line.get_ydata()[0] for line in medians] == pytest.approx([1.7, 0.035, 0.15])
    assert left.get_yscale() == "log" and "validation loss" in left.get_ylabel() and "exact match" in right.get_ylabel()
    assert [t.get_text() for t in left.get_xticklabels()] == ["a", "b", "c"]
    assert "2 seeds in 3 settings" in fig._suptitle.get_text()
    assert all(line.get_linestyle() == "-" for line in left.get_lines())


def test_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="same settings"):
        embedding_runs({"a": [[1.0]]}, {})
    with pytest.raises(ValueError, match="one entry per seed"):
        embedding_runs({"a": [[1.0], [2.0]]}, {"a": [0.5]})
    with pytest.raises(ValueError, match="the same seeds"):
        embedding_runs({"a": [[1.0], [2.0]], "b": [[1.0]]}, {"a": [0.5, 0.5], "b": [0.5]})
    with pytest.raises(ValueError, match="unpaired"):
        embedding_runs({"a": [[1.0]]}, {"a": [0.5]}, unpaired=["z"])


def test_accepts_a_stored_tensor_of_final_losses():
    import torch
    fig = embedding_runs({"a": torch.tensor([[1.0], [2.0]])}, {"a": torch.tensor([0.5, 0.25])})
    assert np.allclose(fig.axes[1].collections[0].get_offsets()[:, 1], [50.0, 25.0])
