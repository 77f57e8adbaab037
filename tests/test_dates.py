"""The dates data set of chapter 08: patterns, cases, seeds, disjoint splits."""
import random
import re
from datetime import date

import pytest

from stepbystep.data import CASES, DATE_PATTERNS, REFERENCE_DATES, date_datasets, date_pairs, render_date, split_dates
from stepbystep.data import date_pairs_by_length, date_texts, pattern_lengths
from stepbystep.data.dates import FIRST_DATE, LAST_DATE, N_DAYS, has_weekday, ordinal_suffix, random_dates

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@pytest.mark.parametrize(
    "text, day, pattern, weekday",
    [
        ("3 May 1979", date(1979, 5, 3), "d MMM y", None),
        ("5 April 09", date(2009, 4, 5), "d MMMM yy", None),
        ("21th of August 2016", date(2016, 8, 21), "d'th of' MMMM y", None),
        ("Tue 10 Jul 2007", date(2007, 7, 10), "EEE d MMM y", None),
        ("Saturday May 9 2018", date(2018, 5, 9), "EEEE MMMM d y", 5),  # 9 May 2018 was a Wednesday
        ("March 3 2001", date(2001, 3, 3), "MMMM d y", None),
        ("March 3rd 2001", date(2001, 3, 3), "MMMM d{ord} y", None),
        ("1 March 2001", date(2001, 3, 1), "d MMMM y", None),
    ],
)
def test_reference_examples_come_from_a_pattern(text, day, pattern, weekday):
    assert pattern in DATE_PATTERNS
    assert render_date(day, pattern, weekday=weekday) == text
    assert REFERENCE_DATES[text] == day.isoformat()


def test_the_true_weekday_by_default():
    assert render_date(date(2018, 5, 9), "EEEE MMMM d y") == "Wednesday May 9 2018"
    assert render_date(date(2007, 7, 10), "EEE d MMM y", weekday=1) == "Tue 10 Jul 2007"


def test_a_wrong_weekday_keeps_quoted_text():
    assert render_date(date(2016, 8, 21), "EEEE d'th of' MMMM y", weekday=0) == "Monday 21th of August 2016"
    assert render_date(date(2016, 8, 21), "d 'EEE' y", weekday=0) == "21 EEE 2016"
    with pytest.raises(ValueError, match="weekday must be an int from 0"):
        render_date(date(2016, 8, 21), "EEE d MMM y", weekday=7)


def test_has_weekday():
    assert has_weekday("EEE d MMM y") and has_weekday("EEEE, MMMM d, y")
    assert not has_weekday("d MMM y") and not has_weekday("d 'EEE' y")


def test_some_pairs_name_a_wrong_weekday():
    """A few weekday pairs name another day, most name the true one; the ISO date is always the day's."""
    weekday_names = [render_date(date(2024, 1, 1 + i), "EEEE") for i in range(7)]  # Monday .. Sunday
    true, wrong = 0, 0
    for text, iso in date_pairs(3000, seed=0):
        named = [i for i, name in enumerate(weekday_names) if name[:3].lower() in text.lower()[:3]]
        if named:
            if named[0] == date.fromisoformat(iso).weekday():
                true += 1
            else:
                wrong += 1
    assert wrong > 0 and true > 5 * wrong


def test_reference_dates_lie_in_the_range():
    assert len(REFERENCE_DATES) == 8
    assert all(FIRST_DATE <= date.fromisoformat(iso) <= LAST_DATE for iso in REFERENCE_DATES.values())


@pytest.mark.parametrize("day, suffix", [(1, "st"), (2, "nd"), (3, "rd"), (4, "th"), (11, "th"), (12, "th"),
                                         (13, "th"), (21, "st"), (22, "nd"), (23, "rd"), (30, "th"), (31, "st")])
def test_ordinal_suffix(day, suffix):
    assert ordinal_suffix(day) == suffix


@pytest.mark.parametrize("bad, error", [(0, ValueError), (32, ValueError), (3.0, TypeError), (True, TypeError),
                                        ("3", TypeError)])
def test_ordinal_suffix_rejects_non_days(bad, error):
    with pytest.raises(error, match="day must be an int from 1 to 31"):
        ordinal_suffix(bad)


def test_cases():
    day = date(2016, 8, 21)
    assert render_date(day, "d'th of' MMMM y", "lower") == "21th of august 2016"
    assert render_date(day, "d'th of' MMMM y", "upper") == "21TH OF AUGUST 2016"
    assert render_date(day, "d'th of' MMMM y", "title") == "21th Of August 2016"
    assert render_date(day, "EEE, d MMM y") == "Sun, 21 Aug 2016"


