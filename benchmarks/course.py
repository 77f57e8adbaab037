"""Wall time of every chapter executed top to bottom in a clean kernel, and of its training.

Each notebook runs in a fresh kernel from its committed .ipynb (the outputs are discarded),
the way ``make notebooks`` and nbval run it, twice: at PyTorch's default thread count, as JupyterLab
and the instructor's ``pytest --nbval notebooks/`` run it, and at one thread, as the strict pass
does. Training time (default thread count) is the time spent in the cells that call a trainer's
``train(...)`` (nbclient records when each cell starts and ends). Goal: every chapter under a
minute on a 2-core CPU, at either thread count; chapter 07 trains in under 60 s and chapter 08
in under 90 s.
"""
import contextlib
import os
import re
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
GOAL_SECONDS = 60.0
TRAINING_GOALS = {"07": 60.0, "08": 90.0}  # chapter number -> seconds of training
TRAINING_CALL = re.compile(r"\.train\(")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _kernel_threads(threads):
    """The environment a kernel starts in: ``threads`` per process (``None``: PyTorch's default)."""
    saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    for name in THREAD_VARIABLES:
        if threads is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(threads)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _cell_seconds(cell):
    """How long a code cell ran, from the timestamps nbclient records in its metadata."""
    timing = cell.metadata.get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if start is None or end is None:
        return 0.0
    return (datetime.fromisoformat(end.replace("Z", "+00:00"))
            - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()


def execute(path, timeout=600, threads=None):
    """Execute the notebook at ``path`` in a fresh kernel with ``threads`` torch threads (``None``:
    PyTorch's default, as JupyterLab runs it).

    Returns ``(wall_seconds, training_seconds)``: the whole run, and the cells calling ``.train(``.
    """
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(path.parent)}})
    with _kernel_threads(threads):
        start = time.perf_counter()
        client.execute()
        wall = time.perf_counter() - start
    training = sum(_cell_seconds(cell) for cell in notebook.cells
                   if cell.cell_type == "code" and TRAINING_CALL.search(cell.source))
    return wall, training


def run(quick=False, notebooks=None):
    """One row per chapter; ``quick`` times only the first chapter."""
    paths = sorted(NOTEBOOKS.glob("[0-9]*.ipynb")) if notebooks is None else list(notebooks)
    if quick:
        paths = paths[:1]
    rows = []
    for path in paths:
        seconds, training = execute(path)
        one_thread, _ = execute(path, threads=1)
        row = {"case": path.stem, "seconds": seconds, "training_seconds": training, "goal": GOAL_SECONDS,
               "met": seconds <= GOAL_SECONDS, "one_thread_seconds": one_thread,
               "one_thread_met": one_thread <= GOAL_SECONDS}
        training_goal = TRAINING_GOALS.get(path.stem[:2])
        if training_goal is not None:
            row["training_goal"] = training_goal
            row["training_met"] = training <= training_goal
        rows.append(row)
    return rows
