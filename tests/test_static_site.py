"""make html: a browsable copy of the executed course whose pages exist and whose links resolve."""
import re
from pathlib import Path

import nbformat
import pytest

from stepbystep.static_site import WIDGET_VIEW, build, chapter_title

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    output = tmp_path_factory.mktemp("site")
    return output, build(NOTEBOOKS, output)


def test_every_chapter_has_a_page_and_the_index_links_them_in_order(site):
    output, pages = site
    chapters = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert pages[0].name == "index.html"
    assert [page.name for page in pages[1:]] == [f"{path.stem}.html" for path in chapters]
    links = re.findall(r'href="([^"]+)"', (output / "index.html").read_text())
    assert links == [f"{path.stem}.html" for path in chapters]
    for link in links:
        assert (output / link).is_file()
    titles = re.findall(r'<a href="[^"]+">([^<]+)</a>', (output / "index.html").read_text())
    assert titles[0].startswith("Chapter 01")


def test_chapter_pages_show_code_prose_and_figures(site):
    output, _ = site
    page = (output / "01_kernel_regression.html").read_text()
    assert "Chapter 01" in page and "nadaraya_watson" in page
    assert "data:image/png;base64" in page  # the figures are embedded


def test_a_widget_with_a_still_figure_is_shown_as_that_figure():
    still = "iVBORw0KGgo="
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Chapter 99: widgets"),
        nbformat.v4.new_code_cell("box", outputs=[nbformat.v4.new_output(
            "display_data", data={WIDGET_VIEW: {"model_id": "x", "version_major": 2, "version_minor": 0},
                                  "image/png": still, "text/plain": "VBox(...)"})]),
    ])
    from stepbystep.static_site import WidgetStills

    cell, _ = WidgetStills().preprocess_cell(notebook.cells[1], {}, 1)
    assert set(cell.outputs[0].data) == {"image/png", "text/plain"}
    assert chapter_title(notebook) == "Chapter 99: widgets"


def test_an_empty_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no chapters"):
        build(tmp_path, tmp_path / "site")
