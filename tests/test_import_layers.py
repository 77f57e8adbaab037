"""The package's layers run one way (core -> data -> models -> training -> plots, experiments ->
book, widgets, exercises), and so do models/' folders (the chapter folders -> blocks -> attention ->
positions), and so do training/'s modules (the trainer -> its callbacks -> the callback protocol,
schedules and batches): the import-linter contracts in pyproject.toml hold, and they do catch an upward
import, even one hidden in a function, and a module given no layer."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _lint(project):
    """Run `lint-imports` on ``project`` (its pyproject.toml and its stepbystep/)."""
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache", "--no-logo"], cwd=project,
                          capture_output=True, text=True)


def test_the_package_keeps_its_layers():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def project_copy(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(ROOT / "stepbystep", tmp_path / "stepbystep", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_an_upward_import_in_a_function_breaks_the_contract(project_copy):
    special_tokens = project_copy / "stepbystep" / "data" / "special_tokens.py"
    special_tokens.write_text(special_tokens.read_text() + "\n\ndef _figure():\n    from ..widgets import FigureBox\n")
    result = _lint(project_copy)
    assert result.returncode == 1
    assert "stepbystep.data is not allowed to import stepbystep.widgets" in result.stdout
    assert "stepbystep.data.special_tokens -> stepbystep.widgets" in result.stdout


def test_a_module_outside_every_layer_breaks_the_contract(project_copy):
    (project_copy / "stepbystep" / "stray.py").write_text("from . import checks\n")
    result = _lint(project_copy)
    assert result.returncode == 1
    assert "- stepbystep.stray" in result.stdout


MODELS = "models: chapter folders -> blocks -> attention -> positions"
TRAINING = "training: trainer -> its callbacks -> protocol, schedules, batches"


@pytest.mark.parametrize("contract, module, upward, broken", [
    (MODELS, "models/blocks/kv_cache.py", "from ..gpt import generation", "stepbystep.models.blocks is not allowed to import stepbystep.models.gpt"),
    (MODELS, "models/seq2seq/translate.py", "from ..gpt import generation", "stepbystep.models.seq2seq is not allowed to import stepbystep.models.gpt"),
    (MODELS, "models/gpt/model.py", "from ..seq2seq import stacks", "stepbystep.models.gpt is not allowed to import stepbystep.models.seq2seq"),
    (MODELS, "models/attention/masks.py", "from ..blocks import layers", "stepbystep.models.attention is not allowed to import stepbystep.models.blocks"),
    (MODELS, "models/positions/rotary.py", "from ..attention import narrow", "stepbystep.models.positions is not allowed to import stepbystep.models.attention"),
    (MODELS, "models/positions/rotary.py", "from .. import norms", "stepbystep.models.positions is not allowed to import stepbystep.models.norms"),
    (TRAINING, "training/callbacks.py", "from . import trainer", "stepbystep.training.callbacks is not allowed to import stepbystep.training.trainer"),
    (TRAINING, "training/schedulers.py", "from . import checkpoint", "stepbystep.training.schedulers is not allowed to import stepbystep.training.checkpoint"),
    (TRAINING, "training/lr_finder.py", "from . import trainer", "stepbystep.training.lr_finder is not allowed to import stepbystep.training.trainer"),
])
def test_an_upward_or_sideways_import_inside_a_package_breaks_its_contract(project_copy, contract, module, upward, broken):
    path = project_copy / "stepbystep" / module
    path.write_text(path.read_text() + f"\n\ndef _upward():\n    {upward}\n")
    result = _lint(project_copy)
    report = " ".join(result.stdout.split())  # the report wraps long lines
    assert result.returncode == 1
    assert f"{contract} BROKEN" in report
    assert broken in report


def test_a_module_outside_every_models_layer_breaks_its_contract(project_copy):
    (project_copy / "stepbystep" / "models" / "stray.py").write_text("from . import norms\n")
    result = _lint(project_copy)
    assert result.returncode == 1
    assert "- stepbystep.models.stray" in result.stdout