def test_numeric_patterns_pad_and_order():
    day = date(1961, 2, 7)
    assert render_date(day, "y/MM/dd") == "1961/02/07"
    assert render_date(day, "dd.MM.y") == "07.02.1961"
    assert render_date(day, "d.M.y") == "7.2.1961"


def test_two_digit_years_follow_the_century_rule():
    """Within the range, the two digits and the rule 00-49 -> 20xx, 50-99 -> 19xx give back the year."""
    for year in (1950, 1999, 2000, 2049):
        two_digits = render_date(date(year, 6, 1), "d MMMM yy")[-2:]
        assert (2000 if int(two_digits) < 50 else 1900) + int(two_digits) == year


def test_render_date_rejects_bad_input():
    with pytest.raises(TypeError, match="datetime.date"):
        render_date("2001-03-03", "d MMM y")
    with pytest.raises(ValueError, match="case must be one of"):
        render_date(date(2001, 3, 3), "d MMM y", case="shouting")
    with pytest.raises(ValueError, match="non-empty"):
        render_date(date(2001, 3, 3), "")


def test_pairs_are_seeded_and_well_formed():
    pairs = date_pairs(500, seed=3)
    assert pairs == date_pairs(500, seed=3)
    assert pairs != date_pairs(500, seed=4)
    assert len(pairs) == 500
    for text, iso in pairs:
        assert isinstance(text, str) and 0 < len(text) <= 30
        assert ISO.match(iso)
        assert FIRST_DATE <= date.fromisoformat(iso) <= LAST_DATE


def test_pairs_cover_patterns_and_cases():
    pairs = date_pairs(3000, seed=0)
    texts = {text for text, _ in pairs}
    assert any(text.isupper() for text in texts)
    assert any(text.islower() and any(c.isalpha() for c in text) for text in texts)
    assert any(re.search(r"\d(st|nd|rd)\b", text, re.IGNORECASE) for text in texts)
    assert any(re.search(r"\bof\b", text, re.IGNORECASE) for text in texts)
    assert any("," in text for text in texts)


def test_text_and_iso_agree():
    """Re-render each pair's ISO date with every pattern, case and weekday: one of them gives the text."""
    for text, iso in date_pairs(200, seed=1):
        day = date.fromisoformat(iso)
        assert any(render_date(day, pattern, case, weekday) == text
                   for pattern in DATE_PATTERNS for case in CASES for weekday in (None, *range(7)))


def test_pairs_do_not_touch_the_global_rngs():
    random.seed(0)
    state = random.getstate()
    import numpy as np
    np.random.seed(0)
    np_state = np.random.get_state()[1].copy()
    date_pairs(50, seed=0)
    assert random.getstate() == state
    assert (np.random.get_state()[1] == np_state).all()


def test_pairs_from_given_dates():
    chosen = [date(2001, 3, 3), date(1979, 5, 3)]
    assert {iso for _, iso in date_pairs(100, seed=0, dates=chosen)} == {"2001-03-03", "1979-05-03"}
    with pytest.raises(ValueError, match="at least one"):
        date_pairs(3, dates=[])


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2.5, TypeError), (True, TypeError)])
def test_counts_are_checked(bad, error):
    with pytest.raises(error, match="n must be a non-negative int"):
        date_pairs(bad)
    with pytest.raises(error, match="n must be a non-negative int"):
        random_dates(bad)


def test_random_dates_stay_in_range():
    days = random_dates(2000, seed=5)
    assert min(days) >= FIRST_DATE and max(days) <= LAST_DATE
    assert days == random_dates(2000, seed=5)


def test_split_dates_is_a_seeded_partition():
    train, val = split_dates(0.1, seed=2)
    assert len(train) + len(val) == N_DAYS
    assert set(train).isdisjoint(val)
    assert len(val) == round(0.1 * N_DAYS)
    assert (train, val) == split_dates(0.1, seed=2)
    with pytest.raises(ValueError, match="val_fraction"):
        split_dates(1.0)


def test_datasets_are_disjoint_by_date_and_seeded():
    train, val = date_datasets(n_train=3000, n_val=500, seed=7)
    assert len(train) == 3000 and len(val) == 500
    assert {iso for _, iso in train}.isdisjoint({iso for _, iso in val})
    assert {text for text, _ in train}.isdisjoint({text for text, _ in val})
    assert (train, val) == date_datasets(n_train=3000, n_val=500, seed=7)
    assert train != date_datasets(n_train=3000, n_val=500, seed=8)[0]


