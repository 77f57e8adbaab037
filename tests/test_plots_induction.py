"""Chapter 13's figures: what they draw."""
import math

import numpy as np
import pytest
import torch

from stepbystep import plots


def _history(steps=40, probes=5, drop=20):
    repeat = torch.cat([torch.full((drop,), 3.4), torch.full((steps - drop,), 0.5)])
    return {"first": torch.full((steps,), 3.5), "repeat": repeat,
            "probe_steps": torch.arange(probes) * 10,
            "previous": torch.linspace(0, 0.8, probes)[:, None, None].expand(probes, 2, 4),
            "induction": torch.linspace(0, 0.9, probes)[:, None, None].expand(probes, 2, 4)}


def test_phase_change_draws_both_halves_each_seed_and_the_drops():
    fig = plots.phase_change([_history(), _history()], [20, None], math.log(32), window=10)
    loss_ax, score_ax = fig.axes
    curves = [line for line in loss_ax.get_lines() if len(line.get_xdata()) > 2]
    assert len(curves) == 4
    assert np.allclose(curves[0].get_ydata(), 3.5) and curves[1].get_ydata()[0] == pytest.approx(3.4)
    assert curves[0].get_xdata()[0] == 9  # the first full window
    verticals = [line for line in loss_ax.get_lines() if len(set(line.get_xdata())) == 1]
    assert [line.get_xdata()[0] for line in verticals] == [20]
    scores = [line for line in score_ax.get_lines() if len(line.get_xdata()) > 2]
    assert len(scores) == 4 and scores[1].get_ydata()[-1] == pytest.approx(0.9)
    assert loss_ax.get_ylabel() and score_ax.get_xlabel() == "training step"


def test_induction_maps_draw_each_map_with_a_labelled_colourbar():
    maps = [torch.eye(6), torch.ones(6, 6) / 6]
    fig = plots.induction_maps(maps, ["a", "b"], 3, tokens=torch.tensor([1, 2, 3, 1, 2, 3]))
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == 2 and np.allclose(images[0].get_array(), np.eye(6))
    assert fig.axes[0].get_title() == "a" and [t.get_text() for t in fig.axes[0].get_xticklabels()][:3] == \
        ["1", "2", "3"]
    assert fig.axes[-1].get_ylabel() == "attention weight"
    with pytest.raises(ValueError):
        plots.induction_maps(maps, ["a"], 3)


def test_head_score_dots_write_each_head_at_its_score():
    scores = torch.tensor([[0.9, 0.1, 0.2, 0.3], [0.2, 0.8, 0.1, 0.0]])
    fig = plots.head_score_dots({"layer 0": scores, "layer 1": scores.flip(1)}, threshold=0.5)
    texts = [t for t in fig.axes[0].texts if not t.get_text().startswith("threshold")]
    assert len(texts) == 8
    assert "threshold 0.5" in [t.get_text() for t in fig.axes[1].texts]
    assert [t.get_text() for t in texts[:4]] == ["0", "1", "2", "3"]
    assert [t.get_position()[1] for t in texts[:4]] == pytest.approx([0.9, 0.1, 0.2, 0.3])
    assert texts[0].get_fontweight() == "bold" and texts[5].get_fontweight() == "bold"
    assert any(line.get_ydata()[0] == 0.5 for line in fig.axes[1].get_lines())


def test_ablation_effects_draw_rises_and_groups():
    single = torch.tensor([[[2.0, 0.0], [0.3, 0.2]]])  # (1 seed, 2 layers, 2 heads)
    circuit = torch.tensor([[[True, False], [True, True]]])
    groups = {"none off": torch.tensor([0.6]), "previous-token heads off": torch.tensor([3.0])}
    fig = plots.ablation_effects(single, circuit, groups, math.log(32))
    one, grouped = fig.axes[:2]
    filled, hollow = one.collections[0].get_offsets(), one.collections[1].get_offsets()
    assert sorted(filled[:, 1].tolist()) == pytest.approx([0.2, 0.3, 2.0]) and hollow[:, 1].tolist() == [0.0]
    assert [t.get_text() for t in one.get_xticklabels()] == ["L0H0", "L0H1", "L1H0", "L1H1"]
    assert [bar.get_height() for bar in grouped.patches] == pytest.approx([0.6, 3.0])
    assert "heads off" in grouped.get_xticklabels()[1].get_text()
    assert [t.get_text() for t in grouped.texts] == ["ln V"]
    with pytest.raises(ValueError):
        plots.ablation_effects(single, circuit[0], groups, 3.0)


def test_induction_circuit_names_both_heads():
    fig = plots.induction_circuit()
    words = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "previous-token head" in words and "induction head" in words and "K-composition" in words
    assert "predicts B" in words


def test_position_losses_draw_each_seed_and_the_median():
    curves = {"two layers": torch.tensor([[3.0, 3.0, 3.0, 0.2, 0.4], [3.2, 3.0, 3.0, 0.4, 0.2]]),
              "one layer": torch.full((2, 5), 2.8)}
    fig = plots.position_losses(curves, 3, math.log(32))
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if len(line.get_xdata()) == 5]
    assert len(lines) == 6 and list(lines[0].get_xdata()) == [1, 2, 3, 4, 5]
    assert list(lines[2].get_ydata()) == pytest.approx([3.1, 3.0, 3.0, 0.3, 0.3])  # the median of two seeds
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["two layers (median)", "one layer (median)"]
    with pytest.raises(ValueError):
        plots.position_losses({"x": torch.zeros(2, 4)}, 3, 3.0)
