"""Chapter 08's error analysis over training runs: what the chapter quotes from runs it does not make.

``translation_seed_study`` trains the chapter's recipe from ``SEEDS``, ``{threads: seeds}`` (at two
threads the sums inside the model add in another order, so the training takes another path), and
``error_profile`` measures each model as the chapter measures its own: the 1,000 texts per length
bin, the wrong fields and their kinds, and what it writes for texts that are no date.
``python -m stepbystep.experiments.translation_seeds`` writes ``results/translation_seeds.json``;
a test recomputes one run.
"""
import json
from collections import Counter
from pathlib import Path

import torch

from ..data import date_pairs_by_length, iso_date, split_dates, wrong_fields
from ..devices import environment, torch_threads
from ..models import translate, translate_with_alignment
from .date_error_kinds import digit_reads, field_error_kinds, in_field_shares
from .date_translation import translation_seed_study

__all__ = ["SEEDS", "THREADS", "LENGTH_BINS", "NOT_DATES", "OUT_OF_RANGE", "CENTURY_EDGES", "RESULTS", "error_profile", "translation_seeds",
           "load_translation_seeds"]

SEEDS = {1: (0, 1, 2, 3, 4)}  # threads -> training seeds
LENGTH_BINS = [(8, 12), (13, 17), (18, 22), (23, 26), (27, 29)]
NOT_DATES = ("hello world", "banana", "no date here", "Tuesday", "March", "42", "?")
OUT_OF_RANGE = ("4 July 1776", "1 January 2050", "31 December 1949")
CENTURY_EDGES = ("5 April 49", "5 April 50")  # two-digit years at the century rule's boundary
RESULTS = Path(__file__).parent / "results" / "translation_seeds.json"


def error_profile(model, src_vocab, tgt_vocab, n_aligned=300):
    """The chapter's measures of one trained model: wrong translations per length bin (1,000 texts
    each, validation days, seed 1); the wrong fields and their kinds; the pattern with the most
    errors, with its wrong and all texts per bin; the wrong days whose tens digit was written 0
    ("22" -> "02"); the outputs that name no real day, and those that name a day outside
    1950-2049; how many rows of the wrong translations read most a digit of the field they write,
    among those that wrote a wrong digit and, the control, those that wrote a right one
    (``in_field_shares``, over the first ``n_aligned`` wrong translations: a trained run has fewer);
    the translations of ``NOT_DATES``, each with whether it names a real day, of ``OUT_OF_RANGE`` (years the data set never writes) and of ``CENTURY_EDGES``."""
    _, val_days = split_dates(val_fraction=0.1, seed=0)
    by_length = date_pairs_by_length(LENGTH_BINS, n_per_bin=1_000, dates=val_days, seed=1)
    texts, targets, patterns = zip(*by_length)
    predictions = translate(model, list(texts), src_vocab, tgt_vocab, max_new_tokens=11)
    wrong = [(target, predicted, pattern) for target, predicted, pattern in zip(targets, predictions, patterns)
             if predicted != target]
    fields = Counter(field for target, predicted, _ in wrong for field in wrong_fields(target, predicted))
    kinds = field_error_kinds([t for t, _, _ in wrong], [p for _, p, _ in wrong])
    top = Counter(pattern for _, _, pattern in wrong).most_common(1)[0][0] if wrong else None
    in_top = [(len(text), predicted != target) for text, target, predicted, pattern
              in zip(texts, targets, predictions, patterns) if pattern == top]
    days = [(target[-2:], predicted[-2:]) for target, predicted, _ in wrong if "day" in wrong_fields(target, predicted)]
    wrong_texts = [(text, target) for text, target, predicted in zip(texts, targets, predictions) if predicted != target]
    reads = [read for text, target in wrong_texts[:n_aligned]
             for read in digit_reads(translate_with_alignment(model, text, src_vocab, tgt_vocab, max_new_tokens=11),
                                     target)]
    outputs = translate(model, list(NOT_DATES + OUT_OF_RANGE + CENTURY_EDGES), src_vocab, tgt_vocab,
                        max_new_tokens=11)
    days_named = [iso_date(predicted) for predicted in predictions]
    return {"bin_wrong": [sum(p != t for p, t in zip(predictions[i:i + 1_000], targets[i:i + 1_000]))
                          for i in range(0, len(targets), 1_000)],
            "n_wrong": len(wrong), "fields": dict(fields),
            "kinds": {f"{field}: {kind}": k for (field, kind), k in sorted(kinds.items())},
            "top_pattern": [top, sum(pattern == top for _, _, pattern in wrong)],
            "top_pattern_bins": [[sum(bad for length, bad in in_top if low <= length <= high),
                                  sum(low <= length <= high for length, _ in in_top)] for low, high in LENGTH_BINS],
            "wrong_days": len(days), "days_zero_tens": sum(written[0] == "0" != right[0] for right, written in days),
            "not_real": sum(day is None for day in days_named),
            "outside_years": sum(day is not None and not 1950 <= day.year <= 2049 for day in days_named),
            "in_field": in_field_shares(reads),
            "not_dates": {text: [output, iso_date(output) is not None] for text, output in zip(NOT_DATES, outputs)},
            "out_of_range": dict(zip(OUT_OF_RANGE, outputs[len(NOT_DATES):len(NOT_DATES) + len(OUT_OF_RANGE)])),
            "century_edges": dict(zip(CENTURY_EDGES, outputs[len(NOT_DATES) + len(OUT_OF_RANGE):]))}


def translation_seeds(seeds=SEEDS):
    """Every run of ``seeds`` (``{threads: training seeds}``): a list of dicts with ``threads``,
    ``translation_seed_study``'s numbers and ``error_profile``'s."""
    runs = []
    for threads, thread_seeds in seeds.items():
        with torch_threads(threads):
            runs += [{"threads": threads, **run}
                     for run in translation_seed_study(thread_seeds, measure=error_profile)]
    return runs


def load_translation_seeds(path=RESULTS):
    """The stored runs (a list of dicts, as ``translation_seeds`` returns them)."""
    return json.loads(Path(path).read_text())["runs"]


if __name__ == "__main__":
    computed = translation_seeds()
    with torch_threads(1):  # the threads of every run in SEEDS
        setting = environment()
    RESULTS.write_text(json.dumps({"written_by": "python -m stepbystep.experiments.translation_seeds",
                                   "torch": torch.__version__.split("+")[0], "environment": setting, "device": "cpu",
                                   "runs": computed}, indent=1) + "\n")
    print(f"wrote {len(computed)} runs to {RESULTS}")
