"""Importing the trainer, the models or the data loads no plotting or widget library (the
trainer no date library either), importing the plots no seaborn, and the special tokens are one
set of ids. The direction of
imports between the package's layers is checked by `test_import_layers.py`."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.system  # each case starts a fresh Python
@pytest.mark.parametrize("statement, heavy", [
    ("from stepbystep import StepByStep; import stepbystep.training", ("matplotlib", "babel", "ipywidgets")),
    ("import stepbystep.models", ("matplotlib", "ipywidgets")),
    ("import stepbystep.data", ("matplotlib", "ipywidgets")),
    ("import stepbystep.plots", ("seaborn",)),  # only the figures that draw with it load it
])
def test_importing_loads_no_plotting_or_widget_library(statement, heavy):
    code = (f"import sys; {statement}; "
            f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}); "
            "assert not loaded, loaded")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_special_tokens_are_one_set_of_ids():
    from stepbystep import data
    from stepbystep.data import special_tokens, tokens

    assert (tokens.PAD, tokens.SOS, tokens.EOS, tokens.UNK) == (0, 1, 2, 3)
    assert (data.PAD, data.SOS, data.EOS, data.UNK) == (tokens.PAD, tokens.SOS, tokens.EOS, tokens.UNK)
    assert tokens.Vocab("ab").itos[:4] == list(special_tokens.SPECIALS)
    assert data.IGNORE_INDEX == -100
