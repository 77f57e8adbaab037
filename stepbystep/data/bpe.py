"""Byte-level byte-pair encoding (BPE), the tokenizer of GPT-2 and most models since.

Text is UTF-8 bytes, so the 256 byte values (ids 0-255) spell any string. Training repeats one
step: count every adjacent pair of ids in the corpus, give the most frequent pair a new id
(256 + i for the i-th merge) and replace it everywhere. A pre-split pattern first cuts the text
into pieces (GPT-2's: letters, digits, punctuation, whitespace, each with at most one leading
space), and merges never cross a piece's border. Special tokens (``<|endoftext|>``) get the ids
after the merges; the text is cut at them before anything else, so they are never split or merged.

Encoding applies the merges by rank, as tiktoken does: within a piece, merge the adjacent pair
whose bytes form the lowest-ranked token (leftmost on ties), until no pair forms a token; a
piece that is a token as a whole is that token. The rank of a token is its id.

Sources: Sennrich, Haddow and Birch, "Neural Machine Translation of Rare Words with Subword
Units" (2016) for BPE on words; Radford et al., "Language Models are Unsupervised Multitask
Learners" (2019) for byte-level BPE and the pre-split pattern.
"""
import heapq
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import regex
import torch

from ..checks import check_instance, check_int_range

__all__ = ["GPT2_PATTERN", "BytePairTokenizer"]

# GPT-2's pre-split (its released encoder.py): contractions, letters, digits, other symbols,
# each with at most one leading space, then runs of whitespace.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

FORMAT = "stepbystep-bpe"  # the "format" field of a saved tokenizer's JSON


def _compile(pattern):
    """The compiled pre-split pattern (None: no pre-split), or a clear error."""
    if pattern is None:
        return None
    check_instance("pattern", pattern, str, "a str (a `regex`-module pattern) or None")
    try:
        return regex.compile(pattern)
    except regex.error as error:
        raise ValueError(f"pattern must be a regular expression the `regex` module compiles, "
                         f"got {pattern!r} ({error})") from None


def _check_specials(special_tokens):
    """The special tokens as a tuple of distinct, non-empty strings."""
    if isinstance(special_tokens, (str, bytes)) or not isinstance(special_tokens, (list, tuple)):
        raise TypeError(f"special_tokens must be a list or tuple of str, got {type(special_tokens).__name__}"
                        + (": wrap the one token in a list" if isinstance(special_tokens, str) else ""))
    for token in special_tokens:
        check_instance("special_tokens", token, str, "a list or tuple of str")
        if not token:
            raise ValueError("special_tokens must be non-empty strings, got ''")
    repeated = sorted({token for token in special_tokens if special_tokens.count(token) > 1})
    if repeated:
        raise ValueError(f"special_tokens must be distinct, got {repeated} more than once")
    return tuple(special_tokens)


def _merge(ids, pair, new_id):
    """``ids`` with every occurrence of ``pair`` replaced by ``new_id`` (left to right), and the
    pairs that changed: ``[(pair, +1 or -1), ...]``, so the counts need not be redone.

    Around a merge at ``a b``: the pairs ``(before, a)``, ``(a, b)`` and ``(b, after)`` go, and
    ``(before, new)`` and ``(new, after)`` come; ``before`` is read from the merged list, so two
    merges in a row (``a b a b``) give ``(new, new)``.
    """
    a, b = pair
    merged, changes, i, n = [], [], 0, len(ids)
    while True:
        try:
            j = ids.index(a, i)  # the next candidate, found at C speed
        except ValueError:
            break
        if j + 1 >= n:
            break
        if ids[j + 1] != b:
            merged.extend(ids[i:j + 1])
            i = j + 1
            continue
        merged.extend(ids[i:j])
        if merged:
            changes += [((merged[-1], a), -1), ((merged[-1], new_id), 1)]
        changes.append((pair, -1))
        if j + 2 < n:
            changes += [((b, ids[j + 2]), -1), ((new_id, ids[j + 2]), 1)]
        merged.append(new_id)
        i = j + 2
    merged.extend(ids[i:])
    return merged, changes


