"""The course's data: generators and datasets for every chapter, each with its own seeded RNG."""
# [squares: chapters 02-06]
from .squares import generate_sequences, square_datasets
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
# [dates: chapter 08]
from .dates import (
    CASES,
    DATE_PATTERNS,
    ERROR_KINDS,
    FIRST_DATE,
    LAST_DATE,
    N_DAYS,
    REFERENCE_DATES,
    date_datasets,
    date_pairs,
    render_date,
    split_dates,
    wrong_fields,
)
