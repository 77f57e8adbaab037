"""Human-written dates and their ISO form: the translation task of chapter 08.

A random day between ``FIRST_DATE`` and ``LAST_DATE`` is written the way people write dates
("Tue 10 Jul 2007", "March 3rd 2001", "21th of August 2016", "5 APRIL 09") by Babel's
``format_date`` (locale ``'en'``) with one of ``DATE_PATTERNS`` and one of ``CASES``, and
paired with its ISO form ``YYYY-MM-DD``.

Rules that keep every text unambiguous:

- **two-digit years** ``yy`` follow the century rule 00-49 -> 20xx, 50-99 -> 19xx; the date
  range is exactly the century that rule covers, 1950-01-01 to 2049-12-31;
- **numeric dates** have a four-digit year and only two orders: year first with slashes or
  dashes ("2007/07/10"), day first with dots ("10.07.2007"), never the day/month order of
  slashes that the US and Europe read differently;
- **ordinals**: ``{ord}`` in a pattern stands for the right English suffix (1st, 2nd, 3rd,
  11th, 22nd); one pattern writes "th" after every day, as people sloppily do ("21th").

People also name the wrong day of the week (the reference dates' "Saturday May 9 2018":
9 May 2018 was a Wednesday). The weekday never changes the ISO date, so a fraction
``WRONG_WEEKDAY_RATE`` of the pairs whose pattern names one names a random weekday instead.
"""
import functools
import re
from datetime import date, timedelta
from string import capwords

import numpy as np
from babel import Locale
from babel.dates import format_date, tokenize_pattern, untokenize_pattern

from ..checks import (
    check_choice,
    check_fraction,
    check_instance,
    check_int_range,
    check_non_negative_int,
    check_positive_int,
)

__all__ = [
    "FIRST_DATE",
    "LAST_DATE",
    "N_DAYS",
    "DATE_PATTERNS",
    "CASES",
    "WRONG_WEEKDAY_RATE",
    "REFERENCE_DATES",
    "ordinal_suffix",
    "has_weekday",
    "render_date",
    "date_texts",
    "random_dates",
    "date_pairs",
    "split_dates",
    "date_datasets",
    "pattern_lengths",
    "date_pairs_by_length",
    "ERROR_KINDS",
    "wrong_fields",
    "iso_date",
    "check_text",
    "check_years",
    "check_translation",
]

FIRST_DATE = date(1950, 1, 1)
LAST_DATE = date(2049, 12, 31)
N_DAYS = (LAST_DATE - FIRST_DATE).days + 1  # 36,525 days

_LOCALE = Locale.parse("en")

# Babel (CLDR) patterns: d day, dd two-digit day, MMM "Jul", MMMM "July", M "7", MM "07", EEE "Tue",
# EEEE "Tuesday", y "2007", yy "07"; text in single quotes is written as it is.
DATE_PATTERNS = (
    "d MMM y",  # 3 May 1979
    "dd MMM y",  # 03 May 1979
    "d MMMM y",  # 1 March 2001
    "d MMMM yy",  # 5 April 09
    "d MMM yy",  # 5 Apr 09
    "d{ord} MMMM y",  # 3rd March 2001
    "d{ord} 'of' MMMM y",  # 3rd of March 2001
    "d'th of' MMMM y",  # 21th of August 2016: the sloppy "th"
    "EEE d MMM y",  # Tue 10 Jul 2007
    "EEE, d MMM y",  # Tue, 10 Jul 2007
    "EEEE d MMMM y",  # Tuesday 10 July 2007
    "EEEE MMMM d y",  # Wednesday May 9 2018 (the reference date's "Saturday" is a wrong weekday)
    "EEEE, MMMM d, y",  # Wednesday, May 9, 2018
    "MMMM d y",  # March 3 2001
    "MMMM d, y",  # March 3, 2001
    "MMMM d{ord} y",  # March 3rd 2001
    "MMMM d{ord}, y",  # March 3rd, 2001
    "MMM d, y",  # Mar 3, 2001
    "MMM d yy",  # Mar 3 01
    "y/MM/dd",  # 2001/03/03
    "y-M-d",  # 2001-3-3
    "dd.MM.y",  # 03.03.2001
    "d.M.y",  # 3.3.2001
)

