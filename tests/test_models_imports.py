"""Each module of models/ lists its imports from the package in one order, the farthest first
(``...checks`` before ``..attention`` before ``.masks``), then by name, so a moved file's imports
are put back in place; the package __init__s list theirs in chapter order instead."""
import ast
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[1] / "stepbystep" / "models"
MODULES = sorted(path for path in MODELS.rglob("*.py") if path.name != "__init__.py")


def _relative_imports(source):
    """``(-level, module)`` of each top-level ``from .x import ...``, in the file's order."""
    return [(-node.level, node.module or "") for node in ast.parse(source).body
            if isinstance(node, ast.ImportFrom) and node.level > 0]


def test_the_order_is_checked():
    assert _relative_imports("from .b import x\nfrom ..a import y\n") != sorted(
        _relative_imports("from .b import x\nfrom ..a import y\n"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(MODELS)))
def test_package_imports_are_sorted(path):
    imports = _relative_imports(path.read_text())
    assert imports == sorted(imports), f"{path.name}: sort its imports, the farthest first, then by name"
