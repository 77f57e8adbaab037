"""make lab starts JupyterLab without asking whether to fetch Jupyter's news, and shows the
course's first page, notebooks/README.md, rendered.

The Makefile's install step writes a settings override into the environment
({sys.prefix}/share/jupyter/lab/settings/overrides.json), not into the learner's home. This runs
that very rule into a throw-away folder and reads the result back through JupyterLab's own
settings code, against the schemas of the JupyterLab installed here.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # runs the Makefile's rules: make test-system

get_app_dir = pytest.importorskip("jupyterlab.commands", reason="JupyterLab is not installed: make lab needs "
                                  "the lab extra (pip install -e '.[lab]')").get_app_dir
get_settings = pytest.importorskip("jupyterlab_server.settings_utils", reason="jupyterlab_server is not "
                                   "installed: it comes with JupyterLab, the lab extra").get_settings

ROOT = Path(__file__).resolve().parents[1]
NEWS = "@jupyterlab/apputils-extension:notification"
VIEWERS = "@jupyterlab/docmanager-extension:plugin"
OVERRIDES = Path("share", "jupyter", "lab", "settings", "overrides.json")


if shutil.which("make") is None:
    pytest.skip("make is not installed: these tests run the Makefile's rules", allow_module_level=True)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The overrides file as `make install` writes it into a virtual environment at VENV."""
    venv = tmp_path_factory.mktemp("venv")
    target = venv / OVERRIDES
    # -o: take the environment as installed, so only the overrides rule runs
    subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), f"VENV={venv}",
                    "-o", str(venv / ".installed"), str(target)],
                   check=True, capture_output=True, text=True, timeout=60)
    return venv, target


def test_jupyterlab_reads_overrides_where_the_makefile_writes_them():
    assert Path(get_app_dir()).resolve() == (Path(sys.prefix) / "share" / "jupyter" / "lab").resolve()
    assert "$(VENV)/" + OVERRIDES.as_posix() in (ROOT / "Makefile").read_text()


def test_the_overrides_turn_the_news_off_and_render_markdown_and_nothing_else(written):
    _, target = written
    assert json.loads(target.read_text()) == {
        NEWS: {"fetchNews": "false"},
        VIEWERS: {"defaultViewers": {"markdown": "Markdown Preview"}},
    }


def _setting(target, schema_name, settings_dir):
    """A plugin's setting as JupyterLab's server hands it to the page, with the overrides."""
    schemas = Path(get_app_dir()) / "schemas"
    setting, _ = get_settings(str(target.parent), str(schemas), str(settings_dir), schema_name=schema_name)
    return setting


def test_jupyterlab_applies_them_and_its_schemas_allow_them(written, tmp_path):
    _, target = written
    news = _setting(target, NEWS, tmp_path)["schema"]["properties"]["fetchNews"]
    assert news["default"] == "false"  # the override replaced "none", which asks on first start
    assert "false" in [choice["const"] for choice in news["oneOf"]]  # "Never", a value it accepts
    viewers = _setting(target, VIEWERS, tmp_path)["schema"]["properties"]["defaultViewers"]
    assert viewers["default"] == {"markdown": "Markdown Preview"}
    assert viewers["additionalProperties"] == {"type": "string"}

