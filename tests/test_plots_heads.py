"""Multi-head figures: chunking, parameter counts, attention dropout and per-head maps."""
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from stepbystep.plots import attention_dropout, head_chunks, head_maps, head_parameter_counts  # noqa: E402


def test_head_chunks_draws_the_whole_matrix_and_one_panel_per_head():
    x = torch.arange(18.0).view(3, 6)  # (L, d_model)
    fig = head_chunks(x, n_heads=3, name="Q")
    assert isinstance(fig, Figure)
    whole, *heads = fig.axes
    assert whole.get_title().startswith("Q: (L, d_model) = (3, 6)") and "(3, 3, 2)" in whole.get_title()
    assert [ax.get_title() for ax in heads] == [f"head {h}: (L, d_k) = (3, 2)" for h in range(3)]
    assert len(whole.patches) == 3  # one coloured block per head
    # head 1 shows features 2 and 3 of every position: the same numbers, regrouped
    assert [t.get_text() for t in heads[1].texts] == ["2.00", "3.00", "8.00", "9.00", "14.00", "15.00"]
    assert [t.get_text() for t in heads[1].get_xticklabels()] == ["2", "3"]


@pytest.mark.parametrize("n_heads, error, match", [(4, ValueError, "positive divisor of d_model=6, got 4"),
                                                    (0, ValueError, "n_heads must be a positive int, got 0"),
                                                    (2.0, TypeError, "n_heads must be a positive int, got float")])
def test_head_chunks_rejects_a_head_count_that_does_not_divide_d_model(n_heads, error, match):
    with pytest.raises(error, match=match):
        head_chunks(torch.zeros(3, 6), n_heads)


def test_head_chunks_rejects_a_batch():
    with pytest.raises(ValueError, match=r"\(L, d_model\)"):
        head_chunks(torch.zeros(2, 3, 6), 3)


def test_head_parameter_counts_draws_the_counts_against_the_head_count():
    fig = head_parameter_counts([1, 2, 3, 6], [10, 20, 30, 60], [12, 12, 12, 12], d_model=6)
    (ax,) = fig.axes
    wide, narrow = ax.lines
    # the head counts at their values, not at evenly spaced categories: linear growth is a straight line
    assert list(wide.get_xdata()) == [1, 2, 3, 6] and list(wide.get_ydata()) == [10, 20, 30, 60]
    assert list(narrow.get_xdata()) == [1, 2, 3, 6] and list(narrow.get_ydata()) == [12, 12, 12, 12]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "6"]
    assert list(ax.get_xticks()) == [1, 2, 3, 6]
    assert [t.get_text() for t in ax.texts] == ["10", "20", "30", "60", "12", "12", "12", "12"]
    assert ax.get_xlabel() == "number of heads" and ax.get_ylabel() == "parameters"
    assert ax.get_title().endswith("d_model = 6")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["wide heads", "narrow heads"]
    assert ax.get_legend().get_bbox_to_anchor().y1 < ax.get_window_extent().y0 + 1  # below the axes


def test_head_parameter_counts_needs_equally_long_inputs():
    with pytest.raises(ValueError, match="equally long"):
        head_parameter_counts([1, 2], [10, 20], [12])


def test_attention_dropout_reports_each_row_sum():
    weights = torch.tensor([0.5, 0.25, 0.25])
    dropped = torch.tensor([[0.0, 0.5, 0.5], [1.0, 0.5, 0.0]])  # p = 0.5: survivors doubled
    fig = attention_dropout(weights, dropped, p=0.5)
    (ax,) = fig.axes
    assert len(ax.patches) == 9  # three rows of three keys
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["before dropout (sum 1.00)", "draw 1 (sum 1.00)", "draw 2 (sum 1.50)", "zeroed by dropout"]
    (crosses,) = ax.collections  # one × per zeroed weight: key 0 in draw 1, key 2 in draw 2
    offsets = crosses.get_offsets()
    width = 0.8 / 3
    np.testing.assert_allclose(offsets[:, 0], [0.0, 2.0 + width])
    np.testing.assert_allclose(offsets[:, 1], [0.0, 0.0])
    assert crosses.get_paths()  # drawn as markers
    assert "1/(1-p) = 2.00" in ax.get_title()
    assert ax.get_xlabel() == "key" and ax.get_ylabel() == "weight"


def test_attention_dropout_rejects_mismatched_rows():
    with pytest.raises(ValueError, match=r"dropped \(n_draws, L_k\)"):
        attention_dropout(np.ones(3) / 3, np.ones((2, 4)), p=0.1)


def test_head_maps_one_map_per_head_in_rows():
    weights = torch.softmax(torch.randn(8, 3, 3), dim=-1)
    fig = head_maps(weights, n_cols=4)
    maps = [ax for ax in fig.axes if ax.get_title().startswith("head")]
    assert [ax.get_title() for ax in maps] == [f"head {h}" for h in range(8)]
    assert len(fig.axes) == 9  # eight maps and one colorbar
    assert all(ax.get_xlabel() == "key" for ax in maps)


def test_head_maps_redraws_a_figure_in_place():
    fig = head_maps(torch.softmax(torch.randn(6, 4, 4), dim=-1))
    again = head_maps(torch.softmax(torch.randn(2, 4, 4), dim=-1), titles=["a", "b"], fig=fig)
    assert again is fig
    assert [ax.get_title() for ax in fig.axes[:2]] == ["a", "b"] and len(fig.axes) == 3


def test_head_maps_checks_shapes_and_titles():
    with pytest.raises(ValueError, match="n_heads, L_q, L_k"):
        head_maps(torch.rand(3, 3))
    with pytest.raises(ValueError, match="titles must be 2 strings, one per map, got 1"):
        head_maps(torch.rand(2, 3, 3), titles=["a"])
