"""Chapter 15's byte-level BPE: merges computed by hand, tiktoken's ids on the same merges, the
round trip on any Unicode text, special tokens, saving and loading, determinism."""
import json

import pytest
import tiktoken
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stepbystep.data import GPT2_PATTERN, BytePairTokenizer, shakespeare_text

PROPERTY = settings(max_examples=60, deadline=None)
EOT = "<|endoftext|>"

# text a learner may type: letters with accents, combining marks, CJK, emoji (with joiners and
# skin tones), digits, punctuation, runs of spaces, tabs and newlines, and anything else UTF-8 holds
PIECES = ["e", "é", "e\u0301", "\u0308", "日本語", "中文", "😀", "👩\u200d💻", "👍🏽", " ", "   ", "\n", "\n\n",
          "\t", "'s", "'ll", "123", "4", "!?", "--", "the", " the", "A", "Ω", "ß", "\r\n"]


def _drawn(characters):
    """Texts of up to 30 pieces, each one of PIECES or up to 4 of ``characters``."""
    return st.lists(st.one_of(st.sampled_from(PIECES), st.text(characters, max_size=4)), max_size=30).map("".join)


texts = _drawn(st.characters(codec="utf-8"))
# The same, without code points this Python's Unicode tables leave unassigned: the `regex` module and
# tiktoken's engine each carry their own, newer tables, and on a code point one of them has assigned
# since (U+3D000 is a letter to regex 2026.12, not to tiktoken 0.14) the pre-split may differ.
assigned_texts = _drawn(st.characters(codec="utf-8", exclude_categories=("Cn",)))


def _tiktoken(tokenizer, name="ours"):
    """A tiktoken encoding built offline from our ranks: bytes -> id for every byte and merge."""
    pattern = tokenizer.pattern if tokenizer.pattern is not None else r"[\s\S]+"
    ranks = {tokenizer.vocab[i]: i for i in range(256 + len(tokenizer.merges))}
    return tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks,
                             special_tokens=dict(tokenizer.special_tokens))


@pytest.fixture(scope="module")
def corpus():
    return shakespeare_text().encode("utf-8")[:200_000].decode("utf-8") + "".join(PIECES) * 50


@pytest.fixture(scope="module")
def trained(corpus):
    return BytePairTokenizer.train(corpus, 1024, special_tokens=[EOT, "<|pad|>"])


def test_merges_of_a_string_computed_by_hand():
    # "aaabdaaabac": aa occurs 4 times (overlaps counted), so aa -> 256 first; the word becomes
    # [aa, a, b, d, aa, a, b, a, c], where (a, b) and (aa, a) both occur twice: the tie goes to the
    # smaller pair (97, 98) -> 257; then [aa, ab, d, aa, ab, a, c] has (256, 257) twice -> 258.
    tokenizer = BytePairTokenizer.train("aaabdaaabac", 259, pattern=None)
    assert tokenizer.merges == [(97, 97), (97, 98), (256, 257)]
    assert [tokenizer.vocab[i] for i in (256, 257, 258)] == [b"aa", b"ab", b"aaab"]
    assert tokenizer.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert tokenizer.vocab_size == 259 and tokenizer.special_tokens == {}


def test_ties_go_to_the_smallest_pair():
    # every pair of "abcd" occurs once: (a, b) first, then (c, d) beats (ab, c) = (256, 99)
    assert BytePairTokenizer.train("abcd", 259, pattern=None).merges == [(97, 98), (99, 100), (256, 257)]


def test_merges_never_cross_the_pre_split():
    # GPT-2's pattern cuts "ab ab" into "ab" and " ab": the space is glued in front of a word
    tokenizer = BytePairTokenizer.train("ab ab ab", 300)
    assert tokenizer.merges == [(97, 98), (32, 256)]  # "ab" (3 times), then " ab"; never "b "
    assert tokenizer.encode("ab ab") == [256, 257]
    # without a pre-split the spaces merge into words: "ab", " ab", "ab ab", "ab ab ab"
    assert BytePairTokenizer.train("ab ab ab", 300, pattern=None).merges == [(97, 98), (32, 256), (256, 257), (258, 257)]


def test_training_stops_when_no_pair_is_left():
    tokenizer = BytePairTokenizer.train("abc", 1000, pattern=None)
    assert len(tokenizer.merges) == 2 and tokenizer.vocab_size == 258


def test_merges_that_spell_the_same_bytes_twice_are_refused():
    # tiktoken ranks tokens by their bytes, so two ids with the same bytes cannot be encoded alike
    with pytest.raises(ValueError, match="merges must each make a token of new bytes"):
        BytePairTokenizer([(97, 97), (256, 97), (97, 256)])


def test_training_is_deterministic_and_its_first_merges_are_known(corpus):
    first = BytePairTokenizer.train(corpus, 400)
    assert first.merges == BytePairTokenizer.train(corpus, 400).merges
    text = shakespeare_text().encode("utf-8")[:1_000_000].decode("utf-8")
    tokenizer = BytePairTokenizer.train(text, 276)
    # the same on every machine: counts are integers, ties go to the smallest pair
    assert [tokenizer.vocab[i] for i in range(256, 276)] == [
        b" t", b"he", b"**", b" a", b"ou", b" s", b"in", b" w", b" m", b"re",
        b"ha", b" the", b"nd", b" b", b"er", b"is", b"or", b" f", b"it", b"ll"]