# How the rendered text is cased, with the probability of each: mostly as Babel writes it.
CASES = {"as written": 0.7, "lower": 0.1, "upper": 0.1, "title": 0.1}

# Of the pairs whose pattern names a weekday, the fraction that names a random one instead.
WRONG_WEEKDAY_RATE = 0.1

# The eight test dates of the date-translation exercise in Andrew Ng's deeplearning.ai Sequence
# Models course ("Neural Machine Translation with Attention"), and what they mean.
REFERENCE_DATES = {
    "3 May 1979": "1979-05-03",
    "5 April 09": "2009-04-05",
    "21th of August 2016": "2016-08-21",
    "Tue 10 Jul 2007": "2007-07-10",
    "Saturday May 9 2018": "2018-05-09",
    "March 3 2001": "2001-03-03",
    "March 3rd 2001": "2001-03-03",
    "1 March 2001": "2001-03-01",
}


def ordinal_suffix(day):
    """The English ordinal suffix of a day of the month: 1 -> 'st', 12 -> 'th', 22 -> 'nd'."""
    check_int_range("day", day, 1, 31)
    if 11 <= day <= 13:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _apply_case(text, case):
    if case == "as written":
        return text
    if case == "lower":
        return text.lower()
    if case == "upper":
        return text.upper()
    return capwords(text)  # "21th of august" -> "21th Of August" (str.title would give "21Th")


_WEEKDAY_WIDTHS = {4: "wide", 5: "narrow", 6: "short"}  # E, EE, EEE: "abbreviated"


@functools.lru_cache(maxsize=4096)
def _babel_pattern(pattern, suffix, weekday):
    """The pattern Babel formats: ``{ord}`` (outside quotes) becomes the day's ``suffix`` and, when
    ``weekday`` is given, the weekday fields (``EEEE`` "Monday", ``EEE`` "Mon") become that
    day's name, as fixed text. Working on Babel's tokens keeps the quoting right (two quoted
    texts side by side would otherwise read as an escaped quote). Cached, bounded: the data
    set's patterns, suffixes and weekdays need under a thousand entries."""
    names = _LOCALE.days["format"]
    tokens = []
    for index, piece in enumerate(pattern.split("{ord}")):
        if index:
            tokens.append(("chars", suffix))
        for kind, value in tokenize_pattern(piece):
            if kind == "field" and value[0] == "E" and weekday is not None:
                kind, value = "chars", names[_WEEKDAY_WIDTHS.get(value[1], "abbreviated")][weekday]
            tokens.append((kind, value))
    return untokenize_pattern(tokens)


def has_weekday(pattern):
    """Whether ``pattern`` writes a day of the week (an ``E`` field, outside quoted text)."""
    return any(kind == "field" and value[0] == "E" for kind, value in tokenize_pattern(pattern))


def render_date(day, pattern, case="as written", weekday=None):
    """Write ``day`` (a ``datetime.date``) as text with a Babel ``pattern`` and a ``case``.

    ``pattern`` is a CLDR date pattern as in ``DATE_PATTERNS``; ``{ord}`` in it (outside
    quoted text) becomes the day's ordinal suffix. ``case`` is one of ``CASES``: ``'as written'``, ``'lower'``,
    ``'upper'`` or ``'title'``. ``weekday`` (0 = Monday .. 6 = Sunday) writes that day of the
    week instead of the true one, as a careless writer might.
    """
    check_instance("day", day, date, "a datetime.date")
    check_instance("pattern", pattern, str, "a Babel date pattern (a str)")
    if not pattern:
        raise ValueError("pattern must be a non-empty Babel date pattern, got ''")
    check_choice("case", case, tuple(CASES))
    if weekday is not None:
        weekday = int(check_int_range("weekday", weekday, 0, 6))  # 0 = Monday .. 6 = Sunday
    return _apply_case(_format(day, pattern, weekday), case)


