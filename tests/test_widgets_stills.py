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
