"""Chapter 15's "Your turn": predict the next merge, encode by rank by hand, add a special token,
and predict what decode makes of a character cut in two.

In the notebook::

    from stepbystep.exercises import ch15
    ch15.next_pair.check(my_next_pair)
    ch15.next_pair.hint()
    ch15.next_pair.solution()
"""
import collections

from ..data import BytePairTokenizer
from .exercise import Exercise, expects_function

__all__ = ["next_pair", "encode_by_hand", "add_special", "cut_character"]


# ----------------------------------------------------------------------------- 1. the next merge
def _next_pair_solution(ids):
    counts = collections.Counter(zip(ids, ids[1:]))  # overlapping pairs count: "aaa" has (a, a) twice
    return min(counts, key=lambda pair: (-counts[pair], pair))  # most frequent; ties: the smallest ids


def _non_overlapping_pair(ids):
    """The pair a counter that skips overlaps picks ("5 5 5" holds (5, 5) once), with the tie rule."""
    pairs = set(zip(ids, ids[1:]))
    counts = {}
    for pair in pairs:
        i = counts[pair] = 0
        while i < len(ids) - 1:
            if (ids[i], ids[i + 1]) == pair:
                counts[pair], i = counts[pair] + 1, i + 2
            else:
                i += 1
    return min(counts, key=lambda pair: (-counts[pair], pair))


_NEXT_PAIR_CASES = [
    [5, 5, 5, 1, 5, 5],   # (5, 5) three times: the overlaps count
    [7, 7, 7, 7, 7, 1, 2, 1, 2, 1, 2],  # (7, 7) four times, overlaps counted; skipping them, (1, 2) wins
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
        if got == _non_overlapping_pair(ids):
            return (f"for ids {ids} you skipped overlapping pairs: in a run like x, x, x the pair (x, x) occurs "
                    "twice, once at each position, and the next training step counts both")
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
    if not isinstance(answer, (list, tuple)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in answer):
        return f"give the ids as a list of ints, like [256, 97]; got {answer!r}"
    answer = list(answer)
    tokenizer = BytePairTokenizer(ENCODE_MERGES, pattern=None)
    if not answer:
        return "your list is empty: the seven a's need at least one id"
    outside = [i for i in answer if not 0 <= i < tokenizer.vocab_size]
    if outside:
        return f"{outside[0]} is not an id of this tokenizer: it has ids 0-{tokenizer.vocab_size - 1}"
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
    # no pre-split: a pattern left at its default shows
    old = BytePairTokenizer.train("the cat sat on the mat. " * 20, 300, pattern=None, special_tokens=["<|endoftext|>"])
    before, size = dict(old.special_tokens), old.vocab_size
    new = answer(old, "<|user|>")
    if not isinstance(new, BytePairTokenizer):
        return f"return a BytePairTokenizer, got {type(new).__name__}"
    if old.special_tokens != before or new is old:
        return "leave the tokenizer you were given unchanged: build a new one"
    if new.merges != old.merges:
        return "keep the merges and the pattern: only the special tokens change"
    if new.pattern != old.pattern:
        return (f"the merges are kept, but the pattern is not (the given tokenizer's is {old.pattern!r}): the "
                "pieces a text is cut into depend on it, so the new tokenizer needs the same")
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


# ----------------------------------------------------------------------------- 4. a character cut in two
CUT_WORD = "café"  # bytes 99 97 102, then 195 169: "é" is two bytes in UTF-8
CUT_IDS = [99, 97, 102, 195]  # a byte-level stream stopped inside the "é"


def _cut_character_solution():
    # 99 97 102 are "caf"; 195 (0xC3) starts a two-byte character whose second byte never came.
    # decode reads UTF-8 with errors="replace": the broken bytes become U+FFFD, the replacement character.
    return BytePairTokenizer().decode(CUT_IDS)  # "caf\ufffd"


def _check_cut_character(answer):
    if not isinstance(answer, str):
        return f"give the text decode returns, a str; got {type(answer).__name__}"
    wanted = BytePairTokenizer().decode(CUT_IDS)
    if answer == wanted:
        return None
    if not answer:
        return "your prediction is empty: the three whole bytes at least come out as text"
    if answer == CUT_WORD:
        return "the ids stop before the second byte of the 'é': decode has only its first byte to go on"
    if answer == "caf":
        return "decode keeps a mark where the broken bytes were; it does not drop them silently"
    if answer == "caf" + bytes([195]).decode("latin-1"):
        return "that reads byte 195 as Latin-1, one character per byte; decode reads UTF-8"
    if answer.startswith("caf") and len(answer) == 4:
        return (f"the first three ids are right; the last character is {answer[-1]!r} (U+{ord(answer[-1]):04X}), "
                "not the one decode writes for broken bytes")
    return f"decode those ids byte by byte: {CUT_IDS} are bytes, read as UTF-8; {answer!r} is not what comes out"


cut_character = Exercise(
    "a character cut in two",
    _check_cut_character,
    "The first three ids are ASCII letters. Byte 195 is 0b11000011: in UTF-8 it starts a two-byte character. "
    "What does decode do with bytes that are not valid UTF-8 (the chapter's 🎭 example)?",
    _cut_character_solution,
)
