"""Every chapter is a jupytext pair whose committed .ipynb matches its .py and was executed.

The .py (py:percent) is the reviewed source and the .ipynb carries the outputs. We compare the
script rendered from the notebook with the committed script, rather than trusting file
timestamps (which a fresh clone makes arbitrary).
"""
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PAIRS = sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))
SCRIPTS = sorted(NOTEBOOKS.glob("[0-9]*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_has_its_notebook(script):
    assert script.with_suffix(".ipynb").exists(), f"{script.name} has no .ipynb: run make notebooks"


@pytest.mark.parametrize("notebook", PAIRS, ids=lambda p: p.name)
def test_notebook_renders_to_its_script(notebook):
    script = notebook.with_suffix(".py")
    assert script.exists(), f"{notebook.name} has no paired .py"
    rendered = jupytext.writes(jupytext.read(notebook), fmt="py:percent")
    assert rendered == script.read_text(), (
        f"{notebook.name} and {script.name} differ: edit the .py, then run make notebooks"
    )


@pytest.mark.parametrize("notebook", PAIRS, ids=lambda p: p.name)
def test_notebook_was_executed_top_to_bottom(notebook):
    nb = jupytext.read(notebook)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    counts = [cell.get("execution_count") for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{notebook.name} was not executed once, in order, from a clean kernel: run make notebooks"
    )
    errors = [o for cell in code for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{notebook.name} has a cell that raised {errors[0].get('ename')}"