def _format(day, pattern, weekday):
    return format_date(day, _babel_pattern(pattern, ordinal_suffix(day.day), weekday), locale=_LOCALE)


def date_texts(day):
    """Every text the data set could pair with ``day``: each pattern of ``DATE_PATTERNS`` in each
    case of ``CASES``, with the true weekday or any other (a frozenset of str)."""
    check_instance("day", day, date, "a datetime.date")
    return _date_texts(day)


@functools.lru_cache(maxsize=4096)
def _date_texts(day):  # cached: judging many generated streams asks for the same days again
    texts = set()
    for pattern in DATE_PATTERNS:
        for weekday in [None, *range(7)] if has_weekday(pattern) else [None]:
            written = _format(day, pattern, weekday)
            texts.update(_apply_case(written, case) for case in CASES)
    return frozenset(texts)


def random_dates(n, seed=0):
    """``n`` days drawn uniformly (with replacement) from ``FIRST_DATE`` to ``LAST_DATE``."""
    check_non_negative_int("n", n)
    offsets = np.random.default_rng(seed).integers(0, N_DAYS, size=n)  # (n,)
    return [FIRST_DATE + timedelta(days=int(offset)) for offset in offsets]


def date_pairs(n, seed=0, dates=None):
    """``n`` (text, ISO) pairs such as ``("Tue 10 Jul 2007", "2007-07-10")``.

    Each pair draws a day (uniformly from the whole range, or from ``dates`` when given), a
    pattern (uniformly from ``DATE_PATTERNS``), a case (with the probabilities of ``CASES``)
    and, for ``WRONG_WEEKDAY_RATE`` of the patterns that name a weekday, a random weekday to
    write instead of the true one; all from one generator seeded with ``seed``.
    """
    check_non_negative_int("n", n)
    rng = np.random.default_rng(seed)
    if dates is None:
        days = [FIRST_DATE + timedelta(days=int(offset)) for offset in rng.integers(0, N_DAYS, size=n)]
    else:
        dates = list(dates)
        if not dates:
            raise ValueError("dates must hold at least one datetime.date to draw from, got none")
        days = [dates[index] for index in rng.integers(0, len(dates), size=n)]
    patterns = rng.integers(0, len(DATE_PATTERNS), size=n)  # (n,)
    cases = rng.choice(list(CASES), size=n, p=list(CASES.values()))  # (n,)
    careless = rng.random(size=n) < WRONG_WEEKDAY_RATE  # (n,)
    weekdays = rng.integers(0, 7, size=n)  # (n,)
    pairs = []
    for day, pattern, case, wrong, weekday in zip(days, patterns, cases, careless, weekdays):
        pattern = DATE_PATTERNS[pattern]
        weekday = int(weekday) if wrong and has_weekday(pattern) else None
        pairs.append((render_date(day, pattern, str(case), weekday), day.isoformat()))
    return pairs


def split_dates(val_fraction=0.1, seed=0):
    """Split every day of the range into two disjoint sets: ``(train_dates, val_dates)``.

    A random ``val_fraction`` of the days is kept for validation: a model trained on the other
    days never saw these dates, in any pattern.
    """
    check_fraction("val_fraction", val_fraction)
    order = np.random.default_rng(seed).permutation(N_DAYS)  # (N_DAYS,)
    n_val = round(val_fraction * N_DAYS)
    days = [FIRST_DATE + timedelta(days=int(offset)) for offset in order]
    return days[n_val:], days[:n_val]


