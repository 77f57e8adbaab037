"""Chapter 01 figures: they draw, label their axes, mark what they promise and reject bad input."""
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from stepbystep.data import make_regression_data, regression_grid  # noqa: E402
from stepbystep.models import leave_one_out_error, nadaraya_watson  # noqa: E402
from stepbystep.plots import kernel_dashboard, kernel_fits, kernel_shapes, kernel_weights, loo_curve  # noqa: E402
from stepbystep.widgets import kernel_fit  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def data():
    x, y = make_regression_data(n=20, seed=1)
    x_grid, y_true = regression_grid(40)
    return x, y, x_grid, y_true


def test_kernel_shapes_one_curve_per_sigma():
    fig = kernel_shapes([0.5, 1.0, 2.0])
    (ax,) = fig.axes
    assert len(ax.lines) == 3
    assert ax.get_xlabel().startswith("distance") and ax.get_ylabel().startswith("kernel")
    assert max(line.get_ydata().max() for line in ax.lines) == pytest.approx(1.0, abs=1e-3)


def test_kernel_shapes_rejects_non_positive_widths():
    with pytest.raises(ValueError, match="positive widths"):
        kernel_shapes([1.0, 0.0])


def test_kernel_fits_one_panel_per_sigma_with_the_fit_drawn(data):
    x, y, x_grid, y_true = data
    fig = kernel_fits(x, y, x_grid, [0.1, 0.5, 2.0, 8.0], y_true=y_true, n_cols=3)
    assert isinstance(fig, Figure)
    assert [ax.get_title() for ax in fig.axes] == ["σ = 0.1", "σ = 0.5", "σ = 2", "σ = 8"]  # spare cell removed
    ax = fig.axes[2]
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"
    prediction = ax.lines[-1].get_ydata()
    assert np.allclose(prediction, nadaraya_watson(x_grid, x, y, 2.0)[0].numpy(), atol=1e-6)


def test_kernel_weights_heatmap_covers_queries_by_keys(data):
    x, y, x_grid, _ = data
    _, weights = nadaraya_watson(x_grid, x, y, 0.5)
    fig = kernel_weights(weights, x_grid, x)
    heatmap, colorbar = fig.axes
    assert heatmap.get_xlabel().startswith("key") and heatmap.get_ylabel().startswith("query")
    mesh = heatmap.collections[0]
    assert mesh.get_array().shape == (40, 20)
    assert colorbar.get_ylabel() == "weight α"


def test_kernel_weights_sorts_unsorted_keys(data):
    x, y, x_grid, _ = data
    order = torch.randperm(20, generator=torch.Generator().manual_seed(0))
    _, weights = nadaraya_watson(x_grid, x[order], y[order], 0.5)  # columns in shuffled order
    fig = kernel_weights(weights, x_grid, x[order])
    _, sorted_weights = nadaraya_watson(x_grid, x, y, 0.5)
    assert np.allclose(fig.axes[0].collections[0].get_array(), sorted_weights.numpy(), atol=1e-6)


def test_kernel_weights_rejects_mismatched_shapes(data):
    x, y, x_grid, _ = data
    with pytest.raises(ValueError, match=r"weights must have shape \(n_queries, n_keys\) = \(40, 20\)"):
        kernel_weights(torch.rand(20, 40), x_grid, x)


def test_loo_curve_marks_the_minimum_and_the_learned_sigma(data):
    x, y, _, _ = data
    sigmas = torch.logspace(-2, 1, 31)
    errors = leave_one_out_error(x, y, sigmas)
    fig = loo_curve(sigmas, errors, learned_sigma=0.42)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "kernel width σ"
    best = int(errors.argmin())
    marked = list(np.asarray(ax.collections[0].get_offsets())[0])
    assert marked == pytest.approx([sigmas[best].item(), errors[best].item()], rel=1e-5)
    learned_line = ax.lines[-1]
    assert learned_line.get_xdata()[0] == pytest.approx(0.42)
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert any("learned" in label for label in labels) and any("grid minimum" in label for label in labels)


def test_loo_curve_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="same length"):
        loo_curve(np.ones(3), np.ones(4))


def test_dashboard_draws_three_panels_and_redraws_in_place(data):
    x, y, x_grid, y_true = data
    fig = kernel_dashboard(x, y, x_grid, kernel_fit(x, y, x_grid, 0.3), y_true=y_true)
    assert len(fig.axes) == 4  # fit, kernel, weights and the weights' colourbar
    assert "σ = 0.3" in fig.get_suptitle() and "leave-one-out" in fig.get_suptitle()
    same = kernel_dashboard(x, y, x_grid, kernel_fit(x, y, x_grid, 3.0), y_true=y_true, fig=fig)
    assert same is fig and len(fig.axes) == 4
    assert "σ = 3" in fig.get_suptitle()


