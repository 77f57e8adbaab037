"""Chapter 02's prediction panels: with ``numbered``, each red cross carries its corner's number."""
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from stepbystep import plots  # noqa: E402

SOURCE = np.array([[[1.0, 1.0], [1.0, -1.0]]])  # (1, 2, 2): corners 0 and 1
TARGET = np.array([[[-1.0, -1.0], [-1.0, 1.0]]])  # (1, 2, 2): corners 2 and 3
PREDICTED = np.array([[[0.1, -0.9], [0.2, -0.8]]])  # (1, 2, 2): both crosses on one side


def _red_numbers(fig):
    ax = fig.axes[0]
    return sorted((text.get_text(), tuple(np.round(text.xy, 3))) for text in ax.texts
                  if matplotlib.colors.same_color(text.get_color(), "tab:red"))


def test_numbered_predictions_carry_their_corner_numbers_at_the_crosses():
    fig = plots.sequence_predictions(SOURCE, TARGET, PREDICTED, n=1, n_cols=1, numbered=True)
    assert _red_numbers(fig) == [("2", (0.1, -0.9)), ("3", (0.2, -0.8))]
    matplotlib.pyplot.close(fig)


def test_predictions_are_not_numbered_unless_asked():
    fig = plots.sequence_predictions(SOURCE, TARGET, PREDICTED, n=1, n_cols=1)
    assert _red_numbers(fig) == []
    black = sorted(text.get_text() for text in fig.axes[0].texts)
    assert black == ["0", "1", "2", "3"]  # the corners are numbered either way
    matplotlib.pyplot.close(fig)
