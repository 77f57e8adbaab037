"""Chapter 09's streams: prompt and completion ids, the completion-only targets, parsing samples."""
from datetime import date

import pytest
import torch

from stepbystep.experiments.date_completion import complete_dates
from stepbystep.data import (
    IGNORE_INDEX,
    SEPARATOR,
    CompletionDataset,
    Vocab,
    completion_collate,
    completion_targets,
    completion_vocab,
    date_pairs,
    is_consistent,
    is_date_shaped,
    prompt_ids,
    render_date,
    split_stream,
    stream_ids,
)
from stepbystep.data.tokens import EOS, PAD, SOS
from stepbystep.models import DecoderOnlyTransformer

PAIRS = [("Tue 10 Jul 2007", "2007-07-10"), ("5 April 09", "2009-04-05")]


@pytest.fixture(scope="module")
def vocab():
    return completion_vocab(date_pairs(500, seed=0))


def test_vocab_holds_the_separator_and_every_character(vocab):
    assert SEPARATOR in vocab.stoi
    assert all(character in vocab.stoi for text, iso in PAIRS for character in text + iso)


def test_stream_is_sos_text_separator_iso_eos(vocab):
    ids = stream_ids("Tue 10 Jul 2007", "2007-07-10", vocab)
    assert ids[0] == SOS and ids[-1] == EOS
    assert vocab.decode(ids) == "Tue 10 Jul 2007=2007-07-10"
    assert ids[:17] == prompt_ids("Tue 10 Jul 2007", vocab)
    assert prompt_ids("March", vocab, separator=False) == [SOS] + vocab.encode("March")
    assert prompt_ids("", vocab, separator=False) == [SOS]


def test_completion_targets_mask_the_prompt():
    stream = torch.tensor([SOS, 10, 11, 12, 40, 5, 6, EOS])  # <sos> a b c = x y <eos>
    targets = completion_targets(stream, prompt_length=5)
    assert targets.tolist() == [IGNORE_INDEX] * 4 + [5, 6, EOS]


def test_dataset_completion_only_and_full(vocab):
    only = CompletionDataset(PAIRS, vocab)
    inputs, targets = only[0]
    stream = torch.tensor(stream_ids(*PAIRS[0], vocab))
    assert torch.equal(inputs, stream[:-1])
    counted = targets != IGNORE_INDEX
    assert counted.sum() == 11  # ten ISO characters and <eos>
    assert vocab.decode(targets[counted]) == "2007-07-10"
    full = CompletionDataset(PAIRS, vocab, completion_only=False)
    assert torch.equal(full[0][1], stream[1:])


def test_collate_pads_inputs_with_pad_and_targets_with_ignore(vocab):
    inputs, targets = completion_collate([CompletionDataset(PAIRS, vocab)[i] for i in range(2)])
    assert inputs.shape == targets.shape == (2, len("Tue 10 Jul 2007") + 12)
    short = len("5 April 09") + 12
    assert inputs[1, short:].eq(PAD).all() and targets[1, short:].eq(IGNORE_INDEX).all()


def test_split_stream_and_date_shaped(vocab):
    ids = stream_ids("March 3rd 2001", "2001-03-03", vocab)
    assert split_stream(ids, vocab) == ("March 3rd 2001", "2001-03-03", True)
    assert is_date_shaped(ids, vocab)
    assert is_date_shaped(ids + [PAD, PAD], vocab)
    assert not is_date_shaped(ids[:-1], vocab)  # no <eos>
    assert not is_date_shaped(stream_ids("March 3rd 2001", "2001-02-30", vocab), vocab)  # no such day
    assert not is_date_shaped(stream_ids("March 3rd 2001", "2001-3-3", vocab), vocab)
    assert not is_date_shaped(stream_ids("March", "1949-12-31", vocab), vocab)  # outside the range
    no_separator = [SOS] + vocab.encode("March 3rd") + [EOS]
    assert split_stream(no_separator, vocab) == ("March 3rd", None, True)
    assert not is_date_shaped(no_separator, vocab)


def test_is_consistent_accepts_every_pattern_case_and_weekday():
    day = date(2018, 5, 9)
    assert is_consistent("Saturday May 9 2018", "2018-05-09")  # a wrong weekday, as in the data
    assert is_consistent(render_date(day, "d MMMM yy", "upper"), "2018-05-09")
    assert is_consistent("9th of May 2018", "2018-05-09")
    assert not is_consistent("9 May 2018", "2018-05-10")
    assert not is_consistent("9 Mai 2018", "2018-05-09")
    assert not is_consistent("9 May 2018", None)


def test_complete_dates_returns_one_string_per_text(vocab):
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(len(vocab), d_model=16, n_heads=2, ff_units=32, dropout=0.0, max_len=48)
    outputs = complete_dates(model, ["3 May 1979", "Tue 10 Jul 2007", "1 March 2001"], vocab, batch_size=2)
    assert len(outputs) == 3 and all(isinstance(output, str) and len(output) <= 11 for output in outputs)
    with pytest.raises(TypeError, match="texts must be a list of texts, got one str"):
        complete_dates(model, "3 May 1979", vocab)


def test_errors():
    with pytest.raises(ValueError, match="vocab must hold the separator '='"):
        prompt_ids("3 May", Vocab("3 May"))
    with pytest.raises(TypeError, match="vocab must be a Vocab, got dict"):
        CompletionDataset(PAIRS, {"=": 4})
    with pytest.raises(ValueError, match=r"pairs must hold at least one \(text, iso\) pair"):
        completion_vocab([])
    with pytest.raises(ValueError, match="prompt_length must be an int from 1 to 2, got 3"):
        completion_targets(torch.tensor([1, 2, 3]), 3)
    with pytest.raises(ValueError, match=r"stream must be a 1-D tensor, got shape \(1, 3\)"):
        completion_targets(torch.tensor([[1, 2, 3]]), 1)
