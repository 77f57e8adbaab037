"""Chapter 15's BPE beside Hugging Face ``tokenizers``' trainer (Rust) on the same text.

``tokenizers`` learns byte-level BPE on characters, not bytes: its ``ByteLevel`` pre-tokenizer
first maps each of the 256 bytes to a printable character (GPT-2's ``bytes_to_unicode``: the
printable bytes stay themselves, the others, the space among them, move to U+0100 and up, the
space to "Ġ"). Its merges are pairs of such strings; ``tokenizers_merges`` maps them back to bytes,
so both trainers' merges can be compared as pairs of bytes.
"""
import json
from collections import Counter

import regex

__all__ = ["byte_level_alphabet", "tokenizers_merges", "merges_as_bytes", "compare_merges", "pair_counts"]


def byte_level_alphabet():
    """``{character: byte}``: the character ``tokenizers``' ByteLevel (and GPT-2) writes for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    mapping = {chr(b): b for b in printable}
    mapping.update({chr(256 + i): b for i, b in enumerate(others)})
    return mapping


def tokenizers_merges(text, vocab_size):
    """The merges ``tokenizers``' BPE trainer learns from ``text`` (GPT-2's pre-split, every byte in its
    alphabet), as ``[(bytes, bytes), ...]`` in its order."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([text], trainer)
    to_byte = byte_level_alphabet()
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    pairs = [merge.split(" ") if isinstance(merge, str) else merge for merge in merges]  # "a b" in older releases
    return [tuple(bytes(to_byte[c] for c in part) for part in pair) for pair in pairs]


def merges_as_bytes(tokenizer):
    """A ``BytePairTokenizer``'s merges as ``[(bytes, bytes), ...]``."""
    return [(tokenizer.vocab[a], tokenizer.vocab[b]) for a, b in tokenizer.merges]


def compare_merges(ours, theirs):
    """Where two merge lists (pairs of bytes) agree: ``{"in_common", "first_difference", "swapped"}``.

    ``first_difference`` is the first index where they differ (None if never); ``swapped`` lists the
    indices where both learned the same two merges in the opposite order (a tie broken differently).
    """
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    swapped = [i for i in range(min(len(ours), len(theirs)) - 1)
               if ours[i] == theirs[i + 1] and ours[i + 1] == theirs[i] and ours[i] != theirs[i]]
    return {"in_common": len(set(ours) & set(theirs)), "first_difference": first, "swapped": swapped}


def pair_counts(tokenizer, text):
    """``Counter`` of adjacent id pairs in ``text`` encoded by ``tokenizer``, within its pre-split
    pieces (what the next merge of training would choose from)."""
    pieces = Counter(regex.findall(tokenizer.pattern, text)) if tokenizer.pattern is not None else Counter([text])
    counts = Counter()
    for piece, freq in pieces.items():
        ids = tokenizer.encode(piece)
        for pair in zip(ids, ids[1:]):
            counts[pair] += freq
    return counts
