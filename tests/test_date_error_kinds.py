"""Chapter 08's classification of wrong date fields."""
import pytest

from stepbystep.experiments.date_error_kinds import digit_error_kind, field_error_kinds


@pytest.mark.parametrize("true, written, kind", [
    ("21", "12", "digits swapped"),
    ("22", "02", "one digit wrong"),
    ("2027", "2072", "digits swapped"),
    ("2027", "2017", "one digit wrong"),
    ("2027", "1972", "other"),
    ("12", "21 ", "other"),
])
def test_digit_error_kind(true, written, kind):
    assert digit_error_kind(true, written) == kind


def test_equal_fields_are_refused():
    with pytest.raises(ValueError, match="equal"):
        digit_error_kind("22", "22")


def test_field_error_kinds_counts_each_wrong_field():
    counts = field_error_kinds(["2027-09-22", "2001-06-11", "1990-05-11", "1979-05-03"],
                               ["2027-09-02", "2001-06-11", "1909-05-11", "oops"])
    assert counts == {("day", "one digit wrong"): 1, ("year", "digits swapped"): 1, ("format", "other"): 1}


def test_field_error_kinds_refuses_unequal_lengths():
    with pytest.raises(ValueError, match="equally long"):
        field_error_kinds(["2027-09-22"], [])
