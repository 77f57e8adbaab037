"""Shared test set-up and fixtures, in blocks by what uses them: every test first (off-screen
drawing, one torch thread, no figure left open), then the exercises' checks.
"""
import matplotlib

matplotlib.use("Agg")  # draw off-screen

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import pytest  # noqa: E402
import torch  # noqa: E402

# ============================================================================ every test
# The tests use tiny tensors: on a loaded 2-core machine a second torch thread only adds
# contention (the training smoke tests ran about ten times slower with two). The root
# conftest.py sets OMP_NUM_THREADS=1 before torch loads; this keeps a run that imported torch
# earlier on one thread as well.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _close_figures():
    """Each test starts with no pyplot figures, so tests that count figures are independent."""
    yield
    plt.close("all")


# ============================================================================ exercises
STUCK = "Stuck? .hint() gives a nudge, .solution() a worked answer."


@pytest.fixture
def fails_with():
    """``fails_with(exercise, answer, words)``: the check refuses ``answer``, its message says
    ``words`` and offers the hint and the solution; returns the message."""

    def check(exercise, answer, words):
        result = exercise.check(answer)
        assert not result
        message = repr(result)
        assert words in message, message
        assert STUCK in message, message
        return message

    return check
