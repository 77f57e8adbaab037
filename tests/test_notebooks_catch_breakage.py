"""The notebooks as a test suite fail when an idea in the package breaks (`make test-breakage`).

Each case breaks one idea in a copy of the package (a kernel, a scaling, a mask, an encoding,
a residual connection, a training step) and runs the chapter that teaches it under strict
nbval, with the broken copy first on the path. The chapter must fail: its checks bound what the
prose claims, so a course that still passed would be checking nothing. The break is a literal
edit that must match exactly once, so a case cannot silently stop breaking anything when the
code it edits changes.

These runs take minutes, so they are marked ``breakage`` and left out of the plain
``pytest tests/``; CI runs them with ``make test-breakage``.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (id, file in stepbystep/, the original text, the broken text, the chapter that must fail)
BREAKS = [
    ("kernel-width-not-squared", "models/kernel_regression.py",
     "scores = -(distance**2) / (2 * sigma**2)", "scores = -(distance**2) / (2 * sigma)",
     "01_kernel_regression"),
    ("training-step-skipped", "trainer.py",
     "[\"lr\"])\n            self.optimizer.step()\n", "[\"lr\"])\n            pass  # broken: no update\n",
     "01_kernel_regression"),
    ("scores-not-scaled", "models/attention/scaled_dot_product.py",
     "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", "scores = q @ k.transpose(-2, -1)",
     "02_self_attention"),
    ("no-positional-encoding", "models/positions/sinusoidal.py",
     "table[:, 0::2] = torch.sin(angles)", "table[:, 0::2] = 0 * angles",
     "02_self_attention"),
    ("no-residual-connection", "models/seq2seq/layers.py",
     "out = x + self.drop(sublayer(sub_in, **kwargs))", "out = self.drop(sublayer(sub_in, **kwargs))",
     "04_stacking_layers"),
    ("causal-mask-sees-the-future", "models/attention/masks.py",
     "return torch.tril(ones).unsqueeze(0)", "return torch.ones_like(ones).unsqueeze(0)",
     "05_transformer"),
    ("padding-mask-not-converted", "models/attention/masks.py",
     "    return blocked[:, 0, :]  # (N, L)\n", "    return ~blocked[:, 0, :]  # (N, L)\n",
     "06_torch_transformer"),
    ("patches-read-column-by-column", "models/vit.py",
     "return grid.flatten(2).transpose(1, 2)", "return grid.transpose(2, 3).flatten(2).transpose(1, 2)",
     "11_vision_transformer"),
    ("kv-cache-never-read", "models/attention/narrow.py",
     "                k, v = cache.extend(k, v)  # (N, h, t, d_k): the earlier tokens' too\n",
     "                cache.extend(k, v)\n",
     "09_decoder_only"),
    ("10-rope-angle-not-proportional-to-position", "models/positions/rotary.py",
     "angles = self.angles(torch.arange(max_len))",
     "angles = self.angles(torch.arange(max_len) ** 1.5)",
     "10_positions"),
]


def _broken_package(tmp_path, relative, original, broken):
    copy = tmp_path / "stepbystep"
    shutil.copytree(ROOT / "stepbystep", copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / relative
    source = target.read_text()
    assert source.count(original) == 1, (
        f"the break for {relative} no longer matches its code exactly once: update BREAKS")
    target.write_text(source.replace(original, broken))
    return tmp_path


@pytest.mark.breakage
@pytest.mark.parametrize("name, relative, original, broken, chapter", BREAKS, ids=[b[0] for b in BREAKS])
def test_chapter_fails_when_its_idea_breaks(tmp_path, name, relative, original, broken, chapter):
    package_root = _broken_package(tmp_path, relative, original, broken)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package_root), os.environ.get("PYTHONPATH", "")]))
    check = subprocess.run(  # from notebooks/, where the kernels run, not the project root
        [sys.executable, "-c", "import stepbystep; print(stepbystep.__file__)"],
        cwd=ROOT / "notebooks", env=env, capture_output=True, text=True, check=True)
    assert check.stdout.strip().startswith(str(package_root)), "the broken copy must shadow the package"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", f"notebooks/{chapter}.ipynb", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 1, (
        f"{chapter} passed (exit {run.returncode}) with {name}: its checks do not catch that break\n"
        + run.stdout[-3000:])
