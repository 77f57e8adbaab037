"""Chapter 08's dates as one stream of characters, for a decoder-only model (chapter 09).

A pair ``("Tue 10 Jul 2007", "2007-07-10")`` becomes the stream

    <sos> T u e ␣ 1 0 ␣ J u l ␣ 2 0 0 7 = 2 0 0 7 - 0 7 - 1 0 <eos>

The **prompt** is ``<sos>``, the text and the separator ``=``; the **completion** is the ISO
date and ``<eos>``. A model trained on such streams translates by continuing a prompt, and,
when its loss also covered the text, writes dates of its own from a partial text ("March").
"""
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Dataset

from ..checks import check_instance, check_int_range, check_tensor
from .dates import FIRST_DATE, LAST_DATE, date_texts, iso_date
from .special_tokens import EOS, IGNORE_INDEX, PAD, SOS
from .tokens import Vocab

__all__ = [
    "SEPARATOR",
    "IGNORE_INDEX",
    "completion_vocab",
    "prompt_ids",
    "stream_ids",
    "completion_targets",
    "CompletionDataset",
    "completion_collate",
    "split_stream",
    "is_date_shaped",
    "is_consistent",
]

SEPARATOR = "="  # between the text and its ISO form; no date text contains it


def completion_vocab(pairs):
    """A character ``Vocab`` for the streams of ``pairs``: every character of the texts and ISO
    dates, and ``SEPARATOR``."""
    pairs = list(pairs)
    if not pairs:
        raise ValueError("pairs must hold at least one (text, iso) pair, got none")
    return Vocab.from_texts([text + SEPARATOR + iso for text, iso in pairs])


def _check_vocab(vocab):
    check_instance("vocab", vocab, Vocab, "a Vocab")
    if SEPARATOR not in vocab.stoi:
        raise ValueError(f"vocab must hold the separator {SEPARATOR!r} (build it with completion_vocab), "
                         f"got {vocab!r}")


def prompt_ids(text, vocab, separator=True):
    """The prompt's ids: ``<sos>``, the text's characters and (``separator``) the ``=``.

    Without the separator the prompt is a partial text for the model to continue.
    """
    _check_vocab(vocab)
    check_instance("text", text, str, "a str")
    ids = [SOS] + (vocab.encode(text) if text else [])
    return ids + [vocab.stoi[SEPARATOR]] * bool(separator)


def stream_ids(text, iso, vocab):
    """The whole stream's ids: ``<sos>`` text ``=`` iso ``<eos>``."""
    return prompt_ids(text, vocab) + vocab.encode(iso) + [EOS]


def completion_targets(stream, prompt_length):
    """The next-token targets of a stream ``(L,)``, with the prompt's masked: ``(L - 1,)``.

    Position ``i`` predicts token ``i + 1``. The first ``prompt_length`` tokens are the prompt
    (``<sos>``, the text, ``=``): the targets that are prompt tokens, the first
    ``prompt_length - 1``, become ``IGNORE_INDEX`` and add no loss; the completion's remain.
    """
    stream = check_tensor("stream", torch.as_tensor(stream, dtype=torch.long), ndim=1)
    check_int_range("prompt_length", prompt_length, 1, stream.shape[0] - 1)  # the stream is longer than its prompt
    targets = stream[1:].clone()  # (L - 1,)
    targets[:prompt_length - 1] = IGNORE_INDEX
    return targets


class CompletionDataset(Dataset):
    """(text, iso) pairs as streams: ``dataset[i]`` is ``(inputs (L,), targets (L,))``, int64.

    ``inputs`` is the stream without its last token, ``targets`` the stream without its first
    (the next token at every position). ``completion_only=True`` replaces the prompt's targets
    by ``IGNORE_INDEX``, so the loss covers only the ISO date and ``<eos>``, as in instruction
    tuning; ``False`` keeps every target, as in pre-training a language model.
    """

    def __init__(self, pairs, vocab, completion_only=True):
        _check_vocab(vocab)
        pairs = list(pairs)
        if not pairs:
            raise ValueError("pairs must hold at least one (text, iso) pair, got none")
        self.pairs = pairs
        self.vocab = vocab
        self.completion_only = bool(completion_only)
        self.inputs, self.targets = [], []
        for text, iso in pairs:
            stream = stream_ids(text, iso, vocab)  # L + 1 ids
            targets = stream[1:]
            if completion_only:  # as completion_targets: the prompt is <sos>, the text and "="
                targets = [IGNORE_INDEX] * (len(text) + 1) + targets[len(text) + 1:]
            self.inputs.append(torch.tensor(stream[:-1]))
            self.targets.append(torch.tensor(targets))

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        return self.inputs[index], self.targets[index]


def completion_collate(batch, pad_id=PAD):
    """A list of ``(inputs, targets)`` -> ``(inputs (N, L), targets (N, L))``, padded on the right.

    The inputs are padded with ``pad_id``, the targets with ``IGNORE_INDEX``: padding adds no
    loss. The trainer calls ``model(inputs)`` and ``loss_fn(logits, targets)``.
    """
    inputs, targets = zip(*batch)
    return (pad_sequence(list(inputs), batch_first=True, padding_value=pad_id),  # (N, L)
            pad_sequence(list(targets), batch_first=True, padding_value=IGNORE_INDEX))  # (N, L)


def split_stream(ids, vocab):
    """A generated stream -> ``(text, iso, ended)``: the characters before and after the first
    ``=`` (``iso`` is ``None`` without one) and whether it ended with ``<eos>``. Specials other
    than ``<eos>`` are left out; what follows ``<eos>`` is ignored."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    ids = list(ids)
    ended = EOS in ids
    if ended:
        ids = ids[:ids.index(EOS)]
    stream = vocab.decode([i for i in ids if i not in (PAD, SOS)])
    text, separator, iso = stream.partition(SEPARATOR)
    return text, (iso if separator else None), ended


def _iso_date(iso):
    day = None if iso is None else iso_date(iso)
    return day if day is not None and FIRST_DATE <= day <= LAST_DATE else None


def is_date_shaped(ids, vocab):
    """Whether a generated stream is shaped like a translation, ``text=YYYY-MM-DD<eos>``: some
    text, one separator, a real date of the data set's range, and the end. The text may be
    anything ("Tueday Juuul 2048"); ``is_consistent`` asks whether it writes that date."""
    text, iso, ended = split_stream(ids, vocab)
    return ended and bool(text.strip()) and _iso_date(iso) is not None


def is_consistent(text, iso):
    """Whether ``iso`` is the date ``text`` writes: some pattern of ``DATE_PATTERNS``, in some
    case of ``CASES``, writes that date as ``text`` (any weekday: the data set's texts may name
    a wrong one; ``date_texts``)."""
    day = _iso_date(iso)
    return day is not None and isinstance(text, str) and text in date_texts(day)
