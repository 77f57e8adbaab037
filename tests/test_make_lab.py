"""`make lab`, as a learner types it: the address it prints opens the course's first page.

On a headless box, a container, WSL or any machine where no browser opens by itself, the learner
copies the address JupyterLab prints. This starts the Makefile's own `lab` rule (with LAB_ARGS for
a free port and no browser, and private Jupyter folders), reads the address from
its output, and opens it in Debian's headless chromium: the page must be notebooks/README.md,
rendered. Skipped (with the reason) where make, chromium or Playwright is missing; `.ci/run`
installs chromium, so CI runs it.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # runs the Makefile's lab rule and a browser: make test-system

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if shutil.which("make") is None:
    pytest.skip("make is not installed: this test runs the Makefile's lab rule", allow_module_level=True)
pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install -e '.[lab]')")
ADDRESS = re.compile(r"http://127\.0\.0\.1:\d+/\S*token=[0-9a-f]+")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def printed_address(tmp_path_factory):
    """Start `make lab LAB_ARGS="--no-browser --port=P"` in its own process group; yield the
    address it prints for 127.0.0.1, then stop that group alone."""
    root = tmp_path_factory.mktemp("make_lab")
    port = _free_port()
    # no JUPYTER_TOKEN: JupyterLab makes up a token and prints it, as a learner sees it
    env = {name: value for name, value in os.environ.items() if name != "JUPYTER_TOKEN"}
    env.update(JUPYTER_CONFIG_DIR=str(root / "config"), JUPYTER_DATA_DIR=str(root / "data"),
               JUPYTER_RUNTIME_DIR=str(root / "runtime"), JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"))
    log = root / "lab.log"
    with log.open("w") as out:
        # -o install: the environment the test suite runs in is the installed one
        lab = subprocess.Popen(["make", "--no-print-directory", "-C", str(ROOT), "-o", "install", "lab",
                                f"LAB_ARGS=--no-browser --port={port}"],
                               env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (found := ADDRESS.search(log.read_text())):
            if time.monotonic() > deadline or lab.poll() is not None:
                raise AssertionError(f"make lab printed no address within 90 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        while True:  # the address is printed as the server starts: wait until its port takes a connection
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline or lab.poll() is not None:
                    raise AssertionError(f"make lab printed {found.group(0)} but nothing listens on port {port}:\n"
                                         f"{log.read_text()[-3000:]}") from None
                time.sleep(0.5)
        yield found.group(0), port
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)


def test_the_printed_address_leads_to_the_first_page_on_the_chosen_port(printed_address):
    address, port = printed_address
    parts = urllib.parse.urlsplit(address)
    assert parts.port == port  # LAB_ARGS reached JupyterLab
    assert parts.path == "/lab/tree/README.md"
    assert (ROOT / "notebooks" / "README.md").is_file()
    with urllib.request.urlopen(address, timeout=30) as response:
        assert response.status == 200  # the token is accepted: the page logs the learner in


def test_the_printed_address_shows_the_first_page_rendered(printed_address):
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    address, _ = printed_address
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(90_000)
            page.goto(address)
            heading = page.locator(".jp-RenderedMarkdown h1", has_text="Start here")
            heading.first.wait_for()  # rendered Markdown, not the text editor or the Launcher
            assert page.locator(".jp-RenderedMarkdown", has_text="01_kernel_regression.ipynb").count() >= 1
        finally:
            browser.close()
