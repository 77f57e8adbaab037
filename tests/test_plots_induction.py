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
    loss_ax, previous_ax, induction_ax = fig.axes
    curves = [line for line in loss_ax.get_lines() if len(line.get_xdata()) > 2]
    assert len(curves) == 4
    assert np.allclose(curves[0].get_ydata(), 3.5) and curves[1].get_ydata()[0] == pytest.approx(3.4)
    assert curves[0].get_xdata()[0] == 9  # the first full window
    dots = [line for line in loss_ax.get_lines() if len(line.get_xdata()) == 1]
    assert [line.get_xdata()[0] for line in dots] == [20, 20]  # the drop on both of the first seed's curves
    previous = [line for line in previous_ax.get_lines() if len(line.get_xdata()) > 2]
    induction = [line for line in induction_ax.get_lines() if len(line.get_xdata()) > 2]
    assert len(previous) == len(induction) == 2 and induction[1].get_ydata()[-1] == pytest.approx(0.9)
    assert previous[0].get_ydata()[-1] == pytest.approx(0.8)
    assert loss_ax.get_ylabel() and induction_ax.get_xlabel() == "training step"


def test_phase_change_draws_the_score_with_layer_0_off_dashed():
    history = dict(_history(), induction_layer0_off=torch.full((5,), 0.2))
    induction_ax = plots.phase_change([history], [20], math.log(32), window=10).axes[2]
    dashed = [line for line in induction_ax.get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and np.allclose(dashed[0].get_ydata(), 0.2)
    assert "layer 0 switched off" in [t.get_text() for t in induction_ax.get_legend().get_texts()][1]


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


def test_k_composition_draws_each_layer_0_head_per_read_and_the_circuit():
    scores = torch.full((2, 3, 4, 4), 0.1)
    scores[:, 1, 0] = 0.3  # layer-0 head 0's output is read by the keys
    in_previous = torch.zeros(2, 4, dtype=torch.bool)
    in_previous[:, 0] = True
    fig = plots.k_composition(scores, in_previous, torch.eye(5), 0.125, title="QK")
    ax_scores, ax_circuit = fig.axes[:2]
    assert [bar.get_height() for bar in ax_scores.patches] == pytest.approx([0.1, 0.3, 0.1])  # previous heads' medians
    filled = [c for c in ax_scores.collections if c.get_offsets().shape[0] == 1]
    assert len(filled) == 6  # one previous-token head per seed and read
    assert np.allclose(ax_circuit.images[0].get_array(), np.eye(5)) and ax_circuit.get_title() == "QK"
    assert [t.get_text() for t in ax_scores.get_xticklabels()] == ["queries", "keys", "values"]
    with pytest.raises(ValueError, match="in_previous"):
        plots.k_composition(scores, in_previous[0], torch.eye(5), 0.125)


def test_head_score_dots_draw_the_marked_heads_in_red():
    scores = torch.tensor([[0.9, 0.1, 0.45, 0.3], [0.2, 0.8, 0.1, 0.0]])
    marked = torch.tensor([[True, False, True, False], [False, True, False, False]])
    fig = plots.head_score_dots({"layer 0": scores, "layer 1": scores}, marked={"layer 0": marked})
    red = {(round(t.get_position()[1], 2), t.get_text()) for t in fig.axes[0].texts if t.get_color() == "C3"}
    assert red == {(0.9, "0"), (0.45, "2"), (0.8, "1")}  # the marked heads, the 0.45 one among them
    best_only = {t.get_text() for t in fig.axes[1].texts if t.get_color() == "C3"}
    assert best_only == {"0", "1"}  # an unmarked panel: each seed's best head
