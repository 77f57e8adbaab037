"""Chapter 06's figures: mask conventions, model comparison and timing bars."""
import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from stepbystep.models import subsequent_mask  # noqa: E402
from stepbystep.plots import mask_conventions, model_comparison, timing_bars  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _cell_texts(ax):
    return [t.get_text() for t in ax.texts]


def test_mask_conventions_of_a_causal_mask_writes_each_convention():
    fig = mask_conventions(subsequent_mask(3))
    assert isinstance(fig, Figure)
    ours, blocked, additive = fig.axes
    assert "(1, 3, 3)" in ours.get_title() and "may attend" in ours.get_title()
    assert "attn_mask (3, 3)" in blocked.get_title() and "True = blocked" in blocked.get_title()
    assert "additive" in additive.get_title()
    # row by row: query 0 sees key 0 only, query 2 sees every key
    assert _cell_texts(ours) == ["T", "F", "F", "T", "T", "F", "T", "T", "T"]
    assert _cell_texts(blocked) == ["F", "T", "T", "F", "F", "T", "F", "F", "F"]
    assert _cell_texts(additive) == ["0", "-inf", "-inf", "0", "0", "-inf", "0", "0", "0"]
    for ax in fig.axes:
        assert ax.get_xlabel() == "key" and ax.get_ylabel() == "query"


def test_mask_conventions_colours_every_panel_by_the_keep_mask():
    fig = mask_conventions(subsequent_mask(4))
    images = [ax.collections[0].get_array() for ax in fig.axes]
    expected = subsequent_mask(4)[0].float().numpy()
    for image in images:
        assert (image == expected).all()


def test_mask_conventions_of_a_source_mask_shows_the_key_padding_mask():
    source_mask = torch.tensor([[[True, True, False]], [[True, False, False]]])  # (N, 1, L)
    fig = mask_conventions(source_mask)
    ours, blocked, additive = fig.axes
    assert "source mask (2, 1, 3)" in ours.get_title()
    assert "key_padding_mask (2, 3)" in blocked.get_title()
    assert _cell_texts(blocked) == ["F", "F", "T", "F", "T", "T"]
    assert _cell_texts(additive) == ["0", "0", "-inf", "0", "-inf", "-inf"]
    assert ours.get_ylabel() == "sequence"


def test_mask_conventions_accepts_a_square_mask_without_batch_dimension():
    fig = mask_conventions(subsequent_mask(2)[0])  # (L, L)
    assert _cell_texts(fig.axes[1]) == ["F", "T", "F", "F"]


@pytest.mark.parametrize("mask, error", [
    (torch.ones(2, 3, 3, dtype=torch.bool), ValueError),  # per-sequence square masks
    (torch.ones(3, dtype=torch.bool), ValueError),
    ([[True]], TypeError),
    (torch.zeros(1, 3, 3), TypeError),  # an additive float mask is not a keep-mask
])
def test_mask_conventions_rejects_what_is_not_a_keep_mask(mask, error):
    with pytest.raises(error):
        mask_conventions(mask)


def _runs():
    return {"ours": ([1.0, 0.5, 0.2], [0.8, 0.4, 0.1]), "theirs": ([1.0, 0.6, 0.3], [0.9, 0.5, 0.25])}


def test_model_comparison_draws_losses_parameters_and_times():
    fig = model_comparison(_runs(), parameters={"ours": 1728, "theirs": 1700},
                           seconds={"ours": 4.0, "theirs": 3.0})
    loss_ax, param_ax, time_ax = fig.axes
    assert len(loss_ax.lines) == 4  # training and test for each model
    labels = [t.get_text() for t in loss_ax.get_legend().get_texts()]
    assert "ours: test (last 0.1000)" in labels and "theirs: test (last 0.2500)" in labels
    assert loss_ax.get_xlabel() == "epoch" and loss_ax.get_yscale() == "log"
    assert [bar.get_height() for bar in param_ax.patches] == [1728, 1700]
    assert [bar.get_height() for bar in time_ax.patches] == [4.0, 3.0]
    assert param_ax.get_ylabel() == "parameters" and time_ax.get_ylabel() == "seconds"
    assert [t.get_text() for t in time_ax.get_xticklabels()] == ["ours", "theirs"]


def test_model_comparison_names_the_second_curve_and_says_equal_counts_in_the_title():
    fig = model_comparison(_runs(), parameters={"ours": 1728, "theirs": 1728}, val_label="validation")
    (loss_ax,) = fig.axes  # equal counts make no panel, and no times were given
    labels = [t.get_text() for t in loss_ax.get_legend().get_texts()]
    assert "ours: validation (last 0.1000)" in labels
    assert loss_ax.get_title() == "training and validation losses (each model: 1,728 parameters)"


def test_model_comparison_labels_log_ticks_inside_the_data_and_keeps_the_legend_off_it():
    runs = {"ours": ([1.0, 0.1, 0.03], [0.9, 0.05, 0.016]), "theirs": ([1.0, 0.2, 0.04], [0.8, 0.06, 0.02])}
    fig = model_comparison(runs)
    (ax,) = fig.axes
    fig.canvas.draw()
    low, high = ax.get_ylim()
    ticks = [(value, label.get_text()) for value, label in zip(ax.get_yticks(), ax.get_yticklabels())
             if low <= value <= high]
    shown = {label for _, label in ticks}
    assert {"0.02", "0.05", "0.1", "0.2", "0.5", "1"} <= shown
    legend_box = ax.get_legend().get_window_extent()
    assert legend_box.x0 >= ax.get_window_extent().x1  # beside the axes, not over the curves


def test_model_comparison_needs_the_same_names_in_every_dict():
    with pytest.raises(ValueError, match="parameters must be a dict"):
        model_comparison(_runs(), parameters={"ours": 1}, seconds={"ours": 1.0, "theirs": 1.0})
    with pytest.raises(ValueError, match="seconds"):
        model_comparison(_runs(), seconds={"theirs": 1.0, "ours": 1.0})
    with pytest.raises(ValueError, match="runs must be a non-empty dict"):
        model_comparison({}, parameters={}, seconds={})
    with pytest.raises(TypeError, match="parameters must be a dict with the runs' names"):
        model_comparison(_runs(), parameters=[1, 1], seconds={"ours": 1.0, "theirs": 1.0})


def test_timing_bars_labels_each_time_and_ratio():
    fig = timing_bars({"slow": 0.004, "fast": 0.002}, title="one layer")
    (ax,) = fig.axes
    assert ax.get_title() == "one layer" and ax.get_xlabel() == "time (ms)"
    assert [bar.get_width() for bar in ax.patches] == pytest.approx([4.0, 2.0])
    assert [t.get_text() for t in ax.texts] == ["4.00 ms (×2.0)", "2.00 ms (×1.0)"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["slow", "fast"]


@pytest.mark.parametrize("seconds, unit, error", [
    ({"a": 0.0}, "ms", ValueError),
    ({"a": 1.0}, "hours", ValueError),
    ({}, "ms", ValueError),
    ([0.1], "ms", TypeError),
])
def test_timing_bars_rejects_bad_input(seconds, unit, error):
    with pytest.raises(error):
        timing_bars(seconds, unit=unit)
