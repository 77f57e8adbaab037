"""Attention heatmaps: they draw, label their axes, and reject wrong shapes."""
import matplotlib
import pytest
import torch

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from stepbystep.plots import attention_map, attention_maps  # noqa: E402


def test_attention_map_draws_one_labelled_map_with_colorbar():
    weights = torch.softmax(torch.randn(3, 4), dim=-1)
    fig = attention_map(weights, query_labels=["a", "b", "c"], key_labels=list("wxyz"), title="t")
    assert isinstance(fig, Figure)
    heatmap, colorbar = fig.axes
    assert heatmap.get_xlabel() == "key" and heatmap.get_ylabel() == "query"
    assert [t.get_text() for t in heatmap.get_xticklabels()] == list("wxyz")
    assert heatmap.get_title() == "t"
    assert len(heatmap.texts) == 12  # small maps are annotated, one number per cell


def test_attention_maps_one_panel_per_map():
    weights = torch.softmax(torch.randn(3, 2, 5), dim=-1)  # e.g. 3 heads
    fig = attention_maps(weights, titles=["h0", "h1", "h2"], n_cols=2)
    panels = [ax for ax in fig.axes if ax.get_title().startswith("h")]
    assert [ax.get_title() for ax in panels] == ["h0", "h1", "h2"]
    assert len(fig.axes) == 4  # three maps and the colorbar; the spare grid cell is removed


@pytest.mark.parametrize("shape", [(4,), (2, 3, 4, 5)])
def test_wrong_shapes_are_rejected(shape):
    with pytest.raises(ValueError, match="weights must be of shape"):
        (attention_map if len(shape) == 1 else attention_maps)(torch.rand(shape))


def test_titles_must_match_maps():
    with pytest.raises(ValueError, match="titles must be 3 strings, one per map, got 2"):
        attention_maps(torch.rand(3, 2, 2), titles=["a", "b"])
