"""Chapter 15's exercises 2 and 4 tell the wrong rules a learner is likely to use: encoding by the
leftmost pair (or the longest match) instead of by rank, and a cut character that stops decoding or
swallows the byte after it."""
from stepbystep.data import BytePairTokenizer
from stepbystep.exercises import ch15


def _greedy_longest(text, tokenizer):
    """Longest token from the left, again and again: not how BPE encodes."""
    data, ids = text.encode(), []
    tokens = {token: i for i, token in tokenizer.vocab.items()}
    while data:
        size = max(n for n in range(1, len(data) + 1) if data[:n] in tokens)
        ids.append(tokens[data[:size]])
        data = data[size:]
    return ids


def test_encoding_by_rank_differs_from_the_leftmost_pair_and_the_longest_match(fails_with):
    tokenizer = BytePairTokenizer(ch15.ENCODE_MERGES, pattern=None)
    assert ch15.encode_by_hand.check(ch15._encode_by_hand_solution())
    assert tokenizer.encode(ch15.ENCODE_TEXT) == ch15._encode_by_hand_solution()
    greedy = _greedy_longest(ch15.ENCODE_TEXT, tokenizer)
    assert greedy == ch15._leftmost() == [257, 256, 259, 99]
    fails_with(ch15.encode_by_hand, greedy, "you merged the leftmost pair")
    fails_with(ch15.encode_by_hand, (257, 256, 259, 99), "the pair learned earliest (the lowest id) first")


def test_the_leftmost_rule_is_the_breakage_cases_rule_and_fails_here():
    def leftmost(ids):  # the breakage case's rule on this exercise's merges
        ranks = {pair: 256 + r for r, pair in enumerate(ch15.ENCODE_MERGES)}
        while True:
            for k, pair in enumerate(zip(ids, ids[1:])):
                if pair in ranks:
                    ids = ids[:k] + [ranks[pair]] + ids[k + 2:]
                    break
            else:
                return ids

    assert leftmost(list(ch15.ENCODE_TEXT.encode())) != ch15._encode_by_hand_solution()


def test_a_cut_character_neither_stops_decoding_nor_takes_the_next_byte(fails_with):
    assert BytePairTokenizer().decode(ch15.CUT_IDS) == "caf\ufffdc"
    fails_with(ch15.cut_character, "caf\ufffd", "does not stop at a broken byte")
    fails_with(ch15.cut_character, "caf", "does not stop at a broken byte")
    message = fails_with(ch15.cut_character, "caf\ufffd\ufffd", "not a continuation byte")
    assert "\ufffdc" not in message and "'c'" not in message  # names the rule, not the answer
    fails_with(ch15.cut_character, "caféc", "never got its second byte")
