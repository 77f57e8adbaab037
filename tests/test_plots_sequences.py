"""Square-corner figures: one panel per sequence, the right points in each."""
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
from stepbystep.plots import sequence_predictions, square_sequences  # noqa: E402

rng = np.random.default_rng(0)


def test_square_sequences_one_panel_per_sequence_with_direction():
    sequences = rng.normal(size=(5, 4, 2))
    fig = square_sequences(sequences, directions=[0, 1, 0, 1, 1], n=3, n_cols=2)
    assert len(fig.axes) == 3
    assert fig.axes[1].get_title() == "#1 clockwise"
    assert len(fig.axes[0].texts) == 4  # each point numbered in order


def test_sequence_predictions_draws_source_target_and_prediction():
    source, target = rng.normal(size=(4, 2, 2)), rng.normal(size=(4, 2, 2))
    fig = sequence_predictions(source, target, target + 0.1, n=4)
    assert len(fig.axes) == 4
    collections = fig.axes[2].collections
    assert len(collections) == 3
    np.testing.assert_allclose(collections[2].get_offsets(), target[2] + 0.1)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["source", "target", "predicted", "prediction to its corner"]
    numbers = {text.get_text(): text.xy for text in fig.axes[2].texts}  # corners numbered along the path
    assert sorted(numbers) == ["0", "1", "2", "3"]
    np.testing.assert_allclose([numbers["0"], numbers["1"]], source[2])
    np.testing.assert_allclose([numbers["2"], numbers["3"]], target[2])
    joins = [np.asarray(line.get_xydata()) for line in fig.axes[2].lines[1:]]  # after the square's outline
    assert len(joins) == 2  # one line from each prediction to the corner it predicts
    for position, join in enumerate(joins):
        np.testing.assert_allclose(join, [target[2, position] + 0.1, target[2, position]])


def test_sequence_predictions_without_predictions_draws_no_joins():
    fig = sequence_predictions(rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2, 2)))
    assert len(fig.axes[0].lines) == 1  # the square's outline only


def test_prediction_shape_must_match_target():
    with pytest.raises(ValueError, match="must match target"):
        sequence_predictions(rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 3, 2)))
