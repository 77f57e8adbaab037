"""Chapter 15's checkers: overlapping pairs, a pattern left at its default, ids out of range, and
the fourth exercise (a character cut in two)."""
import collections

from stepbystep.data import BytePairTokenizer
from stepbystep.exercises import ch15


def test_next_pair_tells_a_non_overlapping_counter(fails_with):
    def non_overlapping(ids):  # counts "1 1 1" as one (1, 1): the way str.count counts
        text = " ".join(map(str, ids)) + " "
        counts = {pair: text.count(f"{pair[0]} {pair[1]} ") for pair in set(zip(ids, ids[1:]))}
        return min(counts, key=lambda pair: (-counts[pair], pair))

    assert non_overlapping([5, 5, 5, 1, 5, 5]) == ch15._next_pair_solution([5, 5, 5, 1, 5, 5])  # the old case passed it
    fails_with(ch15.next_pair, non_overlapping, "you skipped overlapping pairs")


def test_next_pair_keeps_its_other_diagnoses(fails_with):
    def first_seen(ids):
        return collections.Counter(zip(ids, ids[1:])).most_common(1)[0][0]

    fails_with(ch15.next_pair, first_seen, "the one seen first")
    assert ch15.next_pair.check(ch15._next_pair_solution)


def test_add_special_tells_a_pattern_left_at_its_default(fails_with):
    def default_pattern(tokenizer, token):
        return BytePairTokenizer(tokenizer.merges, special_tokens=[*tokenizer.special_tokens, token])

    fails_with(ch15.add_special, default_pattern, "the pattern is not")
    assert ch15.add_special.check(ch15._add_special_solution)


def test_encode_by_hand_names_an_id_out_of_range(fails_with):
    fails_with(ch15.encode_by_hand, [260], "260 is not an id of this tokenizer: it has ids 0-259")
    fails_with(ch15.encode_by_hand, [256, -1], "-1 is not an id of this tokenizer")
    fails_with(ch15.encode_by_hand, [True], "a list of ints")
    fails_with(ch15.encode_by_hand, [], "your list is empty")


def test_cut_character_accepts_the_replacement_character_and_diagnoses(fails_with):
    assert ch15.cut_character.check("caf\ufffdc")
    assert ch15.cut_character._solution() == "caf\ufffdc"
    fails_with(ch15.cut_character, "café", "second byte")
    fails_with(ch15.cut_character, "cafc", "does not drop it")
    fails_with(ch15.cut_character, "caf\u00c3c", "Latin-1")
    fails_with(ch15.cut_character, "caf?c", "U+003F")
    fails_with(ch15.cut_character, "cake", "is not what comes out")
    fails_with(ch15.cut_character, [99, 97, 102], "a str")
    fails_with(ch15.cut_character, "", "your prediction is empty")
