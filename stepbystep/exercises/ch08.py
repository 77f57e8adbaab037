"""Chapter 08's "Your turn": a new date pattern, the two-digit-year rule, and reading an
alignment map as numbers.

In the notebook::

    from stepbystep.exercises import ch08
    ch08.new_pattern.check(my_pattern)
    ch08.new_pattern.solution()
"""
import numbers
from datetime import date

import torch

from ..data.dates import ordinal_suffix, render_date
from ..models.alignment import Translation
from .exercise import Exercise

__all__ = ["new_pattern", "century_rule", "reading_positions"]


# ----------------------------------------------------------------------------- 1. a new pattern
def _new_pattern_solution():
    return "'the' d{ord} 'of' MMMM, y"  # text in quotes; {ord} writes st, nd, rd or th


def _wanted(day):
    return f"the {day.day}{ordinal_suffix(day.day)} of {day:%B}, {day.year}"


_PATTERN_DAYS = (date(2001, 3, 3), date(1979, 5, 1), date(2016, 8, 21), date(2007, 7, 12), date(1950, 1, 22),
                 date(2049, 12, 31), date(1988, 11, 11))


def _check_new_pattern(answer):
    if not isinstance(answer, str):
        return f"expected a Babel pattern (a str), got {type(answer).__name__}"
    for day in _PATTERN_DAYS:
        try:
            got = render_date(day, answer)
        except (ValueError, KeyError, AttributeError, TypeError) as error:
            return (f"Babel cannot use this pattern ({type(error).__name__}: {error}); are the words "
                    "'the' and 'of' in single quotes? Unquoted letters are fields (h is the hour)")
        wanted = _wanted(day)
        if got != wanted:
            if got.replace(" ", "") == wanted.replace(" ", ""):
                return f"for {day} it gives {got!r}, {wanted!r} was wanted: check the spaces"
            return f"for {day} it gives {got!r}, but {wanted!r} was wanted"
    return None


new_pattern = Exercise(
    "a new date pattern",
    _check_new_pattern,
    "put plain words in single quotes ('the', 'of'), use d for the day, {ord} for its suffix "
    "(not a fixed 'rd': the 1st and the 22nd need others), MMMM for the month's name and y for the year",
    _new_pattern_solution,
)


# ----------------------------------------------------------------------------- 2. the century rule
def _century_rule_solution(two_digits):
    return (2000 if two_digits < 50 else 1900) + two_digits  # 00-49 -> 20xx, 50-99 -> 19xx


def _check_century_rule(answer):
    if not callable(answer):
        return f"expected a function full_year(two_digits), got {type(answer).__name__}"
    for two_digits in range(100):
        got = answer(two_digits)
        wanted = _century_rule_solution(two_digits)
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            return f"full_year({two_digits}) should be an int, got {got!r}"
        if got != wanted:
            boundary = " (the boundary: 49 is 2049, 50 is 1950)" if two_digits in (49, 50) else ""
            return f"full_year({two_digits}) should be {wanted}, got {got}{boundary}"
    return None


century_rule = Exercise(
    "the century rule for two-digit years",
    _check_century_rule,
    "years 00 to 49 belong to the 2000s and 50 to 99 to the 1900s: compare with 50, then add 2000 or 1900",
    _century_rule_solution,
)


# ----------------------------------------------------------------------------- 3. reading positions
def _reading_positions_solution(translation):
    mean = translation.weights.mean(dim=0)  # (L_out, L_s): the heads averaged
    return mean.argmax(dim=-1).tolist()  # for each output token, the source position it reads most


def _translations():
    """Two made-up translations with random weights, 3 heads: the checker needs no trained model."""
    generator = torch.Generator().manual_seed(8)
    cases = []
    for text, iso in (("3 May 1979", "1979-05-03"), ("Tue 10 Jul 2007", "2007-07-10")):
        output_tokens = list(iso) + ["<eos>"]
        scores = 3 * torch.randn(3, len(output_tokens), len(text), generator=generator)  # (h, L_out, L_s)
        cases.append(Translation(text, iso, list(text), output_tokens, scores.softmax(dim=-1), ()))
    return cases


def _check_reading_positions(answer):
    if not callable(answer):
        return f"expected a function reading_positions(translation), got {type(answer).__name__}"
    for translation in _translations():
        got = answer(translation)
        if isinstance(got, torch.Tensor):
            got = got.tolist()
        wanted = _reading_positions_solution(translation)
        if not isinstance(got, (list, tuple)) or not all(isinstance(i, numbers.Integral) for i in got):
            return f"return a list of ints (one source position per output token), got {got!r}"
        n_out, n_source = translation.weights.shape[1:]
        if len(got) == n_source != n_out:
            return (f"got {n_source} positions, one per source character: take the arg-max over the source "
                    f"(the last dimension), giving one position per output token ({n_out})")
        if len(got) != n_out:
            return f"expected one position per output token ({n_out}), got {len(got)}"
        if list(got) != wanted:
            heads = [translation.weights[head].argmax(dim=-1).tolist() for head in range(translation.weights.shape[0])]
            if list(got) in heads:
                return "that is one head's choice: average the heads first (mean over dimension 0)"
            return f"for {translation.text!r} expected {wanted}, got {list(got)}"
    return None


reading_positions = Exercise(
    "where each output character reads",
    _check_reading_positions,
    "translation.weights is (n_heads, L_out, L_s): average over the heads, then take the arg-max over the source",
    _reading_positions_solution,
)
