"""The seed-study figures: every seed a dot, each median a bar, references and curves from step 0."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from stepbystep.plots import seed_dots, seed_loss_curves, seed_panels


def _dots(ax):
    return [c.get_offsets() for c in ax.collections]


def test_seed_dots_draws_each_seed_and_the_medians():
    results = {"no PE": [0.6, 0.5, 0.7], "PE": torch.tensor([0.2, 0.4, 0.3])}
    fig = seed_dots(results, ylabel="test loss", references={"chance": 0.65})
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["no PE", "PE"]
    for column, (dots, values) in enumerate(zip(_dots(ax), ([0.6, 0.5, 0.7], [0.2, 0.4, 0.3]))):
        assert np.allclose(dots[:, 1], values)  # one dot per seed, in seed order
        assert np.allclose(dots[:, 0].mean(), column) and len(set(dots[:, 0])) == 3  # side by side
    assert [bar.get_height() for bar in ax.patches] == pytest.approx([0.6, 0.3])  # the medians
    assert ax.get_ylabel() == "test loss" and ax.get_ylim()[0] == 0
    assert [line.get_ydata()[0] for line in ax.lines] == [0.65] and [t.get_text() for t in ax.texts] == ["chance"]


def test_seed_dots_rejects_empty_or_shapeless_results():
    with pytest.raises(ValueError, match="at least one value"):
        seed_dots({"a": []}, ylabel="loss")
    with pytest.raises(TypeError, match="results must be"):
        seed_dots([0.1, 0.2], ylabel="loss")
    with pytest.raises(ValueError, match="one value per seed"):
        seed_dots({"ViT": torch.zeros(2, 2)}, ylabel="accuracy")


def test_seed_panels_one_panel_per_metric():
    results = {"ε = 0": [{"a": 0.9, "b": 0.1}, {"a": 0.8, "b": 0.2}, {"a": 0.7, "b": 0.3}],
               "ε = 0.1": [{"a": 0.5, "b": 0.5}] * 3}
    fig = seed_panels(results, {"a": "A", "b": "B"}, references={"a": (0.6, "cap")})
    first, second = fig.axes
    assert [bar.get_height() for bar in first.patches] == pytest.approx([0.8, 0.5])
    assert [bar.get_height() for bar in second.patches] == pytest.approx([0.2, 0.5])
    assert np.allclose(_dots(second)[0][:, 1], [0.1, 0.2, 0.3])
    assert first.get_ylabel() == "A" and [t.get_text() for t in first.texts] == ["cap"] and not second.texts
    with pytest.raises(ValueError, match="at least one measure"):
        seed_panels(results, {})


def test_seed_panels_draw_several_references_in_one_panel():
    results = {"ε = 0": [{"wrong": 0, "c": 0.99}, {"wrong": 2, "c": 0.98}],
               "ε = 0.1": [{"wrong": 4, "c": 0.9}, {"wrong": 2, "c": 0.89}]}
    fig = seed_panels(results, {"c": "confidence", "wrong": "wrong dates"},
                      references={"c": [(0.9, "cap"), (0.995, "ours")], "wrong": (5, "ours")})
    confidence, wrong = fig.axes
    assert [t.get_text() for t in confidence.texts] == ["cap", "ours"] and [t.get_text() for t in wrong.texts] == ["ours"]
    assert [line.get_ydata()[0] for line in confidence.lines] == [0.9, 0.995]
    assert [bar.get_height() for bar in wrong.patches] == pytest.approx([1, 3])  # the medians, from 0
    assert wrong.get_ylim()[0] == 0


def test_seed_loss_curves_draws_every_seed_from_step_zero():
    runs = {"untied": [SimpleNamespace(steps=[0, 10, 20], val_losses=[4.0 + s, 2.0, 1.0 + s / 10]) for s in range(3)],
            "tied": [SimpleNamespace(steps=[0, 10, 20], val_losses=[8.0, 3.0, 1.5 + s / 10]) for s in range(3)]}
    fig = seed_loss_curves(runs, reference=4.16, reference_label="ln V")
    curves, finals = fig.axes
    lines = [line for line in curves.get_lines() if len(line.get_xdata()) == 3]
    assert len(lines) == 6 and all(line.get_xdata()[0] == 0 for line in lines)
    assert max(line.get_ydata()[0] for line in lines) == 8.0  # the initial losses are drawn
    assert [bar.get_height() for bar in finals.patches] == pytest.approx([1.1, 1.6])  # medians
    assert sorted(np.concatenate([d[:, 1] for d in _dots(finals)])) == pytest.approx([1.0, 1.1, 1.2, 1.5, 1.6, 1.7])
    assert curves.get_xlabel() and curves.get_ylabel() and finals.get_ylabel()
    assert any(t.get_text() == "ln V" for t in curves.texts)
    with pytest.raises(ValueError):
        seed_loss_curves({})


def test_seed_loss_curves_can_average_the_last_steps_and_draw_the_reference_on_both_panels():
    runs = {"a": [SimpleNamespace(steps=[0, 1, 2, 3], val_losses=[4.0, 2.0, 1.0 + s, 3.0 + s]) for s in range(3)]}
    fig = seed_loss_curves(runs, reference=0.5, reference_label="floor", last=2, label_at="left",
                           reference_on_finals=True)
    curves, finals = fig.axes
    assert [bar.get_height() for bar in finals.patches] == pytest.approx([3.0])  # medians of the means of the last 2
    assert sorted(_dots(finals)[0][:, 1]) == pytest.approx([2.0, 3.0, 4.0])
    assert "mean of the last 2" in finals.get_title() and "mean of the last 2" in finals.get_ylabel()
    label = next(t for t in curves.texts if t.get_text() == "floor")
    assert label.xy[0] == curves.get_xlim()[0] and label.get_ha() == "left"  # at the left end
    assert [t.get_text() for t in finals.texts] == ["floor"] and finals.lines[0].get_ydata()[0] == 0.5
    assert finals.get_ylim()[1] >= 4.0 * 1.15  # the label clears the highest dot and the frame
    with pytest.raises(ValueError, match="label_at must be 'left' or 'right', got 'top'"):
        seed_loss_curves(runs, reference=0.5, label_at="top")
    with pytest.raises(ValueError):
        seed_loss_curves(runs, last=0)
