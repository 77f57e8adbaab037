"""Chapter 08's error analysis: what kind of mistake each wrong field of a date is."""
from collections import Counter

from ..checks import check_instance
from ..data import wrong_fields

__all__ = ["ERROR_KINDS_BY_DIGIT", "digit_error_kind", "field_error_kinds"]

ERROR_KINDS_BY_DIGIT = ("digits swapped", "one digit wrong", "other")


def digit_error_kind(true, written):
    """How a written field (a string of digits) differs from the true one of the same length.

    ``"digits swapped"``: two neighbouring digits exchanged ("21" -> "12"); ``"one digit wrong"``:
    exactly one position differs ("22" -> "02"); ``"other"``: anything else. Equal fields are
    not an error and raise ValueError.
    """
    check_instance("true", true, str, "the true field, a string of digits")
    check_instance("written", written, str, "the written field, a string of digits")
    if true == written:
        raise ValueError(f"the two fields are equal ({true!r}): there is no error to classify")
    if len(true) != len(written):
        return "other"
    differ = [i for i, (a, b) in enumerate(zip(true, written)) if a != b]
    if len(differ) == 1:
        return "one digit wrong"
    if len(differ) == 2 and differ[1] == differ[0] + 1 and true[differ[0]] == written[differ[1]] \
            and true[differ[1]] == written[differ[0]]:
        return "digits swapped"
    return "other"


def field_error_kinds(targets, predictions):
    """Count ``(field, kind)`` over the wrong fields of ISO dates: ``field`` from ``wrong_fields``
    (year, month, day; ``"format"`` when a prediction is not shaped YYYY-MM-DD, with kind
    ``"other"``), ``kind`` from ``digit_error_kind``. Returns a Counter."""
    targets, predictions = list(targets), list(predictions)
    if len(targets) != len(predictions):
        raise ValueError(f"targets and predictions must be equally long, got {len(targets)} and {len(predictions)}")
    counts = Counter()
    for target, predicted in zip(targets, predictions):
        for field in wrong_fields(target, predicted):
            if field == "format":
                counts["format", "other"] += 1
                continue
            index = ("year", "month", "day").index(field)
            counts[field, digit_error_kind(target.split("-")[index], predicted.split("-")[index])] += 1
    return counts
