"""Every widget also offers a still PNG of its current figure, for pages that cannot run widgets."""
import base64

from stepbystep.widgets import FigureBox, mask_explorer

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _still(box):
    bundle = box._repr_mimebundle_()
    assert WIDGET_VIEW in bundle  # the live widget is still what JupyterLab shows
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(b"\x89PNG")
    return png


def test_the_still_follows_the_controls():
    box = mask_explorer()
    assert isinstance(box, FigureBox)
    before = _still(box)
    causal = box.children[0].children[1].children[0]
    causal.value = not causal.value
    assert _still(box) != before


def test_the_live_figure_goes_out_as_a_png_whatever_matplotlib_backend_the_kernel_has(monkeypatch):
    # Displaying a bare Figure needs the inline backend, which a kernel starts only with pyplot:
    # straight after the imports, the learner would read "<Figure size ...>" instead of the plot.
    from ipywidgets import Output
    from matplotlib.figure import Figure

    from stepbystep.widgets import _figure_box

    shown = []
    monkeypatch.setattr(_figure_box, "display", shown.append)
    figure = Figure(figsize=(2, 1), dpi=50)
    _figure_box.show(Output(), figure)
    (image,) = shown
    assert image.format == "png" and image.data.startswith(b"\x89PNG")
    width, height = int.from_bytes(image.data[16:20], "big"), int.from_bytes(image.data[20:24], "big")
    assert (width, height) == (100, 50)  # the figure's own size, 2 x 1 inches at 50 dpi
