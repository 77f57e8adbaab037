"""The README's "use stepbystep in your own notebook" example runs as written and does what it
says; its "differences from the book" imports both trainers from where they live; its install
instructions name the distribution pyproject.toml builds."""
import re
from pathlib import Path

import numpy as np
import pytest


ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _section(title):
    """The text of the README's ``## title`` section, up to the next ``## `` heading."""
    text = README.read_text()
    assert f"\n## {title}\n" in text, f"no '## {title}' section in the README"
    return re.split(r"\n## ", text.split(f"\n## {title}\n", 1)[1], maxsplit=1)[0]


def _example_code():
    blocks = re.findall(r"```python\n(.*?)```", _section("Use stepbystep in your own notebook"), flags=re.DOTALL)
    assert len(blocks) == 1, f"expected one python example in the section, found {len(blocks)}"
    return blocks[0]


def test_readme_example_trains_saves_and_predicts(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(_example_code(), "README.md", "exec"), namespace)
    sbs = namespace["sbs"]
    assert sbs.total_epochs == 10 and len(sbs.val_losses) == 10
    # predicting zeros scores about 1.0 on the squares: 10 epochs must already do far better
    assert sbs.val_losses[-1] < 0.3
    assert (tmp_path / "squares.pt").is_file()
    predicted = namespace["predicted_targets"]
    assert isinstance(predicted, np.ndarray) and predicted.shape == (4, 2, 2)
    assert "parameters, test loss" in capsys.readouterr().out


def test_the_differences_section_imports_the_course_trainer_and_the_books_class_from_where_they_live():
    statements = re.findall(r"`(from stepbystep[\w.]* import StepByStep)`", _section("Differences from the book"))
    classes = []
    for statement in statements:
        namespace = {}
        exec(statement, namespace)
        classes.append(namespace["StepByStep"])
    core, book = classes
    assert issubclass(book, core) and book is not core
    assert all(hasattr(book, name) for name in ("plot_losses", "correct", "loader_apply", "lr_range_test"))
    assert not hasattr(core, "plot_losses")


def test_the_install_instructions_name_the_distribution_that_pyproject_builds():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = project["name"]
    assert name != "stepbystep"  # that name on PyPI is an unrelated project
    assert f"{name}[lab]" in project["optional-dependencies"]["dev"]  # the extra refers to this project
    assert f"`{name}`" in _section("Two commands")  # "By hand with pip" is a subsection of it
    assert "pip install stepbystep`" in _section("Two commands")  # the warning against the PyPI name
