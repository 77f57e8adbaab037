"""make html: the course as a website, for reading before installing.

Builds the site once, the way `make html` does (Sphinx with the configuration in
notebooks/_site/), into a temporary folder, with every Sphinx warning an error, and checks what
a reader relies on: the README is the landing page and lists the chapters in order under
clean titles, every chapter has its page, every link and image on every page resolves, the
previous/next links walk through the course in order, and widgets appear as their still images.
"""
import html
import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytestmark = pytest.mark.system  # builds the site with Sphinx: make test-system

ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = ROOT / "notebooks" / "_site"
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# A clean title is plain text: "Chapter 01: attention as kernel regression".
CLEAN_TITLE = re.compile(r"Chapter (\d\d): \S(.*\S)?")
MARKDOWN = re.compile(r"[`*\[\]<>#$\\]|(^|\W)_|_(\W|$)")


# what notebooks/_site/conf.py and the build import; tried in a fresh Python, so that a partial
# install never enters this process (a half-installed Sphinx once broke transformers' imports here)
SITE_TOOLS = "import sphinx.ext.autodoc, myst_nb, sphinx_copybutton, sphinx_book_theme"


@pytest.fixture(scope="module")
def site_tools():
    """Skip, with the reason, where the site's tools do not import."""
    done = subprocess.run([sys.executable, "-c", SITE_TOOLS], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no message"])[-1]
        pytest.skip(f"make html needs the dev extra (pip install -e '.[dev]'): {reason}")


@pytest.fixture(scope="module")
def site(site_tools, tmp_path_factory):
    """Build the site from scratch, every warning an error; returns the output folder."""
    build = tmp_path_factory.mktemp("build")
    output = build / "site"
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-W", "--keep-going",
               "-c", str(CONF_DIR), "-d", str(build / "doctrees"), str(ROOT), str(output)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, f"make html failed or warned:\n{done.stdout}\n{done.stderr}"
    print(f"site built in {seconds:.1f} s")
    # MyST-NB's scratch copies of the figures stay with the doctrees, not next to the output
    # (which, for `make html`, would be the repository root)
    assert not (build / "jupyter_execute").exists()
    return output


def _page(path):
    return Path(path).read_text(encoding="utf-8")


def _chapter_page(site, notebook):
    return site / "notebooks" / f"{notebook.stem}.html"


def _heading(notebook):
    """The notebook's first Markdown heading, as written."""
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return None


def _text(fragment):
    """The text of an HTML fragment, typographic apostrophes back to plain ones."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).replace("\u2019", "'").strip()


def _links(fragment):
    """(href, inner HTML) of every link in an HTML fragment."""
    return re.findall(r'<a [^>]*?href="([^"]*)"[^>]*>(.*?)</a>', fragment, flags=re.DOTALL)


def _page_title(page):
    """The HTML of the page's own first heading (the article's, not the header's copy)."""
    for heading in re.findall(r"<h1>(.*?)</h1>", page, flags=re.DOTALL):
        if 'class="headerlink"' in heading:
            return re.sub(r'<a class="headerlink".*?</a>', "", heading, flags=re.DOTALL)
    raise AssertionError("the page has no heading")


def _chapter_list(page):
    """The (href, inner HTML) of the chapter list of the landing page."""
    block = re.search(r'<div class="toctree-wrapper compound">(.*?)</div>', page, flags=re.DOTALL)
    assert block, "the landing page has no list of chapters"
    return _links(block.group(1))


def test_the_chapters_are_numbered_from_01_without_a_gap():
    """The tests below run once per chapter: they must find every one of the course's eleven."""
    numbers = [path.name[:2] for path in CHAPTERS]
    assert len(numbers) >= 11 and numbers == [f"{n:02d}" for n in range(1, len(numbers) + 1)], numbers


def test_the_chapters_are_the_only_pages_from_the_notebooks_folder(site):
    """notebooks/README.md, the .py twins and the site's own configuration are not pages."""
    pages = sorted(path.name for path in (site / "notebooks").glob("*.html"))
    assert pages == [f"{path.stem}.html" for path in CHAPTERS]


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_title_is_its_first_heading_and_clean(notebook):
    heading = _heading(notebook)
    assert heading is not None, f"{notebook.name} has no heading: its first one is the page's title"
    match = CLEAN_TITLE.fullmatch(heading)
    assert match and match.group(1) == notebook.name[:2], (
        f"{notebook.name}'s first heading is {heading!r}: expected 'Chapter {notebook.name[:2]}: ...'")
    assert not MARKDOWN.search(heading), (
        f"{notebook.name}'s first heading {heading!r} has Markdown in it: a title is plain text")


def test_the_readme_is_the_landing_page(site):
    index = _page(site / "index.html")
    assert index == _page(site / "README.html")
    title = _page_title(index)
    readme_title = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
    assert _text(title) == readme_title


def test_the_landing_page_lists_every_chapter_in_order_with_its_clean_title(site):
    listed = _chapter_list(_page(site / "index.html"))
    assert [href for href, _ in listed] == [f"notebooks/{path.stem}.html" for path in CHAPTERS]
    for (_, inner), notebook in zip(listed, CHAPTERS):
        assert "<" not in inner and not MARKDOWN.search(_text(inner)), f"not plain text: {inner!r}"
        assert CLEAN_TITLE.fullmatch(_text(inner)), f"not 'Chapter NN: ...': {_text(inner)!r}"
        assert _text(inner) == _heading(notebook).replace("\u2019", "'")


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_its_page_and_the_same_sidebar(site, notebook):
    page = _page(_chapter_page(site, notebook))
    nav = re.search(r'<nav class="[^"]*\bbd-docs-nav\b[^"]*"[^>]*>(.*?)</nav>', page, flags=re.DOTALL)
    assert nav, f"{notebook.stem}.html has no sidebar"
    listed = _chapter_list(_page(site / "index.html"))
    assert [_text(inner) for _, inner in _links(nav.group(1))] == [_text(inner) for _, inner in listed]
    title = _page_title(page)
    assert _text(title) == _text(listed[CHAPTERS.index(notebook)][1])
    assert 'class="copybtn' in page or "copybutton.js" in page  # copy buttons on code cells


def test_previous_and_next_walk_through_the_course_in_order(site):
    pages = [site / "README.html"] + [_chapter_page(site, path) for path in CHAPTERS]
    for number, page in enumerate(pages):
        text = _page(page)
        links = {kind: (page.parent / unquote(href)).resolve()
                 for kind, href in re.findall(r'<a class="(left-prev|right-next)"\s+href="([^"]+)"', text)}
        expected = {}
        if number > 0:
            expected["left-prev"] = pages[number - 1].resolve()
        if number < len(pages) - 1:
            expected["right-next"] = pages[number + 1].resolve()
        assert links == expected, f"previous/next of {page.name}"


def test_every_internal_link_and_image_resolves(site):
    """Every relative href/src on every page names a file of the site, and every #anchor an id."""
    ids = {}

    def page_ids(path):
        if path not in ids:
            ids[path] = set(re.findall(r'\bid="([^"]+)"', _page(path)))
        return ids[path]

    pages = sorted(path for path in site.rglob("*.html") if "_static" not in path.parts)  # not templates
    assert len(pages) >= len(CHAPTERS) + 3  # chapters, README/index, search, genindex
    broken = []
    for page in pages:
        for target in re.findall(r'\b(?:href|src)="([^"]*)"', _page(page)):
            parts = urlsplit(html.unescape(target))
            if parts.scheme or parts.netloc or target.startswith(("mailto:", "javascript:")):
                continue  # external: MathJax's CDN, the theme's links
            path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not path.is_file():
                broken.append(f"{page.relative_to(site)}: {target}")
            elif parts.fragment and path.suffix == ".html" and unquote(parts.fragment) not in page_ids(path):
                broken.append(f"{page.relative_to(site)}: {target} (no such anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_search_math_and_figures(site):
    assert (site / "search.html").is_file()
    index = (site / "searchindex.js").read_text(encoding="utf-8")
    assert "nadaraya" in index.lower()  # chapter 01's text is searchable
    page = _page(_chapter_page(site, CHAPTERS[0]))
    assert 'class="math' in page and "mathjax" in page.lower()  # MathJax renders it when read
    figures = re.findall(r'<img [^>]*src="([^"]+\.png)"', page)
    assert len(figures) >= 3 and all((site / "notebooks" / unquote(src)).is_file() for src in figures)


def test_widgets_appear_as_their_stills_with_a_note(site):
    conf = _conf()
    shown = 0
    for notebook in CHAPTERS:
        outputs = [output for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
                   for output in cell.get("outputs", [])]
        stills = sum(WIDGET_VIEW in o.get("data", {}) and any(kind in o["data"] for kind in conf.STILLS)
                     for o in outputs)
        page = _page(_chapter_page(site, notebook))
        assert page.count(conf.LIVE_NOTE.split(":")[0].strip("*")) == stills, notebook.name
        assert "widget-state+json" not in page and "html-manager" not in page, notebook.name
        shown += stills
    assert shown >= 6  # chapters 01 to 04 and 08 have a live widget with an image, 15 one with HTML


def _conf():
    spec = importlib.util.spec_from_file_location("site_conf", CONF_DIR / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_widget_hook_keeps_the_still_adds_the_note_and_drops_bare_widgets(site_tools):
    conf = _conf()
    view = {"model_id": "x", "version_major": 2, "version_minor": 0}
    notebook = {"metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}}}},
                "cells": [{"cell_type": "code", "source": "box", "outputs": [
                    {"output_type": "execute_result", "metadata": {}, "execution_count": 1,
                     "data": {WIDGET_VIEW: view, "image/png": "iVBORw0KGgo=", "text/plain": "FigureBox(...)"}},
                    {"output_type": "display_data", "metadata": {},
                     "data": {WIDGET_VIEW: view, "text/plain": "  0%|          | 0/2"}},
                    {"output_type": "stream", "name": "stdout", "text": "done\n"},
                ]}, {"cell_type": "markdown", "source": "text"}]}
    source = [json.dumps(notebook)]
    conf._widgets_as_stills(None, "notebooks/99_widgets", source)
    result = json.loads(source[0])
    assert "widgets" not in result["metadata"]
    outputs = result["cells"][0]["outputs"]
    assert [list(output.get("data", {})) for output in outputs] == [["image/png"], ["text/markdown"], []]
    assert outputs[1]["data"]["text/markdown"] == conf.LIVE_NOTE and "JupyterLab" in conf.LIVE_NOTE
    assert outputs[2] == notebook["cells"][0]["outputs"][2]
    untouched = [json.dumps(notebook)]
    conf._widgets_as_stills(None, "README", untouched)  # the landing page is Markdown, not JSON
    assert untouched == [json.dumps(notebook)]


def test_the_widget_hook_keeps_an_html_still_and_prefers_the_image(site_tools):
    conf = _conf()
    view = {"model_id": "x", "version_major": 2, "version_minor": 0}
    html_box = {"output_type": "display_data", "metadata": {},
                "data": {WIDGET_VIEW: view, "text/html": "<b>12</b> tokens", "text/plain": "TokenBox(...)"}}
    both = {"output_type": "display_data", "metadata": {},
            "data": {WIDGET_VIEW: view, "image/png": "iVBORw0KGgo=", "text/html": "<p>x</p>", "text/plain": "Box"}}
    notebook = {"metadata": {}, "cells": [{"cell_type": "code", "source": "box", "outputs": [html_box, both]}]}
    source = [json.dumps(notebook)]
    conf._widgets_as_stills(None, "notebooks/99_widgets", source)
    outputs = json.loads(source[0])["cells"][0]["outputs"]
    assert [output["data"] for output in outputs] == [
        {"text/html": "<b>12</b> tokens"}, {"text/markdown": conf.LIVE_NOTE},
        {"image/png": "iVBORw0KGgo="}, {"text/markdown": conf.LIVE_NOTE}]
