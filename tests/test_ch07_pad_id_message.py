"""Chapter 07's masked_accuracy checker: an answer that takes id 0 for the pad is told what it got on
the batch whose pad id is 3, the batch where that answer goes wrong, not on the first one."""
from stepbystep.exercises import ch07


def _pad_id_zero(logits, targets, pad_id):
    return ch07._masked_accuracy_solution(logits, targets, 0)


def test_the_number_reported_is_the_one_from_the_batch_whose_pad_id_is_3():
    logits, targets, pad_id = ch07._random_case()
    wrong = _pad_id_zero(logits, targets, pad_id)
    right = ch07._masked_accuracy_solution(logits, targets, pad_id)
    assert abs(wrong - right) > 1e-3  # the case tells the two apart
    result = ch07.masked_accuracy.check(_pad_id_zero)
    assert not result
    assert "pad id is 3" in result.message and f"{wrong:.3f}" in result.message
    assert "first batch, but" in result.message  # the first batch was right, and the message says so
    assert f"{right:.3f}" not in result.message  # the answer's number is not given away
