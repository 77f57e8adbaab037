"""Chapter 08's runs from other seeds: the stored file, one run recomputed, and error_profile."""
import json

import pytest
import torch

from stepbystep.data import Vocab, date_datasets
from stepbystep.devices import environment, torch_threads
from stepbystep.experiments.translation_seeds import (
    LENGTH_BINS,
    NOT_DATES,
    CENTURY_EDGES,
    OUT_OF_RANGE,
    RESULTS,
    SEEDS,
    error_profile,
    load_translation_seeds,
    translation_seeds,
)
from stepbystep.models import TokenTransformer
from stepbystep.models.metrics import wilson_interval


def test_the_file_holds_every_run_and_how_it_was_written():
    assert '"written_by": "python -m stepbystep.experiments.translation_seeds"' in RESULTS.read_text()
    runs = load_translation_seeds()
    assert [(run["threads"], run["seed"]) for run in runs] == [(t, s) for t, seeds in SEEDS.items() for s in seeds]
    for run in runs:
        assert len(run["bin_wrong"]) == len(LENGTH_BINS) and all(0 <= k <= 1_000 for k in run["bin_wrong"])
        assert sum(run["bin_wrong"]) == run["n_wrong"]
        assert sum(wrong for wrong, _ in run["top_pattern_bins"]) == run["top_pattern"][1] <= run["n_wrong"]
        assert 0 <= run["days_zero_tens"] <= run["wrong_days"] == run["fields"].get("day", 0)
        assert list(run["not_dates"]) == list(NOT_DATES) and list(run["out_of_range"]) == list(OUT_OF_RANGE)
        assert list(run["century_edges"]) == list(CENTURY_EDGES)
        assert 0 <= run["not_real"] + run["outside_years"] <= run["n_wrong"]
        for kind in ("wrong", "right"):
            assert 0 <= run["in_field"][kind][0] <= run["in_field"][kind][1]
        # every wrong digit row of a day or a year is counted: at least one per wrong year or day field
        assert run["in_field"]["wrong"][1] >= run["fields"].get("year", 0) + run["fields"].get("day", 0)


def test_the_study_has_five_seeds_at_one_thread():
    assert SEEDS == {1: (0, 1, 2, 3, 4)}


def test_one_stored_run_is_computed_again():
    """Seed 1 at one thread, as the command trained it: the same counts on the machine that wrote the
    file (another CPU adds its sums in another order, and 1,200 steps may then take another path)."""
    with torch_threads(1):
        (fresh,) = translation_seeds({1: (1,)})
        same_setting = environment() == json.loads(RESULTS.read_text())["environment"]
    stored = next(run for run in load_translation_seeds() if (run["threads"], run["seed"]) == (1, 1))
    if same_setting:
        assert fresh["exact_match"] == pytest.approx(stored["exact_match"], abs=0.0015)
        for key in ("bin_wrong", "fields", "kinds", "top_pattern_bins", "days_zero_tens", "not_real", "outside_years",
                    "in_field", "not_dates", "out_of_range", "century_edges"):
            assert fresh[key] == stored[key], key
    # anywhere, the run bears out what the chapter says of every run: at least 99.5% exact, at least 80% of
    # the 27-29 character texts right, though the whole interval of their errors lies above those of the
    # two shortest bins, and '4 July 1776' wrong without translate's checks
    assert fresh["exact_match"] >= 0.995
    longest, shortest = fresh["bin_wrong"][-1], fresh["bin_wrong"][:2]  # wrong of 1,000 per length bin
    assert longest <= 200 and wilson_interval(longest, 1_000)[0] > max(wilson_interval(k, 1_000)[1] for k in shortest)
    assert fresh["out_of_range"]["4 July 1776"] != "1776-07-04"


def test_error_profile_measures_an_untrained_model_too():
    train_pairs, _ = date_datasets(n_train=200, n_val=10, seed=0)
    src_vocab = Vocab.from_texts([text for text, _ in train_pairs])
    tgt_vocab = Vocab.from_texts([iso for _, iso in train_pairs])
    torch.manual_seed(0)
    model = TokenTransformer(len(src_vocab), len(tgt_vocab), d_model=16, n_heads=2, ff_units=16, n_layers=1,
                             dropout=0.0, max_len=32)
    profile = error_profile(model, src_vocab, tgt_vocab, n_aligned=20)
    assert profile["bin_wrong"] == [1_000] * len(LENGTH_BINS)  # an untrained model gets no date right
    assert profile["n_wrong"] == 5_000 and profile["not_real"] + profile["outside_years"] <= 5_000
    # the reads of 20 wrong translations: at most 8 digit rows each (year, month and day in digits)
    assert 0 < sum(n for _, n in profile["in_field"].values()) <= 20 * 8
    assert all(isinstance(output, str) and isinstance(real, bool) for output, real in profile["not_dates"].values())
