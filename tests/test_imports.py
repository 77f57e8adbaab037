"""The trainer is a light layer: importing it loads no plotting, date or widget library."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_trainer_loads_no_matplotlib_babel_or_ipywidgets():
    code = ("import sys; from stepbystep import StepByStep; "
            "heavy = sorted(m for m in sys.modules if m.startswith(('matplotlib', 'babel', 'ipywidgets'))); "
            "assert not heavy, heavy")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
