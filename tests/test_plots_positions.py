"""Chapter 10's figures draw what they are given and refuse what does not fit."""
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from stepbystep import plots
from stepbystep.models import RotaryEmbedding, alibi_bias, alibi_slopes, sinusoidal_table
from stepbystep.widgets import position_explorer_state


def test_position_tables_marks_the_untrained_rows():
    fig = plots.position_tables(torch.randn(20, 8), sinusoidal_table(20, 8), trained_rows=6)
    assert len(fig.axes) == 8  # four panels and their colour bars
    assert any("never trained" in text.get_text() for text in fig.axes[0].texts)
    with pytest.raises(ValueError, match="same shape"):
        plots.position_tables(torch.randn(20, 8), sinusoidal_table(10, 8), trained_rows=6)
    with pytest.raises(ValueError, match="trained_rows must be an int in 1..20"):
        plots.position_tables(torch.randn(20, 8), sinusoidal_table(20, 8), trained_rows=0)


def test_alibi_heads_one_panel_per_head():
    fig = plots.alibi_heads(alibi_bias(6, 5), alibi_slopes(6))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[:2] == ["head 0: slope 1/4", "head 1: slope 1/16"] and len(titles) == 6
    assert list(fig.axes[0].get_xticks()) == [0, 4]  # ticks every 4 positions
    future = fig.axes[0].images[0].get_array()  # the grey layer: drawn above the diagonal only
    drawn = ~np.ma.getmaskarray(np.ma.masked_invalid(future))
    assert np.array_equal(drawn, np.triu(np.ones((5, 5), dtype=bool), k=1))
    with pytest.raises(ValueError, match=r"bias must have shape \(n_heads, L, L\)"):
        plots.alibi_heads(torch.zeros(2, 3, 4))


def test_rope_rotation_keeps_the_points_on_one_circle():
    rotary = RotaryEmbedding(4)
    fig = plots.rope_rotation(rotary, torch.tensor([1.0, 0.0, 0.5, 0.5]), range(6), pairs=(0, 1))
    assert len(fig.axes) == 2
    points = fig.axes[0].collections[0].get_offsets()
    radii = [math.hypot(x, y) for x, y in points]
    assert max(radii) - min(radii) < 1e-5 and len(points) == 6
    with pytest.raises(ValueError, match="pairs must be in 0..1"):
        plots.rope_rotation(rotary, torch.ones(4), range(3), pairs=(2,))
    with pytest.raises(ValueError, match=r"vector must have shape \(4,\)"):
        plots.rope_rotation(rotary, torch.ones(3), range(3))


def test_rope_scores_and_results():
    distances = torch.arange(5)
    fig = plots.rope_scores({"a": torch.zeros(5), "b": torch.ones(5)}, distances)
    assert len(fig.axes[0].lines) == 3  # two curves and the zero line
    with pytest.raises(ValueError, match="the distances' shape"):
        plots.rope_scores({"a": torch.zeros(4)}, distances)
    results = {"alibi": torch.rand(3, 3), "rope": torch.rand(3, 3)}
    fig = plots.length_generalization(results, (16, 32, 64), 16)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["alibi", "rope"]
    dots = fig.axes[0].collections[0].get_offsets()  # one dot per seed and length
    assert len(dots) == 9 and np.allclose(sorted(dots[:, 1]), sorted(results["alibi"].flatten().tolist()))
    medians = fig.axes[0].lines[0].get_ydata()
    assert np.allclose(medians, results["alibi"].median(dim=0).values.numpy())
    with pytest.raises(ValueError, match="expected accuracies for 2 lengths"):
        plots.length_generalization(results, (16, 32), 16)
    fig = plots.accuracy_by_position({"alibi": torch.rand(20)}, 8, chance=0.1)
    assert len(fig.axes[0].get_lines()) == 2
    with pytest.raises(ValueError, match="one accuracy per position"):
        plots.accuracy_by_position({"alibi": torch.rand(2, 20)}, 8)


def test_position_explorer_figure_redraws_on_the_same_figure():
    figure = plt.figure()
    state = position_explorer_state(head=1, length=8)
    assert plots.position_explorer_figure(state, figure) is figure
    plots.position_explorer_figure(position_explorer_state(head=2, length=8), figure)
    assert len(figure.axes) == 6 and "head 2" in figure.axes[0].get_title()  # 4 panels and 2 colour bars
    assert figure.axes[0].get_xlabel() == "distance (positions)"
    assert [ax.get_ylabel() for ax in figure.axes[4:]] == ["attention weight", "attention weight"]
    for heatmap in (figure.axes[1], figure.axes[3]):  # the two attention maps: positions readable
        assert list(heatmap.get_xticks()) == [0, 5] and list(heatmap.get_yticks()) == [0, 5]
        assert (heatmap.get_xlabel(), heatmap.get_ylabel()) == ("key position", "query position")
