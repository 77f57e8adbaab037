"""The gradient-norms widget of chapter 04: the toggle and the slider redraw one figure."""
import numpy as np
import pytest

from stepbystep.experiments.gradient_norms import layer_gradient_norms
from stepbystep.widgets import gradient_norms_explorer

SMALL = {"max_layers": 3, "n_layers": 2, "steps": 4, "warmup_steps": 2}


def _bar_heights(figure, column):
    return [bar.get_height() for bar in figure.axes[column].patches]


def test_toggle_and_slider_redraw_the_same_figure():
    widget = gradient_norms_explorer(**SMALL)
    (placement, depth), summary, _ = widget.children[0].children, widget.children[1], widget.children[2]
    figure = widget.figure
    assert placement.value == "norm-last" and list(placement.options) == ["norm-first", "norm-last"]
    assert [ax.get_title() for ax in figure.axes[:2]] == ["norm-last, no warm-up", "norm-last, warm-up 2 steps"]
    last = _bar_heights(figure, 0)
    expected = layer_gradient_norms(2, norm_first=False, steps=4).norms[0]
    np.testing.assert_allclose(last, expected, rtol=1e-6)
    assert "norm-last, no warm-up" in summary.value

    placement.value = "norm-first"
    assert widget.figure is figure
    assert figure.axes[0].get_title() == "norm-first, no warm-up"
    assert not np.allclose(_bar_heights(figure, 0), last)
    assert "norm-first, warm-up 2 steps" in summary.value

    depth.value = 3
    assert len(_bar_heights(figure, 0)) == 3 and len(figure.axes[2].lines) == 3


def test_precomputed_runs_are_shown_as_they_are():
    run = layer_gradient_norms(2, norm_first=False, steps=4)
    fake = type(run)(run.norms * 10, run.losses, run.learning_rates, False, 0)  # recognisable heights
    widget = gradient_norms_explorer(**SMALL, runs=[fake])
    np.testing.assert_allclose(_bar_heights(widget.figure, 0), fake.norms[0])


def test_precomputed_runs_must_match_the_settings():
    run = layer_gradient_norms(1, steps=3)
    with pytest.raises(ValueError, match="steps=4 and lr=0.03, got a run of 3 steps"):
        gradient_norms_explorer(**SMALL, runs=[run])
