"""Shared test set-up: draw off-screen, run torch on one thread as the chapters do, and close
every figure a test leaves open.

The tests use tiny tensors: on a loaded 2-core machine a second torch thread only adds
contention (the training smoke tests ran about ten times slower with two).
"""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _close_figures():
    """Each test starts with no pyplot figures, so tests that count figures are independent."""
    yield
    plt.close("all")
