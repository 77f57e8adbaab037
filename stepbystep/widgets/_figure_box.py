"""The container every widget returns: controls, an output area and one figure redrawn in place.

Figures are redrawn in place (one figure per widget, cleared and drawn again), so moving a
slider never stacks up figures or flickers. The container also carries a still image of its
figure, which static copies of the course (``make html``, a code host) show instead of a widget
that needs a live kernel.
"""
import base64
import io

import ipywidgets as widgets
from IPython.display import clear_output, display

__all__ = ["FigureBox", "show"]


def show(output, figure):
    """Replace what ``output`` shows by ``figure``, without a blank frame in between."""
    with output:
        clear_output(wait=True)
        display(figure)


class FigureBox(widgets.VBox):
    """A ``VBox`` whose ``figure`` is redrawn in place by its controls.

    Besides the live widget it offers a still PNG of the figure as it was last drawn, so a page
    that cannot run widgets (an HTML copy, a code host) still shows the picture.
    """

    def __init__(self, children, figure, **kwargs):
        super().__init__(children, **kwargs)
        self.figure = figure

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        bundle["image/png"] = base64.b64encode(buffer.getvalue()).decode("ascii")
        return bundle
