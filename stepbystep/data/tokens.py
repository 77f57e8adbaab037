"""Tokens: vocabularies, the reversal tasks, and batches of padded token ids.

A model cannot read characters, only integers. A ``Vocab`` gives every symbol an id, with four
special tokens first: ``<pad>`` fills short sequences up to the batch's longest, ``<sos>``
starts the decoder's input, ``<eos>`` ends a target, ``<unk>`` stands for any symbol the
vocabulary does not know. ``pad_collate`` turns a list of (source, target) id tensors into the
``(x, y)`` batch the trainer expects.
"""
import string

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Dataset

from ..checks import check_fraction, check_instance, check_int_range, check_positive_int
from .special_tokens import EOS, PAD, SOS, SPECIALS, UNK

__all__ = [
    "Vocab",
    "reverse_digits_dataset",
    "reverse_words_dataset",
    "train_val_split",
    "Seq2SeqDataset",
    "pad_collate",
]

SYMBOLS = string.digits + string.ascii_lowercase  # the reversal tasks' alphabet


class Vocab:
    """A mapping between symbols (characters, or words) and integer ids.

    Args:
        tokens: the symbols, in the order their ids are given; duplicates are kept once.
            The four specials come first: ``<pad>`` = 0, ``<sos>`` = 1, ``<eos>`` = 2,
            ``<unk>`` = 3, so the first symbol gets id 4.
        sep: what ``decode`` puts between symbols: ``""`` for characters, ``" "`` for words.

    Attributes: ``itos`` (list, id -> symbol), ``stoi`` (dict, symbol -> id), ``pad_id``,
    ``sos_id``, ``eos_id``, ``unk_id``; ``len(vocab)`` counts the specials too.
    """

    pad_id, sos_id, eos_id, unk_id = PAD, SOS, EOS, UNK

    def __init__(self, tokens, sep=""):
        if isinstance(tokens, str):
            tokens = list(tokens)
        symbols = list(dict.fromkeys(tokens))
        clashes = [s for s in symbols if s in SPECIALS]
        if clashes:
            raise ValueError(f"tokens must not contain the special tokens {SPECIALS}, got {clashes}")
        not_str = [s for s in symbols if not isinstance(s, str) or s == ""]
        if not_str:
            raise TypeError(f"tokens must be non-empty strings, got {not_str[:3]}")
        self.sep = sep
        self.itos = list(SPECIALS) + symbols
        self.stoi = {symbol: index for index, symbol in enumerate(self.itos)}

    @classmethod
    def from_texts(cls, texts):
        """A character vocabulary holding every character of ``texts``, in sorted order."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, got one str: wrap it in a list")
        return cls(sorted(set("".join(texts))))

    def __len__(self):
        return len(self.itos)

    def __repr__(self):
        shown = "".join(self.itos[4:]) if self.sep == "" else " ".join(self.itos[4:14])
        return f"Vocab({len(self)} ids: 4 specials + {len(self) - 4} symbols {shown!r})"

    def encode(self, sequence, add_sos=False, add_eos=False, max_len=None):
        """Ids of ``sequence`` (a string is a sequence of characters); unknown symbols -> ``unk_id``.

        ``add_sos``/``add_eos`` put ``<sos>`` in front and ``<eos>`` at the end. An empty
        sequence, or one whose ids (specials included) would exceed ``max_len``, is a
        ``ValueError``: a model cannot read nothing, and its positional encoding ends at its
        maximum length.
        """
        if isinstance(sequence, str):
            sequence = list(sequence)
        sequence = list(sequence)
        if not sequence:
            raise ValueError("cannot encode an empty sequence: give at least one symbol")
        ids = [self.stoi.get(symbol, UNK) for symbol in sequence]
        ids = [SOS] * bool(add_sos) + ids + [EOS] * bool(add_eos)
        if max_len is not None and len(ids) > max_len:
            specials = " and ".join(name for name, added in (("<sos>", add_sos), ("<eos>", add_eos)) if added)
            raise ValueError(
                f"{len(sequence)} symbols{' plus ' + specials if specials else ''} make {len(ids)} ids, more than "
                f"max_len={max_len}; the sequence starts {''.join(map(str, sequence[:20]))!r}"
            )
        return ids

    def decode(self, ids, strip_specials=True):
        """The text of ``ids`` (a list, or a 1-D tensor or array), symbols joined by ``sep``.

        With ``strip_specials`` it stops at the first ``<eos>`` and leaves out ``<pad>`` and
        ``<sos>`` (an ``<unk>`` stays visible as ``<unk>``); without, every id is written out.
        """
        if isinstance(ids, (torch.Tensor, np.ndarray)):
            if ids.ndim != 1:
                raise ValueError(f"ids must be one sequence of ids (1-D), got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        symbols = []
        for index in ids:
            if not 0 <= index < len(self):
                raise ValueError(f"ids must be in this vocabulary's range 0..{len(self) - 1}, got {index}")
            if strip_specials:
                if index == EOS:
                    break
                if index in (PAD, SOS):
                    continue
            symbols.append(self.itos[index])
        return self.sep.join(symbols)


def reverse_digits_dataset(n, length=16, n_symbols=10, seed=0):
    """``n`` pairs ``(source, target)``: a random string of ``length`` digits and its reverse.

    ``n_symbols`` (at most 36) picks the alphabet: the first ``n_symbols`` of ``0-9a-z``.
    Seeded with its own generator.
    """
    check_positive_int("n", n)
    check_positive_int("length", length)
    check_int_range("n_symbols", n_symbols, 2, len(SYMBOLS))
    rng = np.random.default_rng(seed)
    alphabet = np.array(list(SYMBOLS[:n_symbols]))
    draws = rng.integers(0, n_symbols, size=(n, length))  # (n, length)
    sources = ["".join(row) for row in alphabet[draws]]
    return [(source, source[::-1]) for source in sources]


def reverse_words_dataset(n, min_len=10, max_len=20, seed=0):
    """``n`` pairs ``(word, reversed word)`` of random lowercase letters, ``min_len`` to ``max_len`` long.

    The "words" are uniform random letter strings, not dictionary words: the model cannot
    guess from spelling and must really read and reverse every letter. Seeded with its own
    generator.
    """
    check_positive_int("n", n)
    check_positive_int("min_len", min_len)
    check_int_range("max_len", max_len, min_len)
    rng = np.random.default_rng(seed)
    letters = np.array(list(string.ascii_lowercase))
    lengths = rng.integers(min_len, max_len + 1, size=n)  # (n,)
    words = ["".join(letters[rng.integers(0, 26, size=length)]) for length in lengths]
    return [(word, word[::-1]) for word in words]


def train_val_split(pairs, val_fraction=0.2, seed=0):
    """Split ``pairs`` into training and validation lists that share no source.

    Duplicated sources are kept once, then a seeded shuffle puts ``val_fraction`` of them
    in the validation list, so an exact-match score on it is never a memory test.
    """
    check_fraction("val_fraction", val_fraction)
    unique = list({source: (source, target) for source, target in pairs}.values())
    if len(unique) < 2:
        raise ValueError(f"pairs must hold at least two distinct sources to split, got {len(unique)}")
    order = np.random.default_rng(seed).permutation(len(unique))
    n_val = min(max(1, round(val_fraction * len(unique))), len(unique) - 1)
    val = [unique[i] for i in order[:n_val]]
    train = [unique[i] for i in order[n_val:]]
    return train, val


class Seq2SeqDataset(Dataset):
    """(source, target) text pairs as id tensors; the target gets ``<sos>`` and ``<eos>``.

    ``dataset[i]`` is ``(source_ids (L_s,), target_ids (L_t + 2,))``, int64, unpadded; batch
    them with ``pad_collate``.
    """

    def __init__(self, pairs, src_vocab, tgt_vocab):
        pairs = list(pairs)
        if not pairs:
            raise ValueError("pairs must hold at least one (source, target) pair, got none")
        for index, pair in enumerate(pairs):
            check_instance(f"pairs[{index}]", pair, (tuple, list), "a (source, target) pair")
            if len(pair) != 2:
                raise ValueError(f"pairs[{index}] must be a (source, target) pair, got {len(pair)} items")
        self.pairs = pairs
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab
        self.sources = [torch.tensor(src_vocab.encode(source)) for source, _ in pairs]
        self.targets = [torch.tensor(tgt_vocab.encode(target, add_sos=True, add_eos=True)) for _, target in pairs]

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        return self.sources[index], self.targets[index]


def pad_collate(batch, pad_id=PAD):
    """A list of ``(source_ids, target_ids)`` -> ``((source, target_in), target_out)``, padded.

    Sequences are padded with ``pad_id`` to the longest in the batch
    (``torch.nn.utils.rnn.pad_sequence``, batch first):

    * ``source`` ``(N, L_s)``;
    * ``target_in`` ``(N, L_t)`` = ``<sos> y_1 ... y_n``: what the decoder reads (teacher forcing);
    * ``target_out`` ``(N, L_t)`` = ``y_1 ... y_n <eos>``: what it must predict at each position.

    ``x = (source, target_in)`` is called as ``model(source, target_in)`` by the trainer.
    """
    sources, targets = zip(*batch)
    source = pad_sequence(list(sources), batch_first=True, padding_value=pad_id)  # (N, L_s)
    target = pad_sequence(list(targets), batch_first=True, padding_value=pad_id)  # (N, L_t + 1)
    target_in = target[:, :-1]  # (N, L_t)
    target_out = target[:, 1:]  # (N, L_t)
    return (source, target_in), target_out
