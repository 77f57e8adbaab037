"""Chapter 09's exercise 6: the share of repeated n-grams, and the mistakes its checker names."""
import torch

from stepbystep.exercises import ch09


def _windows(tokens, n, step=1):
    tokens = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
    return [tuple(tokens[i:i + n]) for i in range(0, len(tokens) - n + 1, step)]


def test_the_solution_and_another_right_answer_pass():
    def distinct(tokens, n):  # 1 - distinct windows / windows: the same number, counted another way
        windows = _windows(tokens, n)
        return 1 - len(set(windows)) / len(windows) if windows else 0
    assert ch09.repeat_share.check(ch09.repeat_share._solution)
    assert ch09.repeat_share.check(distinct)


def test_the_solution_on_a_loop_and_on_text_without_repeats():
    assert ch09.repeat_share._solution("ay 20 20 20 20 20 20 20 20", 4) > 0.7
    assert ch09.repeat_share._solution("the quick brown fox", 4) == 0.0


def test_common_mistakes_get_their_own_message(fails_with):
    def first_counted(tokens, n):
        windows = _windows(tokens, n)
        return sum(windows.count(w) > 1 for w in windows) / len(windows) if windows else 0.0

    def by_tokens(tokens, n):
        windows = _windows(tokens, n)
        return (len(windows) - len(set(windows))) / len(tokens)

    def last_window_missing(tokens, n):
        windows = _windows(tokens, n)[:-1]
        return (len(windows) - len(set(windows))) / max(1, len(windows))

    def jumping(tokens, n):
        windows = _windows(tokens, n, step=n)
        return (len(windows) - len(set(windows))) / max(1, len(windows))

    def short_fails(tokens, n):
        windows = _windows(tokens, n)
        return (len(windows) - len(set(windows))) / len(windows)  # ZeroDivisionError when too short

    fails_with(ch09.repeat_share, first_counted, "only a window that occurred *before*")
    fails_with(ch09.repeat_share, by_tokens, "not by the number of tokens")
    fails_with(ch09.repeat_share, short_fails, "has no window of n tokens")
    fails_with(ch09.repeat_share, last_window_missing, "last window")
    fails_with(ch09.repeat_share, jumping, "overlap")
    fails_with(ch09.repeat_share, lambda tokens, n: 0.5, "for every sequence")
    fails_with(ch09.repeat_share, lambda tokens, n: len(tokens) / 10, "not 0.6")
    fails_with(ch09.repeat_share, None, "expected a function")


def test_a_failed_check_does_not_give_the_share_away(fails_with):
    message = fails_with(ch09.repeat_share, lambda tokens, n: len(tokens) / 10, "not 0.6")
    assert "0.25" not in message and "1/4" not in message
