"""The course's data: generators and datasets for every chapter, each with its own seeded RNG.

The dates of chapters 08 and 09 are written by Babel, which takes a while to import: their
names are loaded on first use (PEP 562), so ``import stepbystep.data`` (and the models, which
take the special token ids from here) stays light.
"""
import importlib

from .special_tokens import EOS, IGNORE_INDEX, PAD, SOS, UNK
# [squares: chapters 02-06]
from .squares import generate_sequences, square_datasets, square_splits
# [regression: chapter 01]
from .regression import make_regression_data, regression_grid, true_function
# [tokens: chapter 07]
from .tokens import (
    Seq2SeqDataset,
    Vocab,
    pad_collate,
    reverse_digits_dataset,
    reverse_words_dataset,
    train_val_split,
)
# [line images: chapter 11]
from .line_images import LINE_CLASSES, LINE_NOISE, generate_dataset, line_datasets, line_pixels
# [lag copy: chapter 10]
from .lag_copy import FIRST_TOKEN, lag_copy_accuracy, lag_copy_batch

_LAZY = {
    # [dates: chapter 08]
    **dict.fromkeys((
        "CASES",
        "DATE_PATTERNS",
        "ERROR_KINDS",
        "FIRST_DATE",
        "LAST_DATE",
        "N_DAYS",
        "REFERENCE_DATES",
        "check_text",
        "date_datasets",
        "date_pairs",
        "date_pairs_by_length",
        "pattern_lengths",
        "render_date",
        "split_dates",
        "wrong_fields",
    ), "dates"),
    # [date completions: chapter 09]
    **dict.fromkeys((
        "SEPARATOR",
        "CompletionDataset",
        "completion_collate",
        "completion_targets",
        "completion_vocab",
        "is_consistent",
        "is_well_formed",
        "prompt_ids",
        "split_stream",
        "stream_ids",
    ), "date_completions"),
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])
