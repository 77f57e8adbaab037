"""Chapter 15's checkers accept the solutions and diagnose typical wrong answers."""
import collections

from stepbystep.data import BytePairTokenizer
from stepbystep.exercises import ch15


def test_solutions_pass():
    for exercise in (ch15.next_pair, ch15.add_special):
        assert exercise.check(exercise._solution), exercise.title
    assert ch15.encode_by_hand.check(ch15.encode_by_hand._solution())


def test_next_pair_diagnoses(fails_with):
    def first_seen(ids):
        return collections.Counter(zip(ids, ids[1:])).most_common(1)[0][0]

    def largest(ids):
        counts = collections.Counter(zip(ids, ids[1:]))
        return max(counts, key=lambda pair: (counts[pair], pair))

    def non_overlapping(ids):  # counts "5 5 5" as one (5, 5) only, so (5, 5) loses to nothing here...
        return (5, 1)

    fails_with(ch15.next_pair, first_seen, "the one seen first")
    fails_with(ch15.next_pair, largest, "is not the one the tie rule picks")
    fails_with(ch15.next_pair, non_overlapping, "another pair more often")
    fails_with(ch15.next_pair, lambda ids: [5, 5], "as a tuple of two ids")
    fails_with(ch15.next_pair, (5, 5), "expected a function")


def test_encode_by_hand_diagnoses(fails_with):
    fails_with(ch15.encode_by_hand, [256, 256, 256, 97, 98, 99], "keep merging")
    fails_with(ch15.encode_by_hand, [257, 256, 97, 98, 99], "keep merging")
    fails_with(ch15.encode_by_hand, [97, 256, 257, 258], "merged from the right")
    fails_with(ch15.encode_by_hand, [256, 256, 256, 258], "not 'aaaaaaabc'")
    fails_with(ch15.encode_by_hand, [97, 257, 256, 258], "encoding by rank gives other ones")
    fails_with(ch15.encode_by_hand, "aaaaaaabc", "a list of ints")


def test_add_special_diagnoses(fails_with):
    def in_front(tokenizer, token):
        return BytePairTokenizer(tokenizer.merges, pattern=tokenizer.pattern,
                                 special_tokens=[token, *tokenizer.special_tokens])

    def replaced(tokenizer, token):
        return BytePairTokenizer(tokenizer.merges, pattern=tokenizer.pattern, special_tokens=[token])

    def merges_lost(tokenizer, token):
        return BytePairTokenizer(pattern=tokenizer.pattern, special_tokens=[*tokenizer.special_tokens, token])

    def in_place(tokenizer, token):
        tokenizer.special_tokens[token] = tokenizer.vocab_size
        return tokenizer

    fails_with(ch15.add_special, in_front, "must keep its id")
    fails_with(ch15.add_special, replaced, "must keep its id")
    fails_with(ch15.add_special, merges_lost, "keep the merges and the pattern")
    fails_with(ch15.add_special, in_place, "unchanged")
    fails_with(ch15.add_special, lambda tokenizer, token: {}, "return a BytePairTokenizer")
