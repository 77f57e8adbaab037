"""Chapter 04's figures: layer norm by hand, batch vs layer norm, d_model = 2, depth and gradient norms."""
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from stepbystep.experiments.gradient_norms import GradientNormRun  # noqa: E402
from stepbystep.plots import (  # noqa: E402
    batch_vs_layer_norm,
    depth_profile,
    gradient_norms_by_layer,
    layer_norm_by_hand,
    layer_norm_collapse,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_layer_norm_by_hand_reports_the_largest_difference():
    x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 10.0, 20.0]])
    reference = torch.nn.functional.layer_norm(x, (3,))
    fig = layer_norm_by_hand(x, reference + 1e-3, reference)
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    before, after, check = fig.axes
    assert before.get_xlabel() == "feature value" and before.get_ylabel() == "token"
    assert check.get_xlabel() == "PyTorch's layer norm" and check.get_ylabel() == "by hand"
    legend = before.get_legend()  # below the panel, not over its dots
    assert legend.get_bbox_to_anchor().y1 < before.get_window_extent().y0 + 1
    assert check.get_title() == "same numbers: largest difference 1.0e-03"
    # the middle panel shows the normalised features of token 1
    token_dots = [line for line in after.lines if line.get_marker() == "o"]
    np.testing.assert_allclose(token_dots[1].get_xdata(), reference[1] + 1e-3, rtol=1e-6)


def test_layer_norm_by_hand_needs_matching_shapes():
    with pytest.raises(ValueError, match="n_tokens, d_model"):
        layer_norm_by_hand(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2, 3))


def test_batch_vs_layer_norm_gives_each_group_its_statistics():
    raw = torch.zeros(2, 3, 4)
    raw[0] = torch.arange(12.0).view(3, 4)
    mask = torch.tensor([[True, True, True], [False, False, False]])
    fig = batch_vs_layer_norm(raw, raw * 2, raw - 1, {"real": mask, "padding": ~mask})
    assert len(fig.axes) == 3
    assert [ax.get_title() for ax in fig.axes][1].startswith("batch norm")
    labels = [t.get_text() for t in fig.axes[2].get_legend().get_texts()]
    assert labels == ["real: mean +4.50, std 3.45", "padding: mean -1.00, std 0.00"]
    assert all(ax.get_xlabel() == "value" and ax.get_ylabel() == "count" for ax in fig.axes)


def test_batch_vs_layer_norm_checks_the_masks():
    with pytest.raises(ValueError, match=r"group 'real': expected a mask of shape \(2, 3\)"):
        batch_vs_layer_norm(torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), torch.zeros(2, 3, 4),
                            {"real": torch.ones(3, 2, dtype=torch.bool)})


def test_layer_norm_collapse_counts_the_two_points_left():
    points = torch.tensor([[-1.0, 1.0], [1.0, -1.0], [0.9, -1.1], [0.5, -0.2]])
    normed = torch.nn.functional.layer_norm(points, (2,))  # (4, 2): only ±1 left
    projected = torch.randn(4, 6)
    fig = layer_norm_collapse(points, normed, [0, 1, 1, 2], projected, label_names=["a", "b", "c"])
    assert len(fig.axes) == 3
    counts = sorted(text.get_text() for text in fig.axes[1].texts)  # every point with a > b lands on (1, -1)
    assert counts == ["1 from a", "1 from c", "1 point near (-1, 1):", "2 from b", "3 points near (1, -1):"]
    colors = {text.get_text(): text.get_color() for text in fig.axes[1].texts}
    assert colors["2 from b"] == plt.get_cmap("tab10")(1) and colors["1 from c"] == plt.get_cmap("tab10")(2)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["a", "b", "c"]
    assert fig.axes[2].get_title() == "projected to d_model = 6, then layer norm"
    assert len(layer_norm_collapse(points, normed, [0, 1, 1, 2]).axes) == 2


def test_layer_norm_collapse_needs_two_features():
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        layer_norm_collapse(torch.zeros(4, 3), torch.zeros(4, 3), [0, 0, 0, 0])


def test_depth_profile_numbers_the_layers():
    fig = depth_profile({"plain": [1.0, 0.1, 0.01], "residual": [1.0, 0.9, 0.8]}, "gradient norm", first=0)
    (ax,) = fig.axes
    assert [list(line.get_xdata()) for line in ax.lines] == [[0, 1, 2], [0, 1, 2]]
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "gradient norm" and ax.get_xlabel() == "layer"
    with pytest.raises(ValueError, match="empty"):
        depth_profile({}, "y")


