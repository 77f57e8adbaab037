"""Wall time of every chapter executed top to bottom in a clean kernel.

Each notebook runs in a fresh kernel from its committed .ipynb (the outputs are discarded),
the way ``make notebooks`` and nbval run it. Goal: every chapter well under a minute on a
2-core CPU, so that the whole course re-executes in a few minutes.
"""
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
GOAL_SECONDS = 60.0


def execute(path, timeout=600):
    """Execute the notebook at ``path`` in a fresh kernel; returns the wall time in seconds."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def run(quick=False, notebooks=None):
    """One row per chapter; ``quick`` times only the first chapter."""
    paths = sorted(NOTEBOOKS.glob("[0-9]*.ipynb")) if notebooks is None else list(notebooks)
    if quick:
        paths = paths[:1]
    rows = []
    for path in paths:
        seconds = execute(path)
        rows.append({"case": path.stem, "seconds": seconds, "goal": GOAL_SECONDS, "met": seconds <= GOAL_SECONDS})
    return rows
