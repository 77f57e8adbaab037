"""Chapter 08's figures: alignment maps and the error analysis."""
import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from stepbystep import plots
from stepbystep.models import Translation


def _translation(text="3 May 1979", translation="1979-05-03", n_heads=2):
    output_tokens = list(translation) + ["<eos>"]
    weights = torch.softmax(torch.randn(n_heads, len(output_tokens), len(text), generator=torch.Generator().manual_seed(0)),
                            dim=-1)  # (h, L_out, L_s)
    return Translation(text, translation, list(text), output_tokens, weights, ())


def test_alignment_map_labels_both_axes():
    fig = plots.alignment_map(_translation())
    ax = fig.axes[0]
    assert len(fig.axes) == 2  # the map and its colour bar
    assert [t.get_text() for t in ax.get_xticklabels()] == list("3␣May␣1979")
    assert [t.get_text() for t in ax.get_yticklabels()] == list("1979-05-03") + ["<eos>"]
    assert "source" in ax.get_xlabel() and "output" in ax.get_ylabel()
    assert "'3 May 1979'" in ax.get_title() and "mean over heads" in ax.get_title()


def test_alignment_map_draws_the_mean_or_one_head():
    translation = _translation()
    mean = plots.alignment_map(translation).axes[0].images[0].get_array()
    assert torch.allclose(torch.as_tensor(mean.data).float(), translation.weights.mean(dim=0))
    head = plots.alignment_map(translation, head=1).axes[0].images[0].get_array()
    assert torch.allclose(torch.as_tensor(head.data).float(), translation.weights[1])
    with pytest.raises(ValueError, match="head"):
        plots.alignment_map(translation, head=2)


def test_alignment_map_redraws_an_existing_figure():
    fig = Figure()
    plots.alignment_map(_translation(), fig=fig)
    plots.alignment_map(_translation("5 April 09", "2009-04-05"), fig=fig)
    assert len(fig.axes) == 2
    assert "'5 April 09'" in fig.axes[0].get_title()
    assert len(plt.get_fignums()) == 0  # nothing new on pyplot's stack


def test_alignment_maps_grid():
    fig = plots.alignment_maps([_translation(), _translation("1 March 2001", "2001-03-01"),
                                _translation("Tue 10 Jul 2007", "2007-07-10")], n_cols=2)
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 3
    assert len(fig.axes) == 4  # three maps and one shared colour bar
    with pytest.raises(ValueError, match="at least one"):
        plots.alignment_maps([])


def test_date_errors():
    texts = ["3 May 1979", "5 April 09", "Wednesday, September 20, 2034", "1 March 2001"]
    targets = ["1979-05-03", "2009-04-05", "2034-09-20", "2001-03-01"]
    predictions = ["1979-05-03", "1990-04-05", "2043-09-20", "2001-3-01"]
    fig = plots.date_errors(texts, targets, predictions)
    by_length, by_field = fig.axes
    assert "3 wrong of 4" in by_length.get_title()
    labels = [label.get_text() for label in by_length.get_xticklabels()]
    heights = dict(zip(labels, (bar.get_height() for bar in by_length.patches)))
    assert heights == {"10": 50.0, "12": 100.0, "29": 100.0}  # "3 May 1979" right, "5 April 09" wrong
    fields = {label.get_text(): bar.get_height() for label, bar in zip(by_field.get_xticklabels(), by_field.patches)}
    assert fields == {"year": 2, "month": 0, "day": 0, "format": 1}
    assert by_length.get_ylabel() and by_field.get_xlabel()


def test_date_errors_by_bins_with_wilson_intervals():
    texts = ["3 May 1979"] * 8 + ["Wednesday, September 20, 2034"] * 4 + ["1 March 2001"]
    targets = ["1979-05-03"] * 8 + ["2034-09-20"] * 4 + ["2001-03-01"]
    predictions = ["1979-05-03"] * 8 + ["2043-09-20", "2034-09-20", "2034-09-20", "2034-09-20"] + ["2001-03-01"]
    fig = plots.date_errors(texts, targets, predictions, bins=[(8, 12), (13, 26), (27, 29)])
    by_length = fig.axes[0]
    assert [label.get_text() for label in by_length.get_xticklabels()] == ["8-12", "13-26", "27-29"]
    assert [bar.get_height() for bar in by_length.patches] == [0.0, 0.0, 25.0]
    assert [text.get_text() for text in by_length.texts] == ["0/9", "0/0", "1/4"]
    from stepbystep.models.metrics import wilson_interval
    low, high = wilson_interval(1, 4)
    (bars_errors,) = [c for c in by_length.containers if hasattr(c, "errorbar") and c.errorbar is not None]
    segments = bars_errors.errorbar.lines[2][0].get_segments()
    assert segments[2][0][1] == pytest.approx(100 * low) and segments[2][1][1] == pytest.approx(100 * high)
    assert segments[0][1][1] > 0  # no error among 9 still leaves room above 0


def test_date_errors_title_counts_without_a_rate_and_names_the_sample():
    texts, targets = ["3 May 1979"] * 3, ["1979-05-03"] * 3
    fig = plots.date_errors(texts, targets, ["1979-05-03", "1979-05-30", "1979-05-03"], sample="1 per bin")
    assert fig.axes[0].get_title() == "1 wrong of 3 texts, 1 per bin"  # no percentage to misread as a rate


def test_date_errors_checks_lengths():
    with pytest.raises(ValueError, match="equally long"):
        plots.date_errors(["3 May 1979"], ["1979-05-03"], [])
    with pytest.raises(ValueError, match="bins"):
        plots.date_errors(["3 May 1979"], ["1979-05-03"], ["1979-05-03"], bins=[(12, 8)])
