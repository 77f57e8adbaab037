"""Chapter 08's error analysis: what kind of mistake each wrong field of a date is, and where the
decoder read when it wrote a wrong digit."""
import re
from collections import Counter

from ..checks import check_instance
from ..data import wrong_fields

__all__ = ["ERROR_KINDS_BY_DIGIT", "digit_error_kind", "field_error_kinds", "field_spans", "wrong_digit_reads",
           "digit_reads", "in_field_shares"]

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


_FIELD_OF_OUTPUT = {0: "year", 1: "year", 2: "year", 3: "year", 5: "month", 6: "month", 8: "day", 9: "day"}


def field_spans(text):
    """Where a date text writes its fields in digits: ``{field: (start, end)}`` of each group of
    digits. Two groups are the day and the year ("May 9, 2018", "5 April 09"); three are year,
    month, day when the first has four digits ("2001/03/03"), else day, month, year
    ("3.3.2001"). A month written as a name has no span; other texts give ``{}``."""
    check_instance("text", text, str, "a date text (a str)")
    groups = [match.span() for match in re.finditer(r"\d+", text)]
    if len(groups) == 2:
        return dict(zip(("day", "year"), groups))
    if len(groups) == 3:
        order = ("year", "month", "day") if groups[0][1] - groups[0][0] == 4 else ("day", "month", "year")
        return dict(zip(order, groups))
    return {}


def _spans_and_rows(translation, target):
    """The digit spans of ``translation``'s text and its cross-attention rows ``(L_out, L_s)``, the
    heads averaged, once ``target`` is checked to be an ISO date."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", target):
        raise ValueError(f"target must be an ISO date YYYY-MM-DD, got {target!r}")
    return field_spans(translation.text), translation.weights.mean(dim=0)  # rows: (L_out, L_s)


def wrong_digit_reads(translation, target):
    """Where the decoder read while it wrote each wrong digit of a ``Translation`` whose right date
    is ``target``: one ``(index, field, position, in_field)`` per wrong output character at an
    index of ``target``'s digits, where ``position`` is the source position its row of the
    cross-attention reads most (the heads averaged) and ``in_field`` whether that position lies
    in the digits of the same field in the text (``field_spans``; ``False`` without one)."""
    spans, rows = _spans_and_rows(translation, target)
    reads = []
    for index, (right, written) in enumerate(zip(target, translation.translation)):
        if right == written or index not in _FIELD_OF_OUTPUT or index >= rows.shape[0]:
            continue
        field = _FIELD_OF_OUTPUT[index]
        position = int(rows[index].argmax())
        start, end = spans.get(field, (0, 0))
        reads.append((index, field, position, start <= position < end))
    return reads


def digit_reads(translation, target):
    """Where the decoder read while it wrote each digit of a field that the text writes in digits:
    one ``(index, field, position, in_field, right)`` per output character at such an index of
    ``target`` (a month written as a name has no digits to read, so its rows are left out), with
    ``position`` and ``in_field`` as in ``wrong_digit_reads`` and ``right`` whether the written
    character is the target's. The right rows are the control for the wrong ones."""
    spans, rows = _spans_and_rows(translation, target)
    reads = []
    for index, (right, written) in enumerate(zip(target, translation.translation)):
        field = _FIELD_OF_OUTPUT.get(index)
        if field not in spans or index >= rows.shape[0]:
            continue
        start, end = spans[field]
        position = int(rows[index].argmax())
        reads.append((index, field, position, start <= position < end, right == written))
    return reads


def in_field_shares(reads):
    """From ``digit_reads`` rows: ``{"wrong": [in_field, n], "right": [in_field, n]}``, how many rows
    that wrote a wrong (a right) digit read most a digit of their own field, of how many."""
    shares = {"wrong": [0, 0], "right": [0, 0]}
    for *_, in_field, right in reads:
        counts = shares["right" if right else "wrong"]
        counts[0] += bool(in_field)
        counts[1] += 1
    return shares
