"""The course's data: generators and datasets for every chapter, each with its own seeded RNG.

The special token ids first (the models take them from here), then one module per chapter, in
the course's order.
"""
from .special_tokens import EOS, IGNORE_INDEX, PAD, SOS, UNK
from .regression import make_regression_data, regression_grid, true_function
from .squares import generate_sequences, square_datasets, square_splits
from .tokens import (
    Seq2SeqDataset,
    Vocab,
    pad_collate,
    reverse_digits_dataset,
    reverse_words_dataset,
    train_val_split,
)
from .dates import (
    CASES,
    DATE_PATTERNS,
    ERROR_KINDS,
    FIRST_DATE,
    LAST_DATE,
    N_DAYS,
    REFERENCE_DATES,
    check_text,
    check_translation,
    check_years,
    date_datasets,
    date_pairs,
    date_pairs_by_length,
    date_texts,
    iso_date,
    pattern_lengths,
    render_date,
    split_dates,
    wrong_fields,
)
from .date_completions import (
    SEPARATOR,
    CompletionDataset,
    completion_collate,
    completion_targets,
    completion_vocab,
    is_consistent,
    is_date_shaped,
    prompt_ids,
    split_stream,
    stream_ids,
)
from .lag_copy import FIRST_TOKEN, lag_copy_accuracy, lag_copy_batch
from .bar_images import BAR_CLASSES, bar_datasets, generate_bars
from .line_images import LINE_CLASSES, LINE_NOISE, generate_dataset, line_datasets, line_pixels
from .repeated_sequences import repeated_sequences
from .bpe import GPT2_PATTERN, BytePairTokenizer
from .shakespeare import shakespeare_plays, shakespeare_text