class BytePairTokenizer:
    """Byte-level BPE: ``train`` it on text, then ``encode`` text to ids and ``decode`` ids to text.

    Args:
        merges: the merged pairs in order, ``merges[i] = (a, b)`` makes id ``256 + i``; a and b
            must be ids made before it.
        pattern: the pre-split regular expression (``regex``-module syntax, e.g. ``\\p{L}`` for
            any letter); ``GPT2_PATTERN`` by default, ``None`` for no pre-split.
        special_tokens: strings that get the ids after the merges, in this order.

    Attributes: ``merges`` (list of id pairs), ``vocab`` (dict id -> bytes, specials included), ``pattern``,
    ``special_tokens`` (dict str -> id), ``vocab_size`` (all ids, specials included).
    """

    def __init__(self, merges=(), pattern=GPT2_PATTERN, special_tokens=()):
        self._split = _compile(pattern)
        specials = _check_specials(special_tokens)
        self.pattern = pattern
        self.merges, self.vocab = [], {i: bytes([i]) for i in range(256)}
        for i, pair in enumerate(merges):
            new_id = 256 + i
            if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < new_id for x in pair)):
                raise ValueError(f"merges[{i}] must be a pair of ids below {new_id} (made before it), got {pair!r}")
            spelled = self.vocab[pair[0]] + self.vocab[pair[1]]
            self.merges.append((pair[0], pair[1]))
            self.vocab[new_id] = spelled
        self._rank = {spelled: i for i, spelled in self.vocab.items()}  # bytes -> id, as tiktoken ranks
        if len(self._rank) != len(self.vocab):
            raise ValueError("merges must each make a token of new bytes: two merges spell the same bytes")
        first = 256 + len(self.merges)
        self.special_tokens = {token: first + i for i, token in enumerate(specials)}
        self.vocab.update({i: token.encode("utf-8") for token, i in self.special_tokens.items()})
        # the text is cut at specials first; the longest first, so one that contains another wins
        alternatives = sorted(specials, key=len, reverse=True)
        self._special_split = regex.compile("(" + "|".join(map(regex.escape, alternatives)) + ")") if specials else None
        self._cache = {}  # piece (str) -> ids: a corpus repeats its words

    @property
    def vocab_size(self):
        return 256 + len(self.merges) + len(self.special_tokens)

    def __repr__(self):
        return (f"BytePairTokenizer({self.vocab_size} ids: 256 bytes + {len(self.merges)} merges + "
                f"{len(self.special_tokens)} special tokens, pattern={'GPT-2' if self.pattern == GPT2_PATTERN else repr(self.pattern)})")

    # ----- training -----

    @classmethod
    def train(cls, text, vocab_size, *, pattern=GPT2_PATTERN, special_tokens=()):
        """A tokenizer whose ``vocab_size`` ids are the 256 bytes, the merges learned from ``text``
        and ``special_tokens``.

        Each step merges the most frequent adjacent pair within the pre-split pieces. Ties go to the
        pair with the smallest ids (first id, then second), so every run and machine agree. Training
        stops early when no pair is left. Special tokens found in ``text`` are cut out, not learned.

        The loop is incremental: the pieces are counted once (``Counter`` of distinct pieces), and a
        merge updates the pair counts of the distinct pieces that contain the pair, not of the corpus.
        """
        check_instance("text", text, str, "a str")
        specials = _check_specials(special_tokens)
        low = 256 + len(specials)
        try:
            check_int_range("vocab_size", vocab_size, low)
        except ValueError as error:  # say where the floor comes from
            specials_named = f" and {len(specials)} special token{'s' if len(specials) > 1 else ''}" if specials else ""
            raise ValueError(f"{error}: the 256 bytes{specials_named} take the first ids") from None
        tokenizer = cls(pattern=pattern, special_tokens=specials)
        chunks = tokenizer._special_split.split(text)[::2] if specials else [text]
        split = tokenizer._split
        pieces = Counter(piece for chunk in chunks
                         for piece in (split.findall(chunk) if split is not None else [chunk]) if piece)
        words = [list(piece.encode("utf-8")) for piece in pieces]  # each distinct piece as ids
        freqs = list(pieces.values())                              # how often it occurs

        counts = defaultdict(int)  # (a, b) -> occurrences in the corpus
        where = defaultdict(set)   # (a, b) -> indices of the words that contain it (maybe stale)
        for index, (word, freq) in enumerate(zip(words, freqs)):
            for pair in zip(word, word[1:]):
                counts[pair] += freq
                where[pair].add(index)
        heap = [(-count, pair) for pair, count in counts.items()]  # max count, then smallest pair
        heapq.heapify(heap)

        merges = []
        while len(merges) < vocab_size - low and heap:
            negative, pair = heapq.heappop(heap)
            if counts.get(pair, 0) != -negative:
                continue  # stale entry: the count changed since it was pushed
            new_id = 256 + len(merges)
            merges.append(pair)
            delta = defaultdict(int)
            for index in where.pop(pair):
                merged, changes = _merge(words[index], pair, new_id)
                freq = freqs[index]
                for changed, sign in changes:  # none for a stale index (the pair left this word earlier)
                    delta[changed] += sign * freq
                    if sign > 0:
                        where[changed].add(index)
                words[index] = merged
            for changed, change in delta.items():
                if change:
                    counts[changed] += change
                    if counts[changed] > 0:
                        heapq.heappush(heap, (-counts[changed], changed))
                    else:
                        del counts[changed]
        return cls(merges, pattern=pattern, special_tokens=specials)

    # ----- encoding and decoding -----

    def _encode_piece(self, piece):
        """The ids of one pre-split piece (bytes): tiktoken's merge by rank, with a heap.

        A linked list over the piece's parts; the heap holds ``(rank, start)`` of adjacent pairs
        whose bytes form a token, so the lowest rank (then the leftmost) merges first.
        """
        whole = self._rank.get(piece)
        if whole is not None:
            return [whole]
        rank, vocab = self._rank, self.vocab
        n = len(piece)
        parts = list(piece)                # (n,) ids; None where a part was merged into its left one
        following = list(range(1, n + 1))  # start of the next part (n: none)
        preceding = list(range(-1, n - 1))  # start of the previous part (-1: none)
        heap = [(r, i) for i in range(n - 1) if (r := rank.get(piece[i:i + 2])) is not None]
        heapq.heapify(heap)
        while heap:
            r, i = heapq.heappop(heap)
            j = following[i]
            if parts[i] is None or j >= n or rank.get(vocab[parts[i]] + vocab[parts[j]]) != r:
                continue  # stale: one of the two parts has changed
            parts[i], parts[j] = r, None
            following[i] = following[j]
            if following[i] < n:
                preceding[following[i]] = i
            for left, right in ((preceding[i], i), (i, following[i])):
                if left >= 0 and right < n:
                    pair_rank = rank.get(vocab[parts[left]] + vocab[parts[right]])
                    if pair_rank is not None:
                        heapq.heappush(heap, (pair_rank, left))
        return [part for part in parts if part is not None]

    def _encode_ordinary(self, text):
        """Ids of text without special tokens: pre-split, then each piece by rank (cached)."""
        ids = []
        for piece in (self._split.findall(text) if self._split is not None else [text]):
            cached = self._cache.get(piece)
            if cached is None:
                cached = self._cache[piece] = self._encode_piece(piece.encode("utf-8"))
            ids.extend(cached)
        return ids

    def encode(self, text):
        """The ids of ``text`` (a list of ints): special tokens first, then BPE on the rest."""
        check_instance("text", text, str, "a str")
        if self._special_split is None:
            return self._encode_ordinary(text)
        ids = []
        for k, chunk in enumerate(self._special_split.split(text)):
            if k % 2:
                ids.append(self.special_tokens[chunk])  # odd chunks are the specials themselves
            elif chunk:
                ids.extend(self._encode_ordinary(chunk))
        return ids

    def decode_bytes(self, ids):
        """The bytes of ``ids`` (a list of ints, or a 1-D tensor or array)."""
        if isinstance(ids, (torch.Tensor, np.ndarray)):
            if ids.ndim != 1:
                raise ValueError(f"ids must be one sequence of ids (1-D), got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        check_instance("ids", ids, (list, tuple), "a list of ints (or a 1-D tensor)")
        for index in ids:
            check_int_range("ids", index, 0, self.vocab_size - 1)
        return b"".join(self.vocab[index] for index in ids)

    def decode(self, ids, errors="replace"):
        """The text of ``ids``. Ids may cut a character's UTF-8 bytes (a sampled stream does):
        ``errors="replace"`` writes U+FFFD there, as tiktoken does; ``"strict"`` raises ValueError."""
        data = self.decode_bytes(ids)
        try:
            return data.decode("utf-8", errors=errors)
        except UnicodeDecodeError as error:
            shown = data[max(0, error.start - 4):error.end + 4]
            raise ValueError(f"ids must spell valid UTF-8 with errors='strict', got bytes {shown!r}: the character "
                             f"starting at byte {error.start} is cut ({error.reason}); decode with errors='replace' "
                             "to see them") from None

    # ----- saving and loading -----

    def save(self, path):
        """Write the tokenizer to ``path`` as JSON (the pattern, the merges and the specials)."""
        state = {"format": FORMAT, "version": 1, "pattern": self.pattern,
                 "merges": [list(pair) for pair in self.merges], "special_tokens": list(self.special_tokens)}
        Path(path).write_text(json.dumps(state, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path):
        """The tokenizer ``save`` wrote to ``path`` (no pickle: JSON only)."""
        state = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(state, dict) or state.get("format") != FORMAT or state.get("version") != 1:
            raise ValueError(f"path must be a tokenizer saved by BytePairTokenizer.save (format {FORMAT!r}, "
                             f"version 1), got {str(path)!r}")
        return cls(state["merges"], pattern=state["pattern"], special_tokens=state["special_tokens"])
