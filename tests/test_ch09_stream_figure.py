"""Chapter 09's stream figure: every symbol, the special tokens included, stays inside its box."""
import matplotlib

from stepbystep import plots
from stepbystep.data import CompletionDataset, completion_vocab, date_pairs

matplotlib.use("Agg")


def test_every_symbol_fits_inside_its_box():
    vocab = completion_vocab(date_pairs(300, seed=0))
    inputs, targets = CompletionDataset([("9th of February 2038", "2038-02-09")], vocab)[0]
    fig = plots.completion_stream(inputs, targets, vocab)
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [patch.get_window_extent(renderer) for patch in ax.patches]
    specials = 0
    for text in ax.texts:
        extent = text.get_window_extent(renderer)
        (box,) = [b for b in boxes if b.x0 <= (extent.x0 + extent.x1) / 2 <= b.x1
                  and b.y0 <= (extent.y0 + extent.y1) / 2 <= b.y1]
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1, \
            text.get_text()
        specials += text.get_text() in ("<sos>", "<eos>")
    assert specials == 2
