"""pytest set-up for the literal `pytest --nbval notebooks/`, run from anywhere in the project.

nbval takes its sanitising rules and its kernel only from the command line. An instructor who
types the plain command should get exactly what `make test` runs, so unless the command names
its own, the notebooks are compared through `notebooks/nbval_sanitize.cfg` and executed by the
Python that runs pytest (the environment the course is installed in).

The chapters run in parallel, one per core: with pytest-xdist installed, a notebook run, or a run
of whole folders (`pytest tests/`), that names no worker count gets `-n auto --dist loadscope`,
which keeps each notebook's cells in one worker (one kernel), in order, and each test file in one
worker. A run of chosen files or tests stays in this process, as does `-n 0`. The long
files go out first (the system tests, which start browsers, servers and fresh Pythons, then the
chapters) and the many short unit-test files last, where they even out the workers' ends.

Every chapter and test runs PyTorch on one thread, as the committed outputs were computed:
OMP_NUM_THREADS is set here, before any kernel starts or any test imports torch, and the
kernels inherit it. One run is the exception: a notebook run in nbval's lax mode alone
(`pytest --nbval-lax notebooks/`, `make test-learner`) compares no output, so its kernels get
the thread count the run was started with (PyTorch's default unless the shell sets one), as
`make lab`'s kernels do: every claim must hold there too.
"""
import os
from pathlib import Path

import pytest

_THREADS_GIVEN = os.environ.get("OMP_NUM_THREADS")  # the shell's own setting, if any
os.environ["OMP_NUM_THREADS"] = "1"

SANITIZE_RULES = Path(__file__).resolve().parent / "notebooks" / "nbval_sanitize.cfg"


def _runs_notebooks(option):
    return getattr(option, "nbval", False) or getattr(option, "nbval_lax", False)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """A notebook run or a run of whole folders spreads over every core unless it names its `-n`;
    a notebook always stays in one worker."""
    option = config.option
    if hasattr(config, "workerinput") or not hasattr(option, "numprocesses"):  # an xdist worker, or no xdist
        return
    whole_folders = all(Path(arg).is_dir() for arg in config.args)
    if not (_runs_notebooks(option) or whole_folders):
        return
    if option.numprocesses is None:
        option.numprocesses = "auto"
    if option.numprocesses != 0 and option.dist == "no":  # never split a notebook's cells
        option.dist = "loadscope"
        option.loadscopereorder = False  # keep the order below (xdist would sort files by test count)


def pytest_collection_modifyitems(config, items):
    """Long files first: those with system tests, then the notebooks, then the unit tests; each
    file's items stay together and in order."""
    def file_of(item):
        return item.nodeid.split("::")[0]

    system_files = {file_of(item) for item in items if item.get_closest_marker("system")}

    def rank(item):
        path = file_of(item)
        return 0 if path in system_files else 1 if path.endswith(".ipynb") else 2

    items.sort(key=rank)  # stable: the order within each group is kept


def _learner_pass(option):
    """Notebooks run in lax mode only: outputs are not compared, so one thread is not needed."""
    return getattr(option, "nbval_lax", False) and not getattr(option, "nbval", False)


def pytest_configure(config):
    option = config.option
    if _learner_pass(option):  # before any kernel starts or xdist worker is spawned
        if _THREADS_GIVEN is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = _THREADS_GIVEN
    if not hasattr(option, "nbval_sanitize_with"):  # nbval is not installed
        return
    if option.nbval_sanitize_with is None and not option.sanitize_with:
        option.nbval_sanitize_with = str(SANITIZE_RULES)
    if not (option.nbval_kernel_name or option.current_env):
        option.nbval_current_env = True
