"""Chapter 13's stripe checker names subtracting the gap (not a coincidental "previous-token" message),
and the breaking-heads hint points at the search without spelling it out."""
from stepbystep.exercises import ch13


def test_subtracting_the_gap_is_named_not_taken_for_the_previous_token_offset(fails_with):
    message = fails_with(ch13.stripe, lambda length, gap: length - gap - 1, "add to the distance")
    assert "previous-token" not in message and "gap - 1" not in message and "+ gap" not in message
    fails_with(ch13.stripe, lambda length, gap: 1, "previous-token head")  # a constant 1 still gets its own message


def test_the_breaking_heads_hint_does_not_give_the_algorithm(capsys):
    ch13.breaking_heads.hint()
    hint = capsys.readouterr().out
    assert "ablate_heads" in hint and "smaller" in hint
    assert "15 sets" not in hint and "smallest sets first" not in hint and "half of ln V" not in hint
