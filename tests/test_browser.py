"""The widgets respond in a real browser: JupyterLab, driven through Debian's headless chromium.

A learner's experience is JupyterLab, not a Python object: this starts a private JupyterLab on
a copy of the course, opens a chapter, runs every cell, moves its widget and checks that the
figure was redrawn and that no cell failed. Chapter 02's mask explorer needs nothing but the
chapter's imports, so its test runs those two cells of the chapter, not the whole chapter again
(the notebook pass runs every chapter); chapter 15's token explorer runs the imports, the two
cells that build its tokenizer, and itself; chapter 16's ring explorer and chapter 17's memory
calculator, the imports and itself. Skipped (with the reason) where chromium, Playwright or
JupyterLab is missing; `.ci/run` installs them, so CI always runs it.
"""
import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # JupyterLab and a headless browser: make test-system

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
if importlib.util.find_spec("jupyterlab") is None:
    pytest.skip("JupyterLab is not installed: the lab extra (pip install -e '.[lab]')", allow_module_level=True)
if CHROMIUM is None:
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)", allow_module_level=True)

RUN_TIMEOUT_MS = 180_000
# The status bar reads "Python 3 (ipykernel) | Idle" once a kernel is connected and idle (the
# notebook's own execution indicator already says idle while no kernel has started).
KERNEL_IDLE = """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
    .some(item => /^(?!No Kernel).+ \\| Idle$/.test(item.textContent.trim()))"""
# Selectors are scoped to the notebook on show: the workspace may restore other notebooks, whose
# cells stay in the page in hidden tabs.
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
# Every code cell shows its execution count ("[3]:") once it ran, "[*]:" while queued or running.
# Run-all stops at the first error, leaving later cells unrun: an error output also ends the wait.
ALL_CELLS_RUN = f"""() => {{
    const prompts = [...document.querySelectorAll('{PANEL} .jp-CodeCell .jp-InputPrompt')];
    const failed = document.querySelector('{PANEL} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]');
    const done = prompts.length > 0 && prompts.every((p, i) => p.textContent.trim() === `[${{i + 1}}]:`);
    return ({KERNEL_IDLE})() && (done || (failed && /Error/.test(failed.textContent)));
}}"""


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cells_of(chapter, copy, call, setup=()):
    """Write to ``copy`` the chapter's first code cell (its imports), the code cells that begin with
    one of ``setup`` (what the widget needs, in order) and the code cell that is ``call``."""
    notebook = json.loads(chapter.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    widget = [cell for cell in code if "".join(cell["source"]).strip() == call]
    assert len(widget) == 1, f"{chapter.name} should have one cell {call!r}, found {len(widget)}"
    needed = []
    for start in setup:
        found = [cell for cell in code if "".join(cell["source"]).startswith(start)]
        assert len(found) == 1, f"{chapter.name} should have one cell starting {start!r}, found {len(found)}"
        needed += found
    notebook["cells"] = [code[0], *needed, widget[0]]
    copy.write_text(json.dumps(notebook))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on a copy of the notebooks, on a free loopback port with its own token and
    settings, so it never touches the learner's files or configuration. Yields its base URL."""
    root = tmp_path_factory.mktemp("lab")
    course = root / "course"
    course.mkdir()
    shutil.copy(NOTEBOOKS / "01_kernel_regression.ipynb", course)
    _cells_of(NOTEBOOKS / "02_self_attention.ipynb", course / "02_mask_explorer.ipynb", "mask_explorer()")
    _cells_of(NOTEBOOKS / "15_subword_tokens.ipynb", course / "15_token_explorer.ipynb", "token_explorer(tokenizer)",
              setup=["plays = shakespeare_plays()", "tokenizer = BytePairTokenizer.train(corpus, 4000"])
    _cells_of(NOTEBOOKS / "16_beyond_one_machine.ipynb", course / "16_ring_explorer.ipynb", "ring_explorer()")
    _cells_of(NOTEBOOKS / "17_after_llama.ipynb", course / "17_memory_explorer.ipynb", "memory_explorer()")
    port, token = _free_port(), secrets.token_hex(16)
    # render every cell (no windowing), so waiting on the prompts sees the whole notebook
    tracker = root / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"windowingMode": "none"}')
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / "config"), JUPYTER_DATA_DIR=str(root / "data"),
               JUPYTERLAB_SETTINGS_DIR=str(root / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(root / "runtime"),
               # the kernels import the package of this checkout, whatever else is installed
               PYTHONPATH=os.pathsep.join(filter(None, [str(NOTEBOOKS.parent), os.environ.get("PYTHONPATH")])))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course}",
         "--ServerApp.open_browser=False", "--ServerApp.allow_root=True", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("JupyterLab did not start within 60 s")
                time.sleep(0.5)
        yield base, token
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