def date_datasets(n_train=40_000, n_val=2_000, val_fraction=0.1, seed=0):
    """Training and validation pairs drawn from disjoint dates: ``(train_pairs, val_pairs)``.

    The days are split once with ``split_dates(val_fraction, seed)``; each set then draws its
    pairs from its own days with ``date_pairs``, from seeds derived from ``seed``.
    """
    train_dates, val_dates = split_dates(val_fraction, seed)
    train_seed, val_seed = np.random.SeedSequence(seed).spawn(2)
    return (date_pairs(n_train, seed=train_seed, dates=train_dates),
            date_pairs(n_val, seed=val_seed, dates=val_dates))


def _length_table(pattern):
    """How long ``pattern``'s text is, by ``(month, two-digit day, weekday written)``.

    A text's length depends only on these three (the year has a fixed width in the range, and
    a case never changes the length of an English text), so the 1st and the 28th of every
    month, with every weekday written, cover all the lengths. ``weekday`` is ``None`` in the
    keys of a pattern that names none.
    """
    weekdays = range(7) if has_weekday(pattern) else (None,)
    return {(month, day >= 10, weekday): len(render_date(date(2001, month, day), pattern, weekday=weekday))
            for month in range(1, 13) for day in (1, 28) for weekday in weekdays}


def pattern_lengths(pattern):
    """The shortest and the longest text ``pattern`` writes, over every day, case and weekday."""
    lengths = _length_table(pattern).values()
    return min(lengths), max(lengths)


def _length_bin(bin_):
    check_instance("a bin", bin_, (tuple, list), "a (shortest, longest) pair")
    if len(bin_) != 2:
        raise ValueError(f"a bin must be a (shortest, longest) pair, got {bin_!r}")
    shortest = check_positive_int("shortest", bin_[0])
    return shortest, check_int_range("longest", bin_[1], shortest)  # shortest <= longest


def date_pairs_by_length(bins, n_per_bin, dates=None, seed=0):
    """``n_per_bin`` texts in every length bin, each with its ISO date and its pattern.

    ``bins`` is a list of inclusive ``(shortest, longest)`` source lengths, such as
    ``[(8, 12), (27, 29)]``. In each bin the triples ``(text, iso, pattern)`` follow the
    distribution of ``date_pairs`` (a uniform day from ``dates``, or from the whole range, a
    uniform pattern, a case, sometimes a wrong weekday) *given* that the text's length falls in
    the bin: a draw of another length is thrown away. Patterns that never reach the bin are
    left out of the draw and a draw's length is looked up before its text is written, which
    saves work and changes nothing else: even the rare long texts come quickly. Returns the
    triples bin after bin, in order. One generator seeded with ``seed`` draws everything.
    """
    check_non_negative_int("n_per_bin", n_per_bin)
    check_instance("bins", bins, (list, tuple), "a list of (shortest, longest) lengths")
    if not bins:
        raise ValueError(f"bins must be a non-empty list of (shortest, longest) lengths, got {bins!r}")
    bins = [_length_bin(bin_) for bin_ in bins]
    if dates is None:
        dates = [FIRST_DATE + timedelta(days=offset) for offset in range(N_DAYS)]
    dates = list(dates)
    if not dates:
        raise ValueError("dates must hold at least one datetime.date to draw from, got none")
    tables = {pattern: _length_table(pattern) for pattern in DATE_PATTERNS}
    ranges = {pattern: (min(table.values()), max(table.values())) for pattern, table in tables.items()}
    names_weekday = {pattern: has_weekday(pattern) for pattern in DATE_PATTERNS}
    rng = np.random.default_rng(seed)
    triples = []
    for shortest, longest in bins:
        patterns = [pattern for pattern, (low, high) in ranges.items() if low <= longest and high >= shortest]
        if not patterns:
            raise ValueError(f"no pattern writes a text of {shortest} to {longest} characters")
        kept = []
        while len(kept) < n_per_bin:
            chunk = 4 * (n_per_bin - len(kept)) + 64
            days = rng.integers(0, len(dates), size=chunk)  # (chunk,)
            chosen = rng.integers(0, len(patterns), size=chunk)  # (chunk,)
            cases = rng.choice(list(CASES), size=chunk, p=list(CASES.values()))  # (chunk,)
            careless = rng.random(size=chunk) < WRONG_WEEKDAY_RATE  # (chunk,)
            weekdays = rng.integers(0, 7, size=chunk)  # (chunk,)
            for index, choice, case, wrong, weekday in zip(days, chosen, cases, careless, weekdays):
                day, pattern = dates[index], patterns[choice]
                named = names_weekday[pattern]
                weekday = int(weekday) if wrong and named else None
                key = (day.month, day.day >= 10, (day.weekday() if weekday is None else weekday) if named else None)
                if shortest <= tables[pattern][key] <= longest:
                    kept.append((render_date(day, pattern, str(case), weekday), day.isoformat(), pattern))
                    if len(kept) == n_per_bin:
                        break
        triples.extend(kept)
    return triples


