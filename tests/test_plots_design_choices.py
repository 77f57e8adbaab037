"""Chapter 09's design-study figures draw every seed and the median."""
import numpy as np
import pytest

from stepbystep.experiments.design_choices import SeedRun
from stepbystep.plots.design_choices import seed_dots, seed_loss_curves


def _runs():
    return {"untied": [SeedRun(s, [0, 10, 20], [4.0 + s, 2.0, 1.0 + s / 10]) for s in range(3)],
            "tied": [SeedRun(s, [0, 10, 20], [8.0, 3.0, 1.5 + s / 10]) for s in range(3)]}


def test_seed_loss_curves_draws_every_seed_from_step_zero():
    fig = seed_loss_curves(_runs(), reference=4.16, reference_label="ln V")
    curves, finals = fig.axes
    lines = [line for line in curves.get_lines() if len(line.get_xdata()) == 3]
    assert len(lines) == 6 and all(line.get_xdata()[0] == 0 for line in lines)
    assert sorted(line.get_ydata()[0] for line in lines)[-1] == 8.0  # the initial losses are drawn
    assert [bar.get_height() for bar in finals.patches] == pytest.approx([1.1, 1.6])  # medians
    dots = np.concatenate([c.get_offsets()[:, 1] for c in finals.collections])
    assert sorted(dots) == pytest.approx([1.0, 1.1, 1.2, 1.5, 1.6, 1.7])
    assert curves.get_xlabel() and curves.get_ylabel() and finals.get_ylabel()
    assert any(t.get_text() == "ln V" for t in curves.texts)


def test_seed_dots_one_panel_per_metric():
    results = {"ε = 0": [{"a": 0.9, "b": 0.1}, {"a": 0.8, "b": 0.2}, {"a": 0.7, "b": 0.3}],
               "ε = 0.1": [{"a": 0.5, "b": 0.5}] * 3}
    fig = seed_dots(results, {"a": "A", "b": "B"}, references={"a": (0.6, "cap")})
    assert len(fig.axes) == 2
    assert [bar.get_height() for bar in fig.axes[0].patches] == pytest.approx([0.8, 0.5])
    assert fig.axes[0].get_ylabel() == "A" and any(t.get_text() == "cap" for t in fig.axes[0].texts)


def test_refuses_empty_input():
    with pytest.raises(ValueError):
        seed_loss_curves({})
    with pytest.raises(TypeError):
        seed_dots([1, 2], {"a": "A"})