def _menu(page, menu, command):
    page.locator(".lm-MenuBar-item", has_text=menu).first.click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').click()


def _open_and_run_all(browser, lab, notebook):
    """Open ``notebook``, wait for an idle kernel, clear the saved outputs, run every cell and
    wait until all have run; fail if any cell shows an error."""
    base, token = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(RUN_TIMEOUT_MS)
    page.goto(f"{base}/lab/tree/{notebook}?token={token}&reset")  # reset: a fresh workspace
    page.wait_for_selector(f"{PANEL} .jp-Cell")
    # a kernel that is still starting can pop up the kernel-selection dialog and swallow the run
    page.wait_for_function(KERNEL_IDLE)
    _menu(page, "Edit", "editmenu:clear-all")  # so no execution count seen below is a saved one
    # a fresh kernel numbers the cells 1, 2, 3, ... in order: the run is complete when they all are
    _menu(page, "Run", "runmenu:restart-and-run-all")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    try:
        page.wait_for_function(ALL_CELLS_RUN)
    except sync_api.TimeoutError:
        prompts = page.locator(f"{PANEL} .jp-CodeCell .jp-InputPrompt").all_inner_texts()
        status = page.locator(".jp-StatusBar-TextItem").all_inner_texts()
        raise AssertionError(f"{notebook}: not every cell ran in {RUN_TIMEOUT_MS / 1000:.0f} s; "
                             f"prompts {prompts}, status bar {status}") from None
    errors = page.locator(f'{PANEL} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    tracebacks = [text for text in errors.all_inner_texts() if "Traceback" in text or "Error" in text]
    assert not tracebacks, f"{notebook}: a cell failed in the browser:\n{tracebacks[0][:2000]}"
    return page


def _run_widget(browser, lab, notebook, control):
    """``_open_and_run_all`` on ``notebook``, then its last widget output holding a ``control`` (a CSS
    selector such as ".widget-slider"), scrolled into view: ``(page, widget)``."""
    page = _open_and_run_all(browser, lab, notebook)
    widget = page.locator(f"{PANEL} .jp-OutputArea-output", has=page.locator(control)).last
    widget.scroll_into_view_if_needed()
    return page, widget


def _widget_image(widget):
    """The src of the figure inside a widget's output area (a PNG data URL)."""
    image = widget.locator(".jupyter-widgets-output-area img, .widget-output img").first
    image.wait_for()
    return image.get_attribute("src")


def _wait_for_new_image(widget, before):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        src = _widget_image(widget)
        if src != before:
            return src
        time.sleep(0.2)
    raise AssertionError("the widget's figure did not change")


def test_sigma_slider_redraws_the_figure(browser, lab):
    page, widget = _run_widget(browser, lab, "01_kernel_regression.ipynb", ".widget-slider")
    before_image = _widget_image(widget)
    before_label = widget.locator(".widget-label").last.inner_text()
    handle = widget.locator(".noUi-handle").first
    handle.focus()
    for _ in range(10):
        handle.press("ArrowRight")
    after_image = _wait_for_new_image(widget, before_image)
    assert after_image.startswith("data:image/png")
    assert widget.locator(".widget-label").last.inner_text() != before_label
    page.close()


def test_mask_explorer_redraws_the_figure(browser, lab):
    page, widget = _run_widget(browser, lab, "02_mask_explorer.ipynb", ".widget-checkbox")
    before_image = _widget_image(widget)
    before_summary = widget.locator(".widget-html").last.inner_text()
    widget.locator(".widget-checkbox input").first.uncheck()  # causal mask off: query 2 sees every key
    _wait_for_new_image(widget, before_image)
    assert widget.locator(".widget-html").last.inner_text() != before_summary
    page.close()


def test_token_explorer_follows_its_slider_and_text(browser, lab):
    page, widget = _run_widget(browser, lab, "15_token_explorer.ipynb", ".widget-slider")
    summary = widget.locator(".widget-html").first
    spans = widget.locator(".widget-html span[title]")
    before_summary, before_spans = summary.inner_text(), spans.count()
    assert "3,743 merges applied" in before_summary and before_spans > 0
    handle = widget.locator(".noUi-handle").first
    handle.focus()
    handle.press("Home")  # the slider's minimum: 256 ids, bytes only
    page.wait_for_function("([el, before]) => el.innerText !== before", arg=[summary.element_handle(), before_summary])
    assert "0 merges applied" in summary.inner_text()
    count = "([el, n]) => el.querySelectorAll('.widget-html span[title]').length"  # the token spans, drawn apart from the summary
    page.wait_for_function(f"{count} > n", arg=[widget.element_handle(), before_spans])  # bytes only: one span per byte
    text = widget.locator("textarea").first
    text.fill("to be")
    text.blur()  # the box updates when it loses focus
    page.wait_for_function("el => el.innerText.includes('5 bytes')", arg=summary.element_handle())
    page.wait_for_function(f"{count} === n", arg=[widget.element_handle(), 5])
    assert spans.count() == 5
    page.close()


def test_ring_explorer_follows_its_step_and_workers(browser, lab):
    page, widget = _run_widget(browser, lab, "16_ring_explorer.ipynb", ".widget-slider")
    summary = widget.locator(".widget-html").first
    cells = widget.locator(".widget-html td[data-chunk]")
    before = summary.inner_text()
    assert "step 0 of 6" in before and cells.count() == 16  # 4 workers, 4 chunks each
    workers, step = widget.locator(".noUi-handle").nth(0), widget.locator(".noUi-handle").nth(1)
    step.focus()
    step.press("End")  # the last step: every worker holds every chunk summed
    page.wait_for_function("([el, before]) => el.innerText !== before", arg=[summary.element_handle(), before])
    assert "step 6 of 6 (all-gather)" in summary.inner_text() and "744 MB of the 744 MB" in summary.inner_text()
    assert widget.locator(".widget-html td", has_text="0+1+2+3").count() == 16
    before = summary.inner_text()
    workers.focus()
    workers.press("Home")  # two workers: two steps, the step clamped to the last
    page.wait_for_function("el => el.innerText.includes('of 2')", arg=summary.element_handle())
    assert "step 2 of 2 (all-gather)" in summary.inner_text() and cells.count() == 4
    page.close()


def test_memory_explorer_fills_in_a_published_configuration_and_follows_its_controls(browser, lab):
    page, widget = _run_widget(browser, lab, "17_memory_explorer.ipynb", ".widget-slider")
    summary = widget.locator(".widget-html").first
    before_image, before = _widget_image(widget), summary.inner_text()
    assert "DeepSeek-V3 as published: latent" in before and "68.62 KiB per token" in before
    widget.locator("select").first.select_option("Mistral 7B v0.1")  # the menu of published configurations
    page.wait_for_function("el => el.innerText.includes('Mistral 7B v0.1 as published')", arg=summary.element_handle())
    assert "windows of 4,096 (+ 0 sinks) in 32 of 32 layers" in summary.inner_text()
    assert "128.00 KiB per token, 512.00 MiB for 32,768 tokens" in summary.inner_text()
    _wait_for_new_image(widget, before_image)
    handle = widget.locator(".widget-slider", has_text="sinks").locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")  # one sink: the configuration is no longer Mistral's as published
    page.wait_for_function("el => el.innerText.includes('(+ 1 sinks)')", arg=summary.element_handle())
    assert "as published" not in summary.inner_text() and "512.12 MiB" in summary.inner_text()
    page.close()
