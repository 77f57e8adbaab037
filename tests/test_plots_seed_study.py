"""The seed-study figure: one dot per seed in each column, a bar at each median."""
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from stepbystep.plots.seed_study import seed_dots  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_seed_dots_draws_each_seed_and_the_medians():
    results = {"no PE": [0.6, 0.5, 0.7], "PE": [0.2, 0.4, 0.3]}
    fig = seed_dots(results, ylabel="test loss")
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["no PE", "PE"]
    scatters = [c for c in ax.collections if c.__class__.__name__ == "PathCollection"]
    for column, (dots, values) in enumerate(zip(scatters, results.values())):
        offsets = dots.get_offsets()
        assert np.allclose(sorted(offsets[:, 1]), sorted(values))
        assert np.allclose(offsets[:, 0].mean(), column)
    bars = [c for c in ax.collections if c.__class__.__name__ == "LineCollection"]
    assert [bar.get_segments()[0][0][1] for bar in bars] == pytest.approx([0.6, 0.3])
    assert ax.get_ylabel() == "test loss" and ax.get_xlabel() == "model"
    assert ax.get_ylim()[0] == 0
    assert [t.get_text() for t in ax.texts] == ["median 0.60", "median 0.30"]


def test_seed_dots_rejects_empty_results():
    with pytest.raises(ValueError, match="at least one value"):
        seed_dots({"a": []})
    with pytest.raises(TypeError):
        seed_dots([0.1, 0.2])
