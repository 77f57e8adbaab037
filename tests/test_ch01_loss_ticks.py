"""A loss curve spanning less than a decade is labelled in plain decimals; a longer one keeps the powers of ten."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from stepbystep.plots import loss_curves  # noqa: E402


def _labels(fig):
    ax = fig.axes[0]
    fig.canvas.draw()
    low, high = ax.get_ylim()
    major = [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks()) if low <= v <= high]
    minor = [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
    return major, minor


def test_a_short_log_axis_reads_in_plain_decimals():
    fig = loss_curves([1.4, 0.6, 0.3, 0.2, 0.17], reference=0.1696)
    major, minor = _labels(fig)
    assert major == ["0.2", "0.3", "0.5", "1"] and minor == []
    plt.close(fig)


def test_a_long_log_axis_keeps_its_powers_of_ten():
    fig = loss_curves([1.0, 0.1, 0.01, 0.005])
    major, _ = _labels(fig)
    assert all("10^" in label for label in major) and len(major) >= 2
    plt.close(fig)
