"""environment.yml gives conda users PyTorch from conda-forge, never PyPI's torch through pip.

On Linux, PyPI's torch is a CUDA build of several gigabytes; conda-forge's `pytorch` is solved
against the machine, so a laptop without an NVIDIA GPU gets the CPU build. This reads the file as
conda does and checks that torch reaches the environment only that way.
"""
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def test_torch_comes_from_conda_forge_in_the_projects_range():
    environment = _environment()
    assert environment["channels"] == ["conda-forge"]
    conda = [spec for spec in environment["dependencies"] if isinstance(spec, str)]
    assert "pytorch>=2.7" in conda  # the lower bound pyproject.toml declares
    assert "torch>=2.7" in (ROOT / "pyproject.toml").read_text()


def test_pip_installs_the_course_and_no_torch_of_its_own():
    pip = [spec for spec in _environment()["dependencies"] if isinstance(spec, dict)]
    assert len(pip) == 1
    requirements = pip[0]["pip"]
    assert requirements == ["-e .[dev]"]
    assert not any("torch" in requirement or "index-url" in requirement for requirement in requirements)
