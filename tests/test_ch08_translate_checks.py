"""Chapter 08's translate: a year the data set never writes is refused in the text and in the output."""
import pytest

from stepbystep.data import check_translation, check_years


@pytest.mark.parametrize("text", ["3 May 1979", "5 April 09", "5 April 49", "5 April 50", "1950/01/01", "31.12.2049",
                                  "Tue 10 Jul 2007", "hello world"])
def test_check_years_passes_the_data_sets_years(text):
    check_years(text)


@pytest.mark.parametrize("text, year", [("0009-09-09", "0009"), ("4 July 1776", "1776"), ("5 April 1949", "1949"),
                                        ("5 April 2050", "2050"), ("3 May 19790", "19790"), ("May 3 999", "999")])
def test_check_years_refuses_a_year_outside_1950_2049_and_names_it(text, year):
    with pytest.raises(ValueError, match=rf"expected a year from 1950 to 2049.*got '{year}' in '{text}'"):
        check_years(text)


def test_check_years_refuses_a_non_string():
    with pytest.raises(TypeError, match="str"):
        check_years(19790503)


def test_check_translation_returns_a_day_of_the_range():
    assert check_translation("1979-05-03", "3 May 1979") == "1979-05-03"
    assert check_translation("1950-01-01", "1 Jan 50") == "1950-01-01"
    assert check_translation("2049-12-31", "31 Dec 49") == "2049-12-31"


@pytest.mark.parametrize("output, reason", [("2034-09-249", "not a date"), ("2004-07-00", "not a date"),
                                            ("209-09-09-0", "not a date"), ("0009-09-09", "outside 1950-2049"),
                                            ("1949-12-31", "outside 1950-2049"), ("2050-01-01", "outside 1950-2049")])
def test_check_translation_refuses_what_is_no_day_of_the_range(output, reason):
    with pytest.raises(ValueError, match=rf"wrote '{output}' for 'some text'.*{reason}"):
        check_translation(output, "some text")
