"""The date translator of chapter 08: typing a date redraws the translation and its alignment map."""
import matplotlib.pyplot as plt
import pytest

from stepbystep.models import translate_with_alignment
from stepbystep.widgets import date_translator


@pytest.fixture(scope="module")
def setup(tiny_date_model):
    return tiny_date_model


def _map(widget):
    return widget.figure.axes[0]


def test_typing_a_date_redraws_translation_and_map(setup):
    model, src_vocab, tgt_vocab = setup
    widget = date_translator(model, src_vocab, tgt_vocab, text="3 May 1979")
    figure = widget.figure
    first = translate_with_alignment(model, "3 May 1979", src_vocab, tgt_vocab)
    assert f"<b>{first.translation}</b>" in widget.label.value
    assert "'3 May 1979'" in _map(widget).get_title()
    assert len(_map(widget).get_xticklabels()) == len("3 May 1979")

    widget.text.value = "Saturday May 9 2018"
    second = translate_with_alignment(model, "Saturday May 9 2018", src_vocab, tgt_vocab)
    assert widget.figure is figure
    assert "Saturday May 9 2018" in widget.label.value and f"<b>{second.translation}</b>" in widget.label.value
    assert "'Saturday May 9 2018'" in _map(widget).get_title()
    assert len(_map(widget).get_xticklabels()) == len("Saturday May 9 2018")
    assert len(figure.axes) == 2  # one map and its colour bar, not a growing stack
    assert plt.get_fignums() == []  # built without pyplot: no stray static figure


@pytest.mark.parametrize("text, message", [("", "text must hold a character other than spaces"),
                                           ("1" * 40, "text must be at most 32 characters long")])
def test_unreadable_text_shows_the_reason(setup, text, message):
    model, src_vocab, tgt_vocab = setup
    widget = date_translator(model, src_vocab, tgt_vocab)
    assert widget.figure.axes
    widget.text.value = text
    assert message in widget.label.value
    assert widget.figure.axes == []  # the old map is gone, not left to be misread

    widget.text.value = "1 March 2001"
    assert "1 March 2001" in widget.label.value and widget.figure.axes


def test_unknown_characters_are_named(setup):
    model, src_vocab, tgt_vocab = setup
    widget = date_translator(model, src_vocab, tgt_vocab, text="3 May 1979 ~")
    assert "&lt;unk&gt;" in widget.label.value and "'~'" in widget.label.value