def test_ids_equal_tiktoken_on_the_corpus(trained, corpus):
    encoding = _tiktoken(trained)
    assert trained.encode(corpus) == encoding.encode(corpus, allowed_special="all")
    assert len(trained.encode(corpus)) < len(corpus.encode("utf-8")) / 2  # the merges compress


@PROPERTY
@given(text=assigned_texts)
def test_ids_equal_tiktoken_on_drawn_text(trained, text):
    assert trained.encode(text) == _tiktoken(trained).encode(text, allowed_special="all")


@PROPERTY
@given(corpus=assigned_texts, text=assigned_texts, extra=st.integers(0, 40), presplit=st.booleans())
def test_ids_equal_tiktoken_for_merges_trained_on_drawn_text(corpus, text, extra, presplit):
    tokenizer = BytePairTokenizer.train(corpus, 256 + extra, pattern=GPT2_PATTERN if presplit else None)
    encoding = _tiktoken(tokenizer, name="drawn")
    assert tokenizer.encode(text) == encoding.encode(text)
    assert tokenizer.encode(corpus) == encoding.encode(corpus)


@PROPERTY
@given(text=texts)
def test_decode_inverts_encode_on_any_text(trained, text):
    ids = trained.encode(text)
    assert all(0 <= i < trained.vocab_size for i in ids)
    assert trained.decode(ids) == text
    assert trained.decode(ids, errors="strict") == text
    assert trained.decode(torch.tensor(ids, dtype=torch.long)) == text


@PROPERTY
@given(text=texts)
def test_round_trip_without_pre_split(text):
    tokenizer = BytePairTokenizer.train(text * 3, 300, pattern=None)
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_decode_of_a_cut_character(trained):
    ids = trained.encode("😀")  # four bytes, maybe fewer ids
    assert trained.decode_bytes(ids) == "😀".encode("utf-8")
    cut = list("😀".encode("utf-8"))[:2]  # the first two bytes as byte ids
    assert trained.decode(cut) == "\ufffd"
    with pytest.raises(ValueError, match=r"ids must spell valid UTF-8 .*: the character starting at byte 0 is cut "
                                         r"\(unexpected end of data\)"):
        trained.decode(cut, errors="strict")
    with pytest.raises(ValueError, match=r"got bytes b'ab\\xf0\\x9f': the character starting at byte 2 is cut"):
        trained.decode([97, 98, *cut], errors="strict")


def test_special_tokens_get_the_last_ids_and_are_never_split(trained):
    assert trained.special_tokens == {EOT: 1024 - 2, "<|pad|>": 1024 - 1}
    assert trained.vocab[1022] == EOT.encode("utf-8")
    text = f"the end{EOT}The start{EOT}{EOT}x<|pad|>"
    ids = trained.encode(text)
    assert ids.count(1022) == 3 and ids.count(1023) == 1
    assert ids[ids.index(1022) + 1] == trained.encode("The start")[0]
    assert trained.decode(ids) == text
    # the special tokens' own bytes are never learned: the text is cut at them before training
    tokenizer = BytePairTokenizer.train(f"ab{EOT}" * 50, 300, special_tokens=[EOT])
    assert all(b"|" not in tokenizer.vocab[256 + i] for i in range(len(tokenizer.merges)))
    assert tokenizer.encode(f"ab{EOT}") == [256, tokenizer.special_tokens[EOT]]


def test_the_longer_of_two_overlapping_specials_wins():
    tokenizer = BytePairTokenizer(special_tokens=["<a>", "<a>b"])
    assert tokenizer.encode("<a>b<a>") == [257, 256]


@PROPERTY
@given(text=assigned_texts)
def test_specials_in_drawn_text_are_single_ids(trained, text):
    mixed = f"{text}{EOT}{text}<|pad|>"
    ids = trained.encode(mixed)
    assert ids == _tiktoken(trained).encode(mixed, allowed_special="all")
    assert ids.count(trained.special_tokens[EOT]) == 1 + text.count(EOT)
    assert trained.decode(ids) == mixed


def test_save_and_load_round_trip(trained, corpus, tmp_path):
    path = tmp_path / "bpe.json"
    trained.save(path)
    state = json.loads(path.read_text(encoding="utf-8"))
    assert state["format"] == "stepbystep-bpe" and state["pattern"] == GPT2_PATTERN
    assert state["special_tokens"] == [EOT, "<|pad|>"] and len(state["merges"]) == 1024 - 256 - 2
    loaded = BytePairTokenizer.load(str(path))
    assert loaded.merges == trained.merges and loaded.vocab == trained.vocab
    assert loaded.special_tokens == trained.special_tokens and loaded.pattern == trained.pattern
    assert loaded.encode(corpus[:20_000]) == trained.encode(corpus[:20_000])
    none = BytePairTokenizer.train("abab", 258, pattern=None)
    none.save(tmp_path / "none.json")
    assert BytePairTokenizer.load(tmp_path / "none.json").pattern is None


def test_the_tokenizer_is_described():
    tokenizer = BytePairTokenizer.train("aaabdaaabac", 260, special_tokens=[EOT])
    assert repr(tokenizer) == "BytePairTokenizer(260 ids: 256 bytes + 3 merges + 1 special tokens, pattern=GPT-2)"
