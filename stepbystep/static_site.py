"""A browsable HTML copy of the executed course, for reading before installing (``make html``).

Each chapter's committed ``.ipynb`` (executed, outputs included) becomes one HTML page, and an
index page links them in order. A live widget cannot run without a kernel, so where a widget's
output also carries a still PNG of its figure (the course's widgets offer one), the page shows
that still image instead of an empty widget placeholder.

Run it as ``python -m stepbystep.static_site [notebooks_dir] [output_dir]``.
"""
import html
import sys
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor

__all__ = ["build", "chapter_title"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class WidgetStills(Preprocessor):
    """Replace widget views by the still figure saved next to them, when there is one."""

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data and "image/png" in data:
                del data[WIDGET_VIEW]
        return cell, resources


def chapter_title(notebook):
    """The text of the notebook's first Markdown heading (``# Chapter 01: ...``)."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return None


def _index_page(chapters):
    items = "\n".join(f'    <li><a href="{html.escape(page)}">{html.escape(title)}</a></li>'
                      for page, title in chapters)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>stepbystep: attention and the Transformer, step by step</title>
  <style>body {{ font-family: sans-serif; max-width: 46rem; margin: 3rem auto; line-height: 1.5; }}</style>
</head>
<body>
  <h1>stepbystep: attention and the Transformer, step by step</h1>
  <p>A read-only copy of the executed course. To run it, move the sliders and do the exercises,
  clone the repository and type <code>make lab</code>.</p>
  <ol>
{items}
  </ol>
</body>
</html>
"""


def build(notebooks_dir, output_dir):
    """Write one HTML page per chapter (``NN_name.ipynb``) and ``index.html`` into ``output_dir``.

    Returns the list of written page paths, index first. Raises ``FileNotFoundError`` when
    ``notebooks_dir`` holds no chapter.
    """
    notebooks_dir, output_dir = Path(notebooks_dir), Path(output_dir)
    paths = sorted(notebooks_dir.glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no chapters (NN_name.ipynb) in {str(notebooks_dir)!r}")
    output_dir.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter(template_name="lab")
    exporter.register_preprocessor(WidgetStills, enabled=True)
    chapters, written = [], []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"name": path.stem}})
        page = output_dir / f"{path.stem}.html"
        page.write_text(body, encoding="utf-8")
        chapters.append((page.name, chapter_title(notebook) or path.stem))
        written.append(page)
    index = output_dir / "index.html"
    index.write_text(_index_page(chapters), encoding="utf-8")
    return [index, *written]


if __name__ == "__main__":
    source = sys.argv[1] if len(sys.argv) > 1 else "notebooks"
    target = sys.argv[2] if len(sys.argv) > 2 else "site"
    pages = build(source, target)
    print(f"wrote {len(pages)} pages to {target}/ (open {pages[0]})")
