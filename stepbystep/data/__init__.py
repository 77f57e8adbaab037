"""The course's data: generators and datasets for every chapter, each with its own seeded RNG."""
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
    date_pairs_by_length,
    pattern_lengths,
    render_date,
    split_dates,
    wrong_fields,
)
# [line images: chapter 11]
from .line_images import LINE_CLASSES, LINE_NOISE, generate_dataset, line_datasets, line_pixels
# [date completions: chapter 09]
from .date_completions import (
    IGNORE_INDEX,
    SEPARATOR,
    CompletionDataset,
    complete_dates,
    completion_collate,
    completion_targets,
    completion_vocab,
    is_consistent,
    is_well_formed,
    prompt_ids,
    split_stream,
    stream_ids,
)
