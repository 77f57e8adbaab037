"""Chapter 01's figures: the loss curve carries the level it is compared with; learned widths sit on the σ axis."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stepbystep.data import make_regression_data  # noqa: E402
from stepbystep.models import leave_one_out_error  # noqa: E402
from stepbystep.plots import loo_zoom, loss_curves  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_loss_curves_draws_a_named_reference_level():
    fig = loss_curves([1.0, 0.5, 0.2, 0.17], reference=0.1696, reference_label="lowest leave-one-out error")
    ax = fig.axes[0]
    line = ax.get_lines()[-1]
    assert list(line.get_ydata()) == [0.1696, 0.1696] and line.get_linestyle() == "--"
    assert line.get_xdata()[0] == 0 and line.get_xdata()[1] == 1  # across the whole axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["training loss", "lowest leave-one-out error"]
    assert ax.get_yscale() == "log"
    assert len(loss_curves([1.0, 0.5]).axes[0].get_lines()) == 1  # no reference, no line


def test_loo_zoom_puts_each_run_in_a_named_row_on_the_zooms_sigma_axis():
    x, y = make_regression_data(n=50, noise=0.5, seed=42)
    sigmas = torch.logspace(-2, 1, 301)
    fine = torch.linspace(0.28, 0.35, 701, dtype=torch.float64)
    fine_errors = leave_one_out_error(x.double(), y.double(), fine)
    learned = {"from 2": [0.313, 0.314, 0.315], "from 0.1": [0.305, 0.32]}
    fig = loo_zoom(sigmas, leave_one_out_error(x, y, sigmas), fine, fine_errors, learned)
    _, ax_zoom, ax_rug = fig.axes
    assert ax_rug.get_shared_x_axes().joined(ax_rug, ax_zoom) and ax_rug.get_xlim() == pytest.approx((0.28, 0.35))
    rows = ax_rug.collections
    for row, (collection, widths) in enumerate(zip(rows, learned.values())):
        segments = collection.get_segments()
        assert [s[0][0] for s in segments] == pytest.approx(widths)
        assert all(s[0][1] == pytest.approx(row - 0.35) and s[1][1] == pytest.approx(row + 0.35) for s in segments)
    assert [t.get_text() for t in ax_rug.get_yticklabels()] == ["from 2 (3 runs)", "from 0.1 (2 runs)"]
    assert ax_rug.get_ylim() == pytest.approx((1.5, -0.5))  # the first list on top
    low, high = ax_zoom.get_ylim()  # the zoom's y range is the curve's alone, not stretched for the ticks
    spread = float(fine_errors.max() - fine_errors.min())
    assert low == pytest.approx(float(fine_errors.min()) - 0.05 * spread)
    assert high == pytest.approx(float(fine_errors.max()) + 0.05 * spread)
    star = float(fine[fine_errors.argmin()])
    assert np.allclose([ax_rug.lines[0].get_xdata()[0], ax_zoom.lines[-1].get_xdata()[0]], star)
