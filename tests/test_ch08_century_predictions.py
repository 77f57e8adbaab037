"""Chapter 08's exercise 2: predictions of what translate does at the century rule's edges, each wrong
prediction diagnosed without the answer."""
import pytest

from stepbystep.data import check_years
from stepbystep.exercises import ch08

RIGHT = {"5 April 49": "2049-04-05", "5 April 50": "1950-04-05", "5 April 1949": "ValueError",
         "5 April 2050": "ValueError"}


def with_(text, prediction):
    return {**RIGHT, text: prediction}


def test_the_solution_passes_and_matches_check_years():
    assert ch08.century_rule.check(ch08.century_rule._solution())
    assert ch08.century_rule._solution() == RIGHT
    for text, prediction in RIGHT.items():
        if prediction == "ValueError":
            with pytest.raises(ValueError):
                check_years(text)
        else:
            check_years(text)


def test_the_placeholder_fails(fails_with):
    fails_with(ch08.century_rule, {text: "" for text in RIGHT}, "predict an ISO date 'YYYY-MM-DD' or 'ValueError'")


@pytest.mark.parametrize("text, prediction, words", [
    ("5 April 49", "1949-04-05", "which century does the rule give to 49?"),
    ("5 April 50", "2050-04-05", "which century does the rule give to 50?"),
    ("5 April 49", "ValueError", "a two-digit year is never refused"),
    ("5 April 1949", "1949-04-05", "a year the data set never writes"),
    ("5 April 2050", "2050-04-05", "a year the data set never writes"),
    ("5 April 50", "1950-05-04", "the month or the day"),
])
def test_wrong_predictions_are_diagnosed_without_the_answer(fails_with, text, prediction, words):
    message = fails_with(ch08.century_rule, with_(text, prediction), words)
    assert RIGHT[text] not in message


def test_missing_texts_and_other_types_are_named(fails_with):
    fails_with(ch08.century_rule, {"5 April 49": "2049-04-05"}, "one prediction for each of")
    fails_with(ch08.century_rule, list(RIGHT.values()), "expected a dict")
    fails_with(ch08.century_rule, with_("5 April 49", 2049), "got 2049")