ERROR_KINDS = ("year", "month", "day", "format")
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}")


def wrong_fields(target, prediction):
    """Which parts of an ISO ``prediction`` differ from the ``target`` ``YYYY-MM-DD``.

    Returns a tuple drawn from ``('year', 'month', 'day')`` (empty when they agree), or
    ``('format',)`` when the prediction is not shaped ``YYYY-MM-DD`` at all.
    """
    if not _ISO.fullmatch(target):
        raise ValueError(f"target must be an ISO date YYYY-MM-DD, got {target!r}")
    if not _ISO.fullmatch(prediction):
        return ("format",)
    return tuple(field for field, true, predicted in zip(ERROR_KINDS, target.split("-"), prediction.split("-"))
                 if true != predicted)


def iso_date(text):
    """The day an ISO text ``YYYY-MM-DD`` names, or ``None`` when it names none: another shape, or
    no such day ("2004-07-00", "2001-02-30"). A model's translation is a string of characters;
    this says whether it is a date at all."""
    check_instance("text", text, str, "an ISO date text (a str)")
    if not _ISO.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:  # the shape is right, the day does not exist
        return None


def check_text(text, max_len):
    """Refuse what a model cannot read as a date: a non-string, an empty text, or more than ``max_len``
    characters (``None``: no limit)."""
    check_instance("text", text, str, "the text of a date (a str)")
    if not text.strip():
        raise ValueError("the text is empty: type a date, such as 'Tue 10 Jul 2007'")
    if max_len is not None and len(text) > max_len:
        raise ValueError(f"the text has {len(text)} characters, but this model reads at most {max_len}: "
                         f"{text[:max_len]!r}...")


def check_years(text):
    """Refuse a text whose year the data set never writes: every group of three or more digits is
    read as a year and must lie in ``FIRST_DATE.year``-``LAST_DATE.year`` (a two-digit year always
    does, by the century rule). "0009-09-09" and "4 July 1776" are refused before a model reads them."""
    check_instance("text", text, str, "the text of a date (a str)")
    for digits in re.findall(r"\d{3,}", text):
        if not FIRST_DATE.year <= int(digits) <= LAST_DATE.year:
            raise ValueError(f"expected a year from {FIRST_DATE.year} to {LAST_DATE.year}, the years the model was "
                             f"trained on, got {digits!r} in {text!r}")


def check_translation(output, text):
    """Refuse what a model wrote for ``text`` when it is no day of the data set's range: another
    shape, no such day ("2004-07-00"), or a year outside ``FIRST_DATE.year``-``LAST_DATE.year``.
    Returns the output when it passes. A passed output may still be the wrong day."""
    day = iso_date(output)
    if day is None:
        raise ValueError(f"the model wrote {output!r} for {text!r}, which is not a date: is the text one?")
    if not FIRST_DATE <= day <= LAST_DATE:
        raise ValueError(f"the model wrote {output!r} for {text!r}, a year outside {FIRST_DATE.year}-"
                         f"{LAST_DATE.year}, which it was never trained to write")
    return output
