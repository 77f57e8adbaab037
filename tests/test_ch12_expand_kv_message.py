"""Chapter 12's expand_kv checker: tiling the key heads is told it has the wrong order without being
told which query heads share a key head, which is what exercise 3 asks the learner to predict."""
from stepbystep.exercises import ch12


def test_the_tiling_message_names_the_slip_but_not_the_pairing():
    result = ch12.expand_kv.check(lambda k, h: k.repeat(1, h // k.shape[1], 1, 1))
    assert not result and "wrong order" in result.message
    assert "print which key head each query head reads" in result.message
    assert "0 and 1" not in result.message and "repeat_interleave" not in result.message
