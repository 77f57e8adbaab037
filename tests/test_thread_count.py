"""The root conftest's thread count: one thread wherever outputs are compared, the run's own
count for a lax notebook run alone (`make test-learner`), as `make lab`'s kernels get."""
import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def configured(monkeypatch, shell_threads, **modes):
    """OMP_NUM_THREADS after a fresh copy of the root conftest is imported and configured for a run
    started with ``shell_threads`` (None: unset) in the given nbval ``modes``."""
    if shell_threads is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", shell_threads)
    spec = importlib.util.spec_from_file_location("root_conftest_copy", ROOT_CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # pins one thread on import, before any kernel or torch
    assert os.environ["OMP_NUM_THREADS"] == "1"
    option = SimpleNamespace(**{"nbval": False, "nbval_lax": False, **modes}, nbval_sanitize_with=None,
                             sanitize_with=None, nbval_kernel_name=None, current_env=False, nbval_current_env=False)
    module.pytest_configure(SimpleNamespace(option=option))
    return os.environ.get("OMP_NUM_THREADS")


@pytest.mark.parametrize("shell_threads", [None, "3"])
def test_runs_that_compare_outputs_stay_on_one_thread(monkeypatch, shell_threads):
    assert configured(monkeypatch, shell_threads) == "1"  # unit tests
    assert configured(monkeypatch, shell_threads, nbval=True) == "1"  # the strict pass
    assert configured(monkeypatch, shell_threads, nbval=True, nbval_lax=True) == "1"


@pytest.mark.parametrize("shell_threads", [None, "3"])
def test_a_lax_notebook_run_gives_its_kernels_the_count_it_was_started_with(monkeypatch, shell_threads):
    assert configured(monkeypatch, shell_threads, nbval_lax=True) == shell_threads
