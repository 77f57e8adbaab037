"""The σ explorer: a log-scale slider that redraws fit, kernel and weights, and reports LOO error."""
import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest

from stepbystep.data import make_regression_data
from stepbystep.models import leave_one_out_error
from stepbystep.widgets import sigma_explorer


@pytest.fixture
def explorer():
    x, y = make_regression_data(n=25, seed=3)
    return sigma_explorer(x, y, sigma=0.5, n_grid=60), x, y


def _parts(box):
    slider, label, output = box.children
    return slider, label, output


def _fitted_line(box):
    return box.figure.axes[0].lines[-1].get_ydata().copy()


def test_slider_is_logarithmic_and_starts_at_the_given_sigma(explorer):
    box, _, _ = explorer
    slider, label, output = _parts(box)
    assert isinstance(slider, ipywidgets.FloatLogSlider) and slider.base == 10
    assert slider.value == pytest.approx(0.5)
    assert isinstance(output, ipywidgets.Output)
    assert "σ = 0.500" in label.value


def test_building_the_widget_opens_no_pyplot_figure(explorer):
    assert plt.get_fignums() == []


def test_moving_the_slider_redraws_the_same_figure(explorer):
    box, x, y = explorer
    slider, label, _ = _parts(box)
    figure, before_line, before_label = box.figure, _fitted_line(box), label.value
    slider.value = 3.0
    assert box.figure is figure and len(figure.axes) == 4  # redrawn in place, not stacked
    assert not np.allclose(_fitted_line(box), before_line)
    assert label.value != before_label
    assert f"{leave_one_out_error(x, y, 3.0).item():.4f}" in label.value
    assert "σ = 3" in figure.get_suptitle()


def test_wide_kernel_flattens_the_fit(explorer):
    box, _, y = explorer
    slider, _, _ = _parts(box)
    slider.value = slider.max  # σ = 10: every point gets nearly the same weight
    flat = _fitted_line(box)
    slider.value = slider.min  # σ = 0.01: the fit jumps between neighbours
    wiggly = _fitted_line(box)
    assert np.ptp(flat) < np.ptp(wiggly)
    assert np.ptp(wiggly) == pytest.approx(float(y.max() - y.min()), rel=0.05)


def test_the_widgets_computation_lives_beside_the_widget_not_in_the_models():
    import stepbystep.models as models
    from stepbystep.widgets import KernelFit, kernel_fit

    assert kernel_fit.__module__ == KernelFit.__module__ == sigma_explorer.__module__ == "stepbystep.widgets.ch01_sigma"
    with pytest.raises(AttributeError, match="no attribute 'kernel_fit'"):
        models.kernel_fit  # chapter 01's widget glue is not a generic model
