"""Chapter 01's zoom on the leave-one-out minimum: σ*, the grid's best and every learned width drawn."""
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from stepbystep.data import make_regression_data  # noqa: E402
from stepbystep.models import leave_one_out_error  # noqa: E402
from stepbystep.plots import loo_zoom  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def curves():
    x, y = make_regression_data(n=50, noise=0.5, seed=42)
    sigmas = torch.logspace(-2, 1, 301)
    fine = torch.linspace(0.28, 0.35, 701, dtype=torch.float64)
    return sigmas, leave_one_out_error(x, y, sigmas), fine, leave_one_out_error(x.double(), y.double(), fine)


def test_loo_zoom_marks_the_minimum_the_grid_and_each_learned_width(curves):
    sigmas, errors, fine, fine_errors = curves
    learned = {"from 2": [0.313, 0.314, 0.315], "from 0.1": [0.305, 0.32]}
    fig = loo_zoom(sigmas, errors, fine, fine_errors, learned)
    ax_all, ax_zoom, ax_rug = fig.axes
    assert ax_all.get_xscale() == "log" and ax_zoom.get_xscale() == "linear"
    assert ax_zoom.get_xlim() == pytest.approx((0.28, 0.35))
    star = float(fine[fine_errors.argmin()])
    assert ax_zoom.lines[-1].get_xdata()[0] == pytest.approx(star)  # σ*, dashed
    best = int(errors.argmin())
    np.testing.assert_allclose(ax_zoom.collections[0].get_offsets()[0], [sigmas[best], errors[best]], rtol=1e-5)
    ticks = ax_rug.collections  # one row of ticks per list of learned widths, under the zoom
    assert [len(t.get_segments()) for t in ticks] == [3, 2]
    assert [seg[0][0] for seg in ticks[1].get_segments()] == pytest.approx([0.305, 0.32])
    labels = [t.get_text() for t in ax_zoom.get_legend().get_texts()]
    assert any(label.startswith("σ*") for label in labels)
    assert "from 0.1 (2 runs)" in [t.get_text() for t in ax_rug.get_yticklabels()]
    spans = [p for p in ax_all.patches]  # the zoomed range, shaded on the whole curve
    assert len(spans) == 1


def test_loo_zoom_rejects_bad_input(curves):
    sigmas, errors, fine, fine_errors = curves
    with pytest.raises(ValueError, match="same length"):
        loo_zoom(sigmas, errors, fine, fine_errors[:-1], {"a": [0.3]})
    with pytest.raises(ValueError, match="non-empty dict"):
        loo_zoom(sigmas, errors, fine, fine_errors, [0.3])
