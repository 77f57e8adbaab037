"""Sphinx configuration of the course's website (``make html``).

The site is built from the repository as it is committed: the top-level README.md is the
landing page and every executed chapter, ``notebooks/NN_name.ipynb``, is one page, in order.
Nothing is executed (the notebooks carry their outputs) and nothing is downloaded: the build
works offline. The page that a reader opens needs the network only for MathJax, which renders
the formulas from its CDN.

This file lives in ``notebooks/_site/`` so that the top level of the repository stays as it is;
``make html`` points Sphinx at it with ``-c notebooks/_site`` and reads the repository root:

    sphinx-build -b html -c notebooks/_site . site

Two hooks adapt the committed files to a page that no kernel runs:

- the landing page gets the list of chapters, discovered when the site is built, so a new
  chapter appears without editing this file; its links to files of the repository that are not
  pages of the site (``benchmarks/RESULTS.md``, the ``notebooks/`` folder) keep their text
  but lose the link, which would lead nowhere;
- a widget cannot move without a kernel, so a widget output that carries a still of its view
  (the course's widgets save one: an image of a figure, or HTML, as chapter 15's token
  explorer) is shown as that still, with a line saying it is live in JupyterLab; a widget
  without a still (a progress bar) is left out.
"""
import json
import shutil
from pathlib import Path

from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

ROOT = Path(__file__).resolve().parents[2]
ROOT_DOC = "README"
CHAPTERS = "notebooks/[0-9][0-9]_*.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STILLS = ("image/png", "text/html")  # what a widget output may carry as its still, the first found wins
LIVE_NOTE = ("*A still image of an interactive widget: run this chapter in JupyterLab "
             "(`make lab`) to move its controls.*")

project = "stepbystep"
author = "the stepbystep authors"
html_title = "stepbystep: attention and the Transformer"
root_doc = ROOT_DOC

extensions = ["myst_nb", "sphinx_copybutton"]

# Read only the landing page and the chapters. Every other entry at the top level (the virtual
# environment, .git, the output folder, the package) is excluded by name, so Sphinx never walks
# into it; the chapter list itself is a pattern, so new chapters need no edit here.
include_patterns = [f"{ROOT_DOC}.md", CHAPTERS]
exclude_patterns = sorted(
    [entry.name for entry in ROOT.iterdir() if entry.name not in {f"{ROOT_DOC}.md", "notebooks"}]
    + ["notebooks/_site", "**/.ipynb_checkpoints"]
)

# The committed notebooks are the executed course: show their outputs, never re-run them.
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": True,
}
# The download button offers each page's source: a chapter's notebook, to run it at home.
html_show_sourcelink = False
# A copy button on every code block and code cell, not on the outputs.
copybutton_selector = "div:not(.output) > div.highlight > pre"


def chapters():
    """The chapters' document names, in order: ``notebooks/01_kernel_regression`` ..."""
    return [path.relative_to(ROOT).with_suffix("").as_posix() for path in sorted(ROOT.glob(CHAPTERS))]


def _add_chapter_list(app, docname, source):
    """Give the landing page a table of contents of the chapters, after its chapter table."""
    if docname != ROOT_DOC:
        return
    entries = "\n".join(chapters())
    toctree = f"\n```{{toctree}}\n:caption: Read the chapters\n:maxdepth: 1\n\n{entries}\n```\n\n"
    text = source[0]
    start = text.find("\n## Chapters")
    end = text.find("\n## ", start + 1) if start >= 0 else -1
    source[0] = text + toctree if end < 0 else text[:end] + "\n" + toctree + text[end:]


def _widgets_as_stills(app, docname, source):
    """Show each widget output as its still (an image, else HTML), or leave it out if it has none."""
    if not docname.startswith("notebooks/"):
        return
    notebook = json.loads(source[0])
    notebook.get("metadata", {}).pop("widgets", None)  # no widget state: no widget scripts
    for cell in notebook.get("cells", []):
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            still = next((kind for kind in STILLS if kind in data), None)
            if WIDGET_VIEW not in data:
                outputs.append(output)
            elif still is not None:
                outputs.append({**output, "data": {still: data[still]}})
                outputs.append({"output_type": "display_data", "metadata": {},
                                "data": {"text/markdown": LIVE_NOTE}})
        if "outputs" in cell:
            cell["outputs"] = outputs
    source[0] = json.dumps(notebook)


class RepositoryLinksAsText(SphinxPostTransform):
    """A Markdown link to a repository file or folder that is not a page becomes its text.

    Runs before MyST resolves its links (priority 9), which would warn about each of them.
    """

    default_priority = 8

    def run(self, **kwargs):
        env = self.env
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") != "myst" or not node.children:
                continue
            target = node["reftarget"]
            if node.get("refdomain") == "doc":
                dangling = target not in env.all_docs
            elif node.get("refdomain") is None and "://" not in target:
                _, path = env.relfn2path(target.split("#", 1)[0], node.get("refdoc", env.docname))
                dangling = Path(path).exists()
            else:
                dangling = False
            if dangling:
                node.replace_self(node[0].deepcopy())


def _images_in_build_dir(app):
    """Keep MyST-NB's scratch copies of the figures with the doctrees, inside the output.

    MyST-NB writes them next to the output folder, which for ``site/`` is the repository root.
    """
    app.env.mystnb_config = app.env.mystnb_config.copy(
        output_folder=str(Path(app.doctreedir) / "jupyter_execute"))


def _index_html(app, exception):
    """``index.html`` is the landing page too, so ``site/index.html`` opens the course."""
    if exception is None and app.builder.format == "html":
        outdir = Path(app.outdir)
        shutil.copyfile(outdir / f"{ROOT_DOC}.html", outdir / "index.html")


def setup(app):
    app.connect("builder-inited", _images_in_build_dir, priority=900)  # after MyST-NB's own
    app.connect("source-read", _add_chapter_list)
    app.connect("source-read", _widgets_as_stills)
    app.add_post_transform(RepositoryLinksAsText)
    app.connect("build-finished", _index_html)
