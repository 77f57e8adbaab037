"""Chapter 08: type a date, see the model's translation and its cross-attention map."""
import html

import ipywidgets as widgets
from IPython.display import clear_output
from matplotlib.figure import Figure

from ..data import iso_date
from ..models import translate_with_alignment
from ..plots import alignment_map
from ._figure_box import FigureBox, show

__all__ = ["date_translator"]


def _translation_message(result):
    """The label's text for a ``Translation``: the output, whether it is a date at all, and any
    characters read as ``<unk>``."""
    text, translation = (html.escape(value, quote=False) for value in (result.text, result.translation))
    message = f"<b>{text}</b> → <b>{translation}</b>"
    if iso_date(result.translation) is None:
        message += " <span style='color: firebrick'>(not a date: the model writes an answer for any text)</span>"
    if result.unknown:
        unknown = ", ".join(repr(character) for character in result.unknown)
        message += f" (read as &lt;unk&gt;, unknown to the vocabulary: {html.escape(unknown, quote=False)})"
    return message


def date_translator(model, src_vocab, tgt_vocab, text="Tue 10 Jul 2007", head=None):
    """A text box: type a date, see the model's translation and its cross-attention map.

    Pressing Enter (or leaving the box) translates the text with ``translate_with_alignment``
    and redraws ``alignment_map`` (``head``: one head, ``None`` the mean) in place; an output
    that names no day ("2004-07-00") is marked "not a date". Text the
    model cannot read (empty, or longer than its ``max_len``) shows the reason instead of a
    map. Returns a ``VBox`` (text box, label, output); its ``figure`` attribute is the one
    figure redrawn in place, its ``text`` and ``label`` attributes the box and the label.
    """
    box_text = widgets.Text(value=text, description="date", placeholder="e.g. March 3rd 2001",
                            continuous_update=False)
    label = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(9, 4.5), layout="constrained")

    def redraw(_change=None):
        try:
            result = translate_with_alignment(model, box_text.value, src_vocab, tgt_vocab)
        except ValueError as error:
            label.value = f"<span style='color: firebrick'>{html.escape(str(error), quote=False)}</span>"
            figure.clear()
            with output:
                clear_output()
            return
        label.value = _translation_message(result)
        alignment_map(result, head=head, fig=figure)
        show(output, figure)

    box_text.observe(redraw, names="value")
    redraw()
    container = FigureBox([box_text, label, output], figure)
    container.text = box_text
    container.label = label
    return container
