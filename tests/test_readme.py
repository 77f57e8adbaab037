"""The README's "use stepbystep in your own notebook" example runs as written and does what it says."""
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def _example_code():
    text = README.read_text()
    section = text.split("## Use stepbystep in your own notebook", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
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
