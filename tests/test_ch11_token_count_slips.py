"""Chapter 11's token count: weights multiplied by a head count, and the pair returned the wrong way round,
get their own message, which does not give the count; the right answer passes."""
from stepbystep.exercises import ch11


def tokens(h, w, p):
    return (h // p) * (w // p) + 1


def test_weights_multiplied_by_the_heads_are_named(fails_with):
    for heads in (2, 12):
        message = fails_with(ch11.token_count, lambda h, w, p: (tokens(h, w, p), heads * tokens(h, w, p) ** 2),
                             "do not multiply by the heads")
        assert "** 2" not in message and "squared" not in message


def test_the_pair_the_wrong_way_round_is_named(fails_with):
    message = fails_with(ch11.token_count, lambda h, w, p: (tokens(h, w, p) ** 2, tokens(h, w, p)),
                         "as if you returned (weights, tokens)")
    assert "the number of tokens is not right" not in message


def test_a_wrong_token_count_is_not_taken_for_a_swapped_pair(fails_with):
    message = fails_with(ch11.token_count, lambda h, w, p: (tokens(h, w, p) + 1, (tokens(h, w, p) + 1) ** 2),
                         "the number of tokens is not right")
    assert "(weights, tokens)" not in message


def test_the_right_pair_passes():
    assert ch11.token_count.check(lambda h, w, p: (tokens(h, w, p), tokens(h, w, p) ** 2))
