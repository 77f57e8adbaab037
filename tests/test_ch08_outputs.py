"""Chapter 08: a translation is checked for being a date, and the wrong digits' reading is located."""
from datetime import date
from types import SimpleNamespace

import pytest
import torch

from stepbystep.data import iso_date
from stepbystep.experiments.date_error_kinds import field_spans, wrong_digit_reads
from stepbystep.widgets.ch08_dates import _translation_message


@pytest.mark.parametrize("text, day", [("2007-07-10", date(2007, 7, 10)), ("1776-07-04", date(1776, 7, 4)),
                                       ("2004-07-00", None), ("2001-02-30", None), ("2001-3-3", None),
                                       ("March 3", None), ("", None)])
def test_iso_date_names_a_day_or_none(text, day):
    assert iso_date(text) == day


def test_iso_date_refuses_a_non_string():
    with pytest.raises(TypeError, match="str"):
        iso_date(20070710)


def test_the_translator_marks_an_output_that_is_not_a_date():
    real = _translation_message(SimpleNamespace(text="3 May 1979", translation="1979-05-03", unknown=()))
    made_up = _translation_message(SimpleNamespace(text="hello world", translation="2004-07-00", unknown=()))
    assert "not a date" not in real and "<b>1979-05-03</b>" in real
    assert "not a date" in made_up and "<b>2004-07-00</b>" in made_up


@pytest.mark.parametrize("text, spans", [
    ("Monday, May 22, 2000", {"day": (12, 14), "year": (16, 20)}),
    ("5 April 09", {"day": (0, 1), "year": (8, 10)}),
    ("APRIL 13TH 2027", {"day": (6, 8), "year": (11, 15)}),
    ("2001/03/03", {"year": (0, 4), "month": (5, 7), "day": (8, 10)}),
    ("3.3.2001", {"day": (0, 1), "month": (2, 3), "year": (4, 8)}),
    ("hello world", {}),
])
def test_field_spans_find_the_digits_of_each_field(text, spans):
    assert field_spans(text) == spans


def test_wrong_digit_reads_locate_each_wrong_digits_row():
    text = "Monday, May 22, 2000"  # day at 12-13, year at 16-19
    weights = torch.full((1, 11, len(text)), 0.01)  # (heads, L_out, L_s)
    weights[0, 8, 13] = 1.0  # the first day digit, written wrong, reads the day: in its field
    weights[0, 3, 7] = 1.0  # the last year digit, written wrong, reads the space after "Monday,"
    translation = SimpleNamespace(text=text, translation="2001-05-02", weights=weights)
    assert wrong_digit_reads(translation, "2000-05-22") == [(3, "year", 7, False), (8, "day", 13, True)]
    with pytest.raises(ValueError, match="ISO"):
        wrong_digit_reads(translation, "22 May 2000")
