"""Chapter 15's "Your turn": predict the next merge, encode by rank by hand, add a special token.

In the notebook::

    from stepbystep.exercises import ch15
    ch15.next_pair.check(my_next_pair)
    ch15.next_pair.hint()
    ch15.next_pair.solution()
"""
import collections

from ..data import BytePairTokenizer
from .exercise import Exercise, expects_function

__all__ = ["next_pair", "encode_by_hand", "add_special"]


# ----------------------------------------------------------------------------- 1. the next merge
def _next_pair_solution(ids):
    counts = collections.Counter(zip(ids, ids[1:]))  # overlapping pairs count: "aaa" has (a, a) twice
    return min(counts, key=lambda pair: (-counts[pair], pair))  # most frequent; ties: the smallest ids


_NEXT_PAIR_CASES = [
    [5, 5, 5, 1, 5, 5],   # (5, 5) three times: the overlaps count
    [4, 7, 300, 4, 7, 300],  # (4, 7) and (7, 300) tie at 2: (4, 7) is the smaller
    [9, 2, 3, 1, 9, 2, 3, 1],  # (9, 2), (2, 3), (3, 1) tie at 2: (2, 3) is the smallest, (9, 2) seen first
    [300, 7, 4, 300, 7, 4],  # (300, 7) and (7, 4) tie: (7, 4) is smaller
]


@expects_function("my_next_pair(ids)")
def _check_next_pair(answer):
    for ids in _NEXT_PAIR_CASES:
        got = answer(list(ids))
        if not isinstance(got, tuple) or len(got) != 2:
            return f"return the pair as a tuple of two ids, like (97, 98); got {got!r}"
        wanted = _next_pair_solution(ids)
        if got == wanted:
            continue
        counts = collections.Counter(zip(ids, ids[1:]))
        if counts[got] < counts[wanted]:
            return f"for ids {ids} your pair {got} occurs {counts[got]} times, and another pair more often"
        if got == collections.Counter(zip(ids, ids[1:])).most_common(1)[0][0]:
            return f"for ids {ids} several pairs tie; yours is the one seen first, but the course's rule is another"
        return f"for ids {ids} several pairs tie; yours, {got}, is not the one the tie rule picks"
    return None


next_pair = Exercise(
    "the next merge",
    _check_next_pair,
    "Count every adjacent pair, overlaps included (zip(ids, ids[1:])). Among the most frequent, the course "
    "takes the pair with the smallest ids: compare the first ids, then the second",
    _next_pair_solution,
)


# ----------------------------------------------------------------------------- 2. encoding by rank, by hand
# merges: 256 = "aa", 257 = "aa" + "aa" = "aaaa"; the text: seven a's
ENCODE_MERGES = [(97, 97), (256, 256)]
ENCODE_TEXT = "aaaaaaa"


def _encode_by_hand_solution():
    # bytes: a a a a a a a. Lowest-ranked pair first, the leftmost on ties: (a, a) -> 256, three
    # times from the left, leaving one a: [256, 256, 256, 97]. Then (256, 256) -> 257, leftmost:
    # [257, 256, 97]. No pair left forms a token ("aaaaaa" and "aaa" are not tokens).
    return [257, 256, 97]


def _check_encode_by_hand(answer):
    if not isinstance(answer, (list, tuple)) or not all(isinstance(i, int) for i in answer):
        return f"give the ids as a list of ints, like [256, 97]; got {answer!r}"
    answer = list(answer)
    tokenizer = BytePairTokenizer(ENCODE_MERGES, pattern=None)
    if answer == tokenizer.encode(ENCODE_TEXT):
        return None
    if tokenizer.decode(answer) != ENCODE_TEXT:
        return f"your ids spell {tokenizer.decode(answer)!r}, not the seven a's"
    if answer == [256, 256, 256, 97]:
        return "after the first merge, a pair of your ids still forms a token: keep merging"
    if answer == [97, 256, 257]:
        return "you merged from the right: on a tie in rank, the leftmost pair merges first"
    return "those ids spell the text, but encoding by rank gives other ones: merge the lowest-ranked pair, leftmost first"


encode_by_hand = Exercise(
    "encoding by rank",
    _check_encode_by_hand,
    "Write the seven bytes out. At each step, merge the adjacent pair whose merged bytes form the token with the "
    "lowest id, the leftmost one on a tie, and stop when no adjacent pair forms a token",
    _encode_by_hand_solution,
)


# ----------------------------------------------------------------------------- 3. a new special token
def _add_special_solution(tokenizer, token):
    specials = list(tokenizer.special_tokens) + [token]  # the old ones keep their ids
    return BytePairTokenizer(tokenizer.merges, pattern=tokenizer.pattern, special_tokens=specials)


@expects_function("with_special(tokenizer, token)")
def _check_add_special(answer):
    old = BytePairTokenizer.train("the cat sat on the mat. " * 20, 300, special_tokens=["<|endoftext|>"])
    before, size = dict(old.special_tokens), old.vocab_size
    new = answer(old, "<|user|>")
    if not isinstance(new, BytePairTokenizer):
        return f"return a BytePairTokenizer, got {type(new).__name__}"
    if old.special_tokens != before or new is old:
        return "leave the tokenizer you were given unchanged: build a new one"
    if new.merges != old.merges or new.pattern != old.pattern:
        return "keep the merges and the pattern: only the special tokens change"
    if new.special_tokens.get("<|endoftext|>") != before["<|endoftext|>"]:
        return "<|endoftext|> must keep its id, or every text encoded before would change meaning"
    if new.special_tokens.get("<|user|>") != size:
        return f"the new token should take the next free id, after every other; got {new.special_tokens}"
    text = "the cat<|user|>sat<|endoftext|>"
    if new.encode(text).count(size) != 1 or new.decode(new.encode(text)) != text:
        return "the new token must be one id in encoded text and come back in decoded text"
    return None


add_special = Exercise(
    "a new special token",
    _check_add_special,
    "A tokenizer is its merges, its pattern and its list of special tokens: BytePairTokenizer(merges, "
    "pattern=..., special_tokens=[...]). Which order of the specials keeps the old ids?",
    _add_special_solution,
)
