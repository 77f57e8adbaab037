"""The layers run one way: the trainer, the models and the tokens load no plotting, date or
widget library, and names that moved stay importable where the chapters import them."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("matplotlib", "babel", "ipywidgets")


@pytest.mark.parametrize("statement", [
    "from stepbystep import StepByStep; import stepbystep.trainer",
    "import stepbystep.models",
    "import stepbystep.data.tokens; from stepbystep.data import PAD, EOS, IGNORE_INDEX, Vocab",
])
def test_importing_loads_no_matplotlib_babel_or_ipywidgets(statement):
    code = (f"import sys; {statement}; "
            f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}); "
            "assert not heavy, heavy")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_special_tokens_are_one_set_of_ids():
    from stepbystep import data, models
    from stepbystep.data import date_completions, special_tokens, tokens

    assert (tokens.PAD, tokens.SOS, tokens.EOS, tokens.UNK) == (0, 1, 2, 3)
    assert (data.PAD, data.SOS, data.EOS, data.UNK) == (tokens.PAD, tokens.SOS, tokens.EOS, tokens.UNK)
    assert tokens.Vocab("ab").itos[:4] == list(special_tokens.SPECIALS)
    assert data.IGNORE_INDEX == date_completions.IGNORE_INDEX == models.IGNORE_INDEX == -100


def test_moved_names_stay_importable_where_the_chapters_import_them():
    from stepbystep.data import check_text as from_data
    from stepbystep.data.dates import check_text
    from stepbystep.widget_states import KernelFit, kernel_fit

    assert from_data is check_text  # chapters 08 and 09
    assert kernel_fit.__module__ == KernelFit.__module__ == "stepbystep.widget_states"
    with pytest.raises(AttributeError, match="no attribute 'kernel_fit'"):
        import stepbystep.models as models

        models.kernel_fit  # chapter 01's widget glue is not a generic model


def test_the_lazy_data_names_are_the_modules_own():
    import stepbystep.data as data
    from stepbystep.data import date_completions, dates

    assert data.date_pairs is dates.date_pairs and data.prompt_ids is date_completions.prompt_ids
    assert {"date_pairs", "prompt_ids", "Vocab"} <= set(dir(data)) and "complete_dates" not in dir(data)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        data.no_such_name
