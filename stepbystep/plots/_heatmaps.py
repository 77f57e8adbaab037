"""The course's heatmaps share one look: one colour scale for attention weights, one for masks.

Annotated heatmaps (attention weights, masks, small matrices) are drawn by ``heatmap`` with
``seaborn.heatmap``; the larger maps that carry no numbers (``imshow``) use the same
``WEIGHTS`` colour scale, so a weight looks the same in every chapter.
"""
from contextlib import contextmanager

import numpy as np
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.colors import ListedColormap

# Attention weights live in [0, 1]: a fixed scale, so maps compare by eye.
WEIGHTS = {"cmap": "viridis", "vmin": 0.0, "vmax": 1.0}
# A keep-mask: 0 (blocked) dark, 1 (may attend) light green.
MASK = {"cmap": ListedColormap(["#3b3b3b", "#cde8c4"]), "vmin": 0, "vmax": 1}
# How a weight (or any value on a colour scale) is written in its cell.
VALUE_FORMAT = ".2f"


@contextmanager
def _without_redraws(figure):
    """Let seaborn add a heatmap to ``figure`` without rendering the whole figure.

    ``seaborn.heatmap`` draws the entire figure after each map to decide whether its tick labels
    overlap. In a grid of n maps that is n renderings of an ever fuller figure (3 x 6 annotated
    maps took seven times as long as drawing them). ``heatmap`` places the ticks itself, so the
    figure gets a canvas that does not render for the duration, and its own canvas back after.
    """
    root = figure.figure  # a SubFigure's root Figure; a Figure is its own
    canvas = root.canvas
    FigureCanvasBase(root)
    try:
        yield
    finally:
        root.set_canvas(canvas)


def heatmap(ax, values, style, annot=False, fmt=VALUE_FORMAT, fontsize=8, xticklabels=None, yticklabels=None,
            square=False):
    """Draw ``values`` ``(rows, cols)`` on ``ax`` with ``seaborn.heatmap``; returns its QuadMesh.

    ``style``: ``WEIGHTS``, ``MASK`` or any ``{"cmap", "vmin", "vmax"}``. ``annot``: ``False``,
    ``True`` (each cell's value written with ``fmt``) or an array of ``values``' shape holding
    the texts (``fmt=""`` for strings); seaborn writes dark text on light cells and white on
    dark ones. Cell ``(i, j)`` is centred at ``(j + 0.5, i + 0.5)``, row 0 on top. Every row
    and column gets a tick, labelled with ``xticklabels`` / ``yticklabels`` (by default the
    indices), all horizontal. ``square`` gives square cells. No colour bar is drawn: pass the
    returned mesh to ``fig.colorbar`` (a grid of maps shares one).
    """
    import seaborn as sns  # imported here: importing the plots stays light

    values = np.asarray(values)
    n_rows, n_cols = values.shape
    with _without_redraws(ax.figure):
        sns.heatmap(values, ax=ax, annot=annot, fmt=fmt, annot_kws={"fontsize": fontsize}, cbar=False,
                    square=square, xticklabels=False, yticklabels=False, **style)
    ax.set_xticks(np.arange(n_cols) + 0.5, range(n_cols) if xticklabels is None else xticklabels)
    ax.set_yticks(np.arange(n_rows) + 0.5, range(n_rows) if yticklabels is None else yticklabels, rotation=0)
    return ax.collections[-1]