def test_kernel_weights_explains_the_dotted_diagonal_below_the_axes(data):
    x, y, x_grid, _ = data
    fig = kernel_weights(nadaraya_watson(x_grid, x, y, 0.5)[1], x_grid, x)
    legend = fig.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["query = key (x = xⱼ)"]
    assert legend.get_bbox_to_anchor().y0 < fig.axes[0].get_window_extent().y0  # under the heatmap, not on it


def test_loo_curve_labels_the_ticks_between_decades(data):
    x, y, _, _ = data
    sigmas = torch.logspace(-2, 1, 61)
    fig = loo_curve(sigmas, leave_one_out_error(x, y, sigmas))
    ax = fig.axes[0]
    fig.canvas.draw()
    minor = [t.get_text() for t in ax.yaxis.get_minorticklabels() if t.get_text()]
    assert any(label in minor for label in ("0.2", "0.3", "0.5", "2", "3", "5"))


def test_dot_product_weights_piles_onto_the_largest_key(data):
    from stepbystep.plots.kernel_regression import dot_product_weights

    x, y, x_grid, y_true = data
    fig = dot_product_weights(x, y, x_grid, 0.5, y_true=y_true)
    kernel_ax, product_ax, fit_ax = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert "q·k/σ²" in product_ax.get_title() and "(q − k)²" in kernel_ax.get_title()
    product = product_ax.collections[0].get_array().reshape(len(x_grid), len(x))  # sorted queries x sorted keys
    assert (product[x_grid.numpy() > 0].argmax(axis=1) == len(x) - 1).all()  # the last column: the largest key
    kernel = kernel_ax.collections[0].get_array().reshape(len(x_grid), len(x))
    assert (kernel.argmax(axis=1) != len(x) - 1).any()
    labels = [line.get_label() for line in fit_ax.lines]
    assert "kernel fit" in labels and "product-only fit" in labels
    assert sum(1 for ax in fig.axes if ax.get_label() == "<colorbar>") == 2
    assert all(ax.get_ylabel() == "weight α" for ax in fig.axes if ax.get_label() == "<colorbar>")


def test_dot_product_weights_rejects_bad_input(data):
    from stepbystep.plots.kernel_regression import dot_product_weights

    x, y, x_grid, _ = data
    with pytest.raises(ValueError, match="positive width"):
        dot_product_weights(x, y, x_grid, 0.0)
    with pytest.raises(ValueError, match="1-D of one length"):
        dot_product_weights(x, y[:-1], x_grid, 0.5)


def test_dashboard_colourbar_is_labelled(data):
    x, y, x_grid, y_true = data
    fig = kernel_dashboard(x, y, x_grid, kernel_fit(x, y, x_grid, 0.5), y_true=y_true)
    assert [ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"] == ["weight α"]


def test_query_attention_sizes_points_by_their_weight(data):
    from stepbystep.plots.kernel_regression import query_attention

    x, y, x_grid, y_true = data
    fig = query_attention(x, y, 5.0, 0.5, x_grid=x_grid, y_true=y_true)
    top, bottom = fig.axes
    weights = nadaraya_watson(torch.tensor([5.0]), x, y, 0.5)[1][0].numpy()
    points = top.collections[0]
    assert np.allclose(points.get_sizes(), 5 + 400 * weights, atol=1e-4)
    assert np.allclose(bottom.collections[1].get_offsets()[:, 1], weights, atol=1e-6)
    assert bottom.get_ylabel() == "weight α" and bottom.get_xlabel() == "x" and top.get_ylabel() == "y"
    assert "x = 5" in top.get_title()
    with pytest.raises(ValueError, match="positive width"):
        query_attention(x, y, 5.0, -1.0)


def test_query_attention_weights_sit_on_the_normalised_kernel(data):
    from stepbystep.plots.kernel_regression import query_attention

    x, y, x_grid, y_true = data
    fig = query_attention(x, y, 5.0, 0.5, x_grid=x_grid, y_true=y_true)
    bottom = fig.axes[1]
    curve = bottom.lines[0]
    assert "Σ K" in curve.get_label()
    curve_x, curve_y = curve.get_xdata(), curve.get_ydata()
    weights = nadaraya_watson(torch.tensor([5.0]), x, y, 0.5)[1][0].numpy()
    on_curve = np.interp(x.numpy(), curve_x, curve_y)  # the curve read at each training point
    assert np.allclose(on_curve, weights, atol=2e-3)  # up to the 400-point curve's interpolation
    assert bottom.get_ylim()[1] >= curve_y.max()


def test_dashboard_title_can_carry_the_lowest_error(data):
    x, y, x_grid, _ = data
    fig = kernel_dashboard(x, y, x_grid, kernel_fit(x, y, x_grid, 0.5), best=(0.316, 0.1696))
    assert fig._suptitle.get_text().endswith("(lowest: 0.170 at σ = 0.316)")
