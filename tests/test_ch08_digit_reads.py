"""Chapter 08's control for the wrong digits' reads: every digit row of a field written in digits, right or
wrong, and the two shares."""
from types import SimpleNamespace

import pytest
import torch

from stepbystep.experiments.date_error_kinds import digit_reads, in_field_shares


def test_digit_reads_keeps_the_rows_of_fields_written_in_digits_and_marks_the_right_ones():
    text = "Monday, May 22, 2000"  # day at 12-13, year at 16-19; the month is a name
    weights = torch.full((2, 11, len(text)), 0.01)  # (heads, L_out, L_s)
    for index in range(11):
        weights[:, index, 17] = 1.0  # every row reads the year's second digit most
    weights[:, 8, 12] = 5.0  # the first day digit reads the day
    translation = SimpleNamespace(text=text, translation="2001-05-02", weights=weights)
    reads = digit_reads(translation, "2000-05-22")
    assert [index for index, *_ in reads] == [0, 1, 2, 3, 8, 9]  # no month rows, no dashes
    assert reads[3] == (3, "year", 17, True, False)  # wrote "1" for "0", reading the year
    assert reads[4] == (8, "day", 12, True, False)  # wrote "0" for "2", reading the day
    assert reads[5] == (9, "day", 17, False, True)  # wrote the right "2", reading the year
    assert in_field_shares(reads) == {"wrong": [2, 2], "right": [3, 4]}


def test_digit_reads_counts_the_month_when_the_text_writes_it_in_digits():
    text = "2000/05/22"
    weights = torch.softmax(torch.randn(1, 11, len(text), generator=torch.Generator().manual_seed(0)), dim=-1)
    reads = digit_reads(SimpleNamespace(text=text, translation="2000-05-22", weights=weights), "2000-05-22")
    assert [field for _, field, *_ in reads] == ["year"] * 4 + ["month"] * 2 + ["day"] * 2
    assert all(right for *_, right in reads)


def test_digit_reads_refuses_a_target_that_is_no_iso_date():
    translation = SimpleNamespace(text="3 May 1979", translation="1979-05-03", weights=torch.ones(1, 11, 10))
    with pytest.raises(ValueError, match="ISO"):
        digit_reads(translation, "3 May 1979")
