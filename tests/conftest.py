"""Shared test set-up: draw off-screen, and close every figure a test leaves open."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    """Each test starts with no pyplot figures, so tests that count figures are independent."""
    yield
    plt.close("all")
