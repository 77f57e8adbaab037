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
            times = "once" if counts[got] == 1 else f"{counts[got]} times"
            return f"for ids {ids} your pair {got} occurs {times}, and another pair more often"
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
# merges: 256 = "aa", 257 = "aa" + "aa" = "aaaa", 258 = "bc", 259 = "ab"; the text: seven a's, then "bc"
ENCODE_MERGES = [(97, 97), (256, 256), (98, 99), (97, 98)]
ENCODE_TEXT = "aaaaaaabc"


def _encode_by_hand_solution():
    # bytes: a a a a a a a b c. The pair of lowest rank first, the leftmost on ties: (a, a) -> 256,
    # three times from the left: [256, 256, 256, 97, 98, 99]. Then (256, 256) -> 257 beats (b, c) ->
    # 258 and (a, b) -> 259: [257, 256, 97, 98, 99]. Then (b, c) -> 258, learned before (a, b):
    # [257, 256, 97, 258]. No pair left forms a token ("aaaaaa", "aaa", "abc" are not tokens).
    return [257, 256, 97, 258]


def _encode_by_rule(ids, pick):
    """Merge the adjacent pair ``pick`` chooses among those that form a token, until none does."""
    ranks = {pair: 256 + rank for rank, pair in enumerate(ENCODE_MERGES)}
    while True:
        found = [(k, ranks[pair]) for k, pair in enumerate(zip(ids, ids[1:])) if pair in ranks]
        if not found:
            return ids
        k, new = pick(found)
        ids = ids[:k] + [new] + ids[k + 2:]


def _leftmost():  # the leftmost pair that forms a token, whatever its rank
    return _encode_by_rule(list(ENCODE_TEXT.encode()), lambda found: found[0])


def _rank_from_the_right():  # the lowest rank, but the rightmost pair on a tie
    return _encode_by_rule(list(ENCODE_TEXT.encode()), lambda found: min(found[::-1], key=lambda f: f[1]))


def _check_encode_by_hand(answer):
    if not isinstance(answer, (list, tuple)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in answer):
        return f"give the ids as a list of ints, like [256, 97]; got {answer!r}"
    answer = list(answer)
    tokenizer = BytePairTokenizer(ENCODE_MERGES, pattern=None)
    if not answer:
        return f"your list is empty: the text {ENCODE_TEXT!r} needs at least one id"
    outside = [i for i in answer if not 0 <= i < tokenizer.vocab_size]
    if outside:
        return f"{outside[0]} is not an id of this tokenizer: it has ids 0-{tokenizer.vocab_size - 1}"
    if answer == tokenizer.encode(ENCODE_TEXT):
        return None
    if tokenizer.decode(answer) != ENCODE_TEXT:
        return f"your ids spell {tokenizer.decode(answer)!r}, not {ENCODE_TEXT!r}"
    if any(tokenizer.vocab[a] + tokenizer.vocab[b] in tokenizer.vocab.values() for a, b in zip(answer, answer[1:])):
        return "a pair of your ids still forms a token: keep merging until no adjacent pair does"
    if answer == _leftmost():
        return ("you merged the leftmost pair that forms a token (or the longest match): encoding merges the pair "
                "learned earliest (the lowest id) first, wherever it is in the text")
    if answer == _rank_from_the_right():
        return "you merged from the right: on a tie in rank, the leftmost pair merges first"
    return "those ids spell the text, but encoding by rank gives other ones: merge the lowest-ranked pair, leftmost first"


encode_by_hand = Exercise(
    "encoding by rank",
    _check_encode_by_hand,
    "Write the nine bytes out. At each step, among the adjacent pairs whose merged bytes form a token, merge the "
    "one with the lowest id (the leftmost on a tie), and stop when no adjacent pair forms a token",
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
CUT_IDS = [99, 97, 102, 195, 99]  # a byte-level stream that drew "c" (99) where the "é"'s second byte belonged


def _cut_character_solution():
    # 99 97 102 are "caf"; 195 (0b11000011) starts a two-byte character, but 99 (0b01100011) is not
    # a continuation byte (0b10xxxxxx). decode reads UTF-8 with errors="replace": the broken byte
    # becomes one U+FFFD, the replacement character, and reading goes on: 99 is "c".
    return BytePairTokenizer().decode(CUT_IDS)  # "caf\ufffdc"


def _check_cut_character(answer):
    if not isinstance(answer, str):
        return f"give the text decode returns, a str; got {type(answer).__name__}"
    wanted = BytePairTokenizer().decode(CUT_IDS)
    if answer == wanted:
        return None
    if not answer:
        return "your prediction is empty: the whole bytes at least come out as text"
    if answer in ("caf\ufffd", "caf"):
        return "decode does not stop at a broken byte: it reads on, and the byte after it is a character of its own"
    if answer == "caf\ufffd\ufffd":
        return ("only one byte is broken: 99 is 0b01100011, not a continuation byte (0b10xxxxxx), so it is not "
                "taken into the broken character; it is a character of its own")
    if answer == "cafc":
        return "decode keeps a mark where the broken byte was; it does not drop it silently"
    if answer in (CUT_WORD, CUT_WORD + "c"):
        return "the 'é' never got its second byte (169): after 195 came 99, so decode has only the first byte to go on"
    if answer == "caf" + bytes([195, 99]).decode("latin-1"):
        return "that reads byte 195 as Latin-1, one character per byte; decode reads UTF-8"
    if answer.startswith("caf") and answer.endswith("c") and len(answer) == 5:
        return (f"the ids around it are right; the fourth character is {answer[3]!r} (U+{ord(answer[3]):04X}), "
                "not the one decode writes for broken bytes")
    return f"decode those ids byte by byte: {CUT_IDS} are bytes, read as UTF-8; {answer!r} is not what comes out"


cut_character = Exercise(
    "a character cut in two",
    _check_cut_character,
    "The first three ids are ASCII letters. Byte 195 is 0b11000011: in UTF-8 it starts a two-byte character, "
    "whose second byte must look like 0b10xxxxxx. Is 99 such a byte? What does decode write for bytes that make no "
    "character (the chapter's 🎭 example), and what does it do with the bytes after them?",
    _cut_character_solution,
)
