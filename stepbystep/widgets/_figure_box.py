"""The container every widget returns: controls, an output area and one figure redrawn in place.

Figures are redrawn in place (one figure per widget, cleared and drawn again), so moving a
slider never stacks up figures or flickers. The container also carries a still image of its
figure, which static copies of the course (``make html``, a code host) show instead of a widget
that needs a live kernel.
"""
import base64
import io

import ipywidgets as widgets
from IPython.display import Image, clear_output, display

__all__ = ["FigureBox", "figure_png", "show"]


def figure_png(figure):
    """The figure drawn as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def show(output, figure):
    """Replace what ``output`` shows by ``figure``, without a blank frame in between. The figure
    goes as a PNG image: displaying the ``Figure`` itself needs matplotlib's inline backend,
    which a kernel starts only once pyplot is imported, so a widget run straight after the
    imports would show ``<Figure size ...>`` instead of the picture."""
    with output:
        clear_output(wait=True)
        display(Image(figure_png(figure), format="png"))


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
        bundle["image/png"] = base64.b64encode(figure_png(self.figure)).decode("ascii")
        return bundle
