"""Chapter 15's comparison with Hugging Face ``tokenizers``: its byte alphabet, its merges as bytes,
where two merge lists agree, and the pair counts a training step chooses from."""
from stepbystep.data import BytePairTokenizer, shakespeare_text
from stepbystep.experiments import byte_level_alphabet, compare_merges, merges_as_bytes, pair_counts, tokenizers_merges


def test_the_byte_level_alphabet_covers_every_byte_once():
    alphabet = byte_level_alphabet()
    assert sorted(alphabet.values()) == list(range(256))
    assert alphabet["Ġ"] == 32 and alphabet["Ċ"] == 10 and alphabet["a"] == 97 and alphabet["!"] == 33
    assert all(c.isprintable() and not c.isspace() for c in alphabet)


def test_tokenizers_learns_our_merges_up_to_ties():
    text = shakespeare_text(["macbeth"])
    ours = merges_as_bytes(BytePairTokenizer.train(text, 400))
    theirs = tokenizers_merges(text, 400)
    assert len(theirs) == len(ours) == 144
    assert ours[:5] == theirs[:5] == [(b" ", b"t"), (b"h", b"e"), (b"*", b"*"), (b" ", b"a"), (b"o", b"u")]
    comparison = compare_merges(ours, theirs)
    assert comparison["in_common"] >= 140


def test_compare_merges_finds_the_first_difference_and_swaps():
    ours = [(b"a", b"b"), (b" ", b"c"), (b"d", b"e"), (b"x", b"y")]
    theirs = [(b"a", b"b"), (b"d", b"e"), (b" ", b"c"), (b"x", b"z")]
    assert compare_merges(ours, theirs) == {"in_common": 3, "first_difference": 1, "swapped": [1]}
    assert compare_merges(ours, ours) == {"in_common": 4, "first_difference": None, "swapped": []}


def test_pair_counts_are_what_the_next_merge_chooses_from():
    assert pair_counts(BytePairTokenizer(pattern=None), "aaabdaaabac").most_common(2) == [((97, 97), 4), ((97, 98), 2)]
    after_one = BytePairTokenizer([(97, 97)], pattern=None)
    assert pair_counts(after_one, "aaabdaaabac")[256, 97] == 2
    # within the pre-split pieces only: "ab ab" has no pair (b, space)
    assert (98, 32) not in pair_counts(BytePairTokenizer(), "ab ab")
    assert pair_counts(BytePairTokenizer(), "ab ab") == {(97, 98): 2, (32, 97): 1}
