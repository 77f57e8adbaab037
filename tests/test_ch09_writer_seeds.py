"""Chapter 09's sampling comparison over training seeds: the stored study, one training seed
recomputed, and the helpers it is made of."""
import pytest
import torch

from stepbystep.data import completion_vocab, date_datasets, prompt_ids
from stepbystep.devices import torch_threads
from stepbystep.experiments.writer_seeds import (
    PARTIAL_TEXTS,
    SAMPLE_SEEDS,
    SEEDS,
    SETTINGS,
    judge_streams,
    load_writer_seeds,
    median_right,
    sample_counts,
    writer_seed_study,
)
from stepbystep.models import DecoderOnlyTransformer


def test_the_stored_study_holds_every_setting_for_every_training_and_generator_seed():
    study = load_writer_seeds()
    assert study["written_by"] == "python -m stepbystep.experiments.writer_seeds"
    assert [run["seed"] for run in study["runs"]] == list(SEEDS)
    assert study["sample_seeds"] == list(SAMPLE_SEEDS) and study["streams_per_seed"] == 8 * len(PARTIAL_TEXTS)
    for run in study["runs"]:
        assert list(run["settings"]) == list(SETTINGS)
        assert 0.9 < run["exact"] <= 1 and 0 <= run["greedy_right"] <= run["greedy_date_shaped"] <= 8
        for counts in run["settings"].values():
            assert len(counts["right"]) == len(counts["date_shaped"]) == len(SAMPLE_SEEDS)
            assert all(0 <= right <= shaped <= 64 for right, shaped in zip(counts["right"], counts["date_shaped"]))


def test_one_training_seed_is_computed_again():
    """Training seed 1 from scratch, on the CPU at one thread, as the command wrote the file: the
    same counts. (Another CPU adds its sums in another order and may take another path.)"""
    with torch_threads(1):
        study = writer_seed_study(seeds=(1,))
    (fresh,), stored = study["runs"], load_writer_seeds()
    if study["environment"] == stored["environment"]:
        run = stored["runs"][1]
        assert fresh["exact"] == pytest.approx(run["exact"], abs=0.0015)
        assert (fresh["greedy_date_shaped"], fresh["greedy_right"]) == (run["greedy_date_shaped"], run["greedy_right"])
        for name in SETTINGS:
            assert fresh["settings"][name] == run["settings"][name], name
    # anywhere, the writer bears out what the chapter says of every training seed, in the median over the
    # generator seeds: top-k 3 at least twice T = 1.5 alone, top-p 0.9 above it, T = 0.5 above both filters
    right = {name: median_right(fresh, name) for name in SETTINGS}
    assert right["T = 1.5, top-k 3"] >= 2 * max(1, right["T = 1.5"]), right
    assert right["T = 1.5, top-p 0.9"] > right["T = 1.5"], right
    assert right["T = 0.5"] > max(right["T = 1.5, top-k 3"], right["T = 1.5, top-p 0.9"]), right


def test_median_right_is_the_median_over_generator_seeds():
    run = {"settings": {"a": {"right": [3, 9, 1, 4, 4]}}}
    assert median_right(run, "a") == 4


def _untrained():
    train_pairs, _ = date_datasets(n_train=200, n_val=10, seed=0)
    vocab = completion_vocab(train_pairs)
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(len(vocab), d_model=16, n_heads=2, ff_units=32, n_layers=1, dropout=0.0,
                                   max_len=48, tie_weights=False, embedding_std=0.3)
    return model, vocab


def test_judge_streams_tells_right_from_date_shaped_from_neither():
    model, vocab = _untrained()
    rows = [prompt_ids("3 May 1979", vocab) + vocab.encode("1979-05-03") + [2],   # right
            prompt_ids("3 Mai 1979", vocab) + vocab.encode("1979-05-03") + [2],   # a real date, not this text's
            prompt_ids("3 May 1979", vocab) + vocab.encode("1979-05-33") + [2]]   # no such day
    judged = judge_streams(rows, vocab)
    assert [(shaped, right) for _, shaped, right in judged] == [(True, True), (True, False), (False, False)]
    assert judged[0][0] == "3 May 1979=1979-05-03"


def test_sample_counts_repeat_with_the_seeds_and_count_every_stream():
    model, vocab = _untrained()
    prompts = [prompt_ids(text, vocab, separator=False) for text in PARTIAL_TEXTS[:2]]
    first = sample_counts(model, prompts, vocab, sample_seeds=(0, 1), n_samples=3, temperature=1.0)
    again = sample_counts(model, prompts, vocab, sample_seeds=(0, 1), n_samples=3, temperature=1.0)
    assert first == again
    date_shaped, right, samples = first
    assert len(date_shaped) == len(right) == 2 and len(samples) == 6
