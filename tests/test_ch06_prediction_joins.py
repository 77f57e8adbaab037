"""sequence_predictions can leave out the lines from each prediction to its corner (chapter 06's
trained predictions sit on their corners, where the lines hide under the markers)."""
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from stepbystep.plots import sequence_predictions  # noqa: E402

rng = np.random.default_rng(0)


def test_without_joins_only_the_markers_and_the_outline_are_drawn():
    source, target = rng.normal(size=(4, 2, 2)), rng.normal(size=(4, 2, 2))
    fig = sequence_predictions(source, target, target + 0.3, n=4, joins=False)
    for ax in fig.axes:
        assert len(ax.lines) == 1  # the square's outline, no joins
        assert len(ax.collections) == 3  # source, target, predicted
    np.testing.assert_allclose(fig.axes[1].collections[2].get_offsets(), target[1] + 0.3)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["source", "target", "predicted"]


def test_joins_are_drawn_by_default():
    source, target = rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2, 2))
    fig = sequence_predictions(source, target, target + 0.3, n=2)
    assert len(fig.axes[0].lines) == 3  # the outline and one join per predicted corner
    assert "prediction to its corner" in [t.get_text() for t in fig.legends[0].get_texts()]