def test_ordinal_next_to_quoted_text():
    """{ord} beside a quoted word must not turn two quotes into an escaped quote."""
    assert render_date(date(2001, 3, 3), "d{ord}' of 'MMMM y") == "3rd of March 2001"
    assert render_date(date(2001, 3, 22), "'the 'd{ord}") == "the 22nd"


def test_pattern_lengths_cover_every_text():
    assert pattern_lengths("y/MM/dd") == (10, 10)
    assert pattern_lengths("d MMM yy") == (8, 9)
    assert pattern_lengths("EEEE, MMMM d, y") == (19, 29)  # "Friday, May 1, 2015" .. "Wednesday, September 20, 2034"
    pairs = date_pairs(3000, seed=2)
    for text, iso in pairs[:40]:
        day = date.fromisoformat(iso)
        for pattern in DATE_PATTERNS:
            low, high = pattern_lengths(pattern)
            for case in CASES:
                assert low <= len(render_date(day, pattern, case)) <= high


BINS = [(8, 12), (18, 22), (27, 29)]


def test_pairs_by_length_fill_every_bin_from_the_given_days():
    _, val_days = split_dates(0.1, seed=0)
    triples = date_pairs_by_length(BINS, 50, dates=val_days, seed=1)
    assert len(triples) == 150
    allowed = {day.isoformat() for day in val_days}
    for index, (text, iso, pattern) in enumerate(triples):
        shortest, longest = BINS[index // 50]
        assert shortest <= len(text) <= longest
        assert iso in allowed and pattern in DATE_PATTERNS
        day = date.fromisoformat(iso)
        assert any(render_date(day, pattern, case, weekday) == text for case in CASES for weekday in (None, *range(7)))
    assert triples == date_pairs_by_length(BINS, 50, dates=val_days, seed=1)
    assert triples != date_pairs_by_length(BINS, 50, dates=val_days, seed=2)


def test_pairs_by_length_follow_the_distribution_given_the_length():
    """Within a bin, patterns come as often as date_pairs writes them at those lengths."""
    natural = [(text, iso) for text, iso in date_pairs(20_000, seed=3) if 18 <= len(text) <= 22]
    drawn = date_pairs_by_length([(18, 22)], len(natural), seed=4)
    def share_with_weekday(texts):
        names = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
        return sum(text[:3].lower() in names for text in texts) / len(texts)
    assert abs(share_with_weekday([t for t, _ in natural]) - share_with_weekday([t for t, _, _ in drawn])) < 0.05
    natural_upper = sum(text.isupper() for text, _ in natural) / len(natural)
    drawn_upper = sum(text.isupper() for text, _, _ in drawn) / len(drawn)
    assert abs(natural_upper - drawn_upper) < 0.04


def test_pairs_by_length_reject_bad_bins():
    with pytest.raises(ValueError, match="bins must"):
        date_pairs_by_length([], 5)
    with pytest.raises(ValueError, match="longest must be an int >= 12, got 8"):
        date_pairs_by_length([(12, 8)], 5)
    with pytest.raises(ValueError, match="no pattern writes"):
        date_pairs_by_length([(40, 50)], 5)
    with pytest.raises(ValueError, match="non-negative int"):
        date_pairs_by_length([(8, 12)], -1)
    assert date_pairs_by_length([(8, 12)], 0) == []


@pytest.mark.parametrize("day", [date(2001, 3, 3), date(2016, 8, 21), FIRST_DATE, LAST_DATE])
def test_date_texts_are_every_rendering_of_the_day(day):
    every = {render_date(day, pattern, case, weekday) for pattern in DATE_PATTERNS for case in CASES
             for weekday in ([None, *range(7)] if has_weekday(pattern) else [None])}
    assert date_texts(day) == every
    assert "March 3rd 2001" in date_texts(date(2001, 3, 3)) and "MARCH 3RD 2001" in date_texts(date(2001, 3, 3))
    assert "March 4th 2001" not in date_texts(date(2001, 3, 3))


def test_date_texts_hold_every_pair_of_the_data_set():
    for text, iso in date_pairs(300, seed=3):
        assert text in date_texts(date.fromisoformat(iso))


def test_date_texts_reject_a_non_date():
    with pytest.raises(TypeError, match="datetime.date"):
        date_texts("2001-03-03")
    with pytest.raises(TypeError, match="datetime.date"):
        date_texts([2001, 3, 3])