def _run(norm_first, warmup, n_layers=3, steps=5):
    rng = np.random.default_rng(n_layers)
    rates = np.full(steps, 0.01)
    if warmup:
        rates = 0.01 * np.minimum(1, (np.arange(steps) + 1) / warmup)
    return GradientNormRun(rng.uniform(0.1, 2, (steps, n_layers)), rng.uniform(0.1, 1, steps), rates,
                           norm_first, warmup)


def test_gradient_norms_by_layer_draws_three_rows_per_run():
    runs = [_run(True, 0), _run(False, 3)]
    fig = gradient_norms_by_layer(runs)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["norm-first, no warm-up", "norm-last, warm-up 3 steps"]
    assert len(fig.axes) == 3 * 2 + 2  # three rows per run and a learning-rate axis under each
    top_left = fig.axes[0]
    np.testing.assert_allclose([bar.get_height() for bar in top_left.patches], runs[0].norms[0])
    middle_right = fig.axes[3]  # row by row: the second row's second column
    assert len(middle_right.lines) == 3 and middle_right.get_yscale() == "log"
    np.testing.assert_allclose(middle_right.lines[2].get_ydata(), runs[1].norms[:, 2])
    assert all(ax.get_legend() is None for ax in fig.axes)  # no legend over a panel
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "largest in the run", "at initialisation", "layer 1", "layer 2", "layer 3",
        "loss (left axis)", "learning rate (right axis)"]


def test_gradient_norms_by_layer_redraws_in_place():
    fig = gradient_norms_by_layer(_run(True, 0, n_layers=2))
    assert len(fig.axes) == 4 and len(fig.axes[0].patches) == 2
    again = gradient_norms_by_layer([_run(False, 0, n_layers=5)] * 2, fig=fig)
    assert again is fig and len(fig.axes[0].patches) == 5 and len(fig.axes) == 8


def test_gradient_norms_by_layer_rejects_other_things():
    with pytest.raises(TypeError, match="runs must be a GradientNormRun .* got list holding ndarray"):
        gradient_norms_by_layer([np.zeros((3, 2))])
    with pytest.raises(ValueError, match="runs must be a GradientNormRun or a non-empty list of them"):
        gradient_norms_by_layer([])


def test_seed_spread_draws_the_median_band_and_final_losses():
    from stepbystep.plots.stacking import seed_spread

    first = [_run(True, 0, steps=4), _run(True, 0, n_layers=2, steps=4), _run(True, 0, n_layers=4, steps=4)]
    last = [_run(False, 2, steps=4), _run(False, 2, n_layers=5, steps=4)]
    fig = seed_spread({"norm-first": first, "norm-last": last})
    curves, finals = fig.axes
    medians = [line for line in curves.lines]
    np.testing.assert_allclose(medians[0].get_ydata(), np.median([run.losses for run in first], axis=0))
    assert medians[1].get_label() == "norm-last (2 seeds)"
    assert len(curves.collections) == 2  # one band per setting
    dots = [line for line in finals.lines if line.get_marker() == "o"]
    np.testing.assert_allclose(sorted(dots[0].get_ydata()), sorted(run.losses[-1] for run in first))
    bars = [line for line in finals.lines if line.get_marker() != "o"]
    np.testing.assert_allclose(bars[1].get_ydata(), [np.median([run.losses[-1] for run in last])] * 2)
    assert [t.get_text() for t in finals.get_xticklabels()] == ["norm-first", "norm-last"]
    assert curves.get_yscale() == finals.get_yscale() == "log"


def test_seed_spread_rejects_empty_or_uneven_groups():
    from stepbystep.plots.stacking import seed_spread

    with pytest.raises(ValueError, match="groups must be a non-empty dict"):
        seed_spread({})
    with pytest.raises(TypeError, match="groups must be a dict of setting label -> runs, one per seed, got list"):
        seed_spread([_run(True, 0)])
    with pytest.raises(ValueError, match="same number of steps"):
        seed_spread({"a": [_run(True, 0, steps=3), _run(True, 0, steps=4)]})


def test_seed_spread_wraps_long_setting_names_so_six_fit_side_by_side():
    from stepbystep.plots.stacking import seed_spread

    runs = [_run(False, 2, steps=3)]
    labels = ["norm-last, no warm-up, lr 0.003", "norm-first, warm-up 20 steps"]
    fig = seed_spread({label: runs for label in labels})
    shown = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert [text.replace("\n", " ") for text in shown] == labels
    assert all(len(line) <= 11 for text in shown for line in text.split("\n"))  # "norm-first," is one word
