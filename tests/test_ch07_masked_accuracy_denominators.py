"""Chapter 07's masked-accuracy exercise: the usual wrong denominators (every position, the batch
size) and the mean of per-sequence accuracies each get their own message, without the answer."""
import pytest
import torch

from stepbystep.exercises import ch07


def _right_real(logits, targets, pad_id):
    return (logits.argmax(-1) == targets) & (targets != pad_id)  # (N, L)


@pytest.mark.parametrize("mistake, words", [
    (lambda logits, targets, pad_id: _right_real(logits, targets, pad_id).sum() / targets.numel(),
     "still counts every position"),
    (lambda logits, targets, pad_id: (_right_real(logits, targets, pad_id).sum() / targets.numel()).item(),
     "still counts every position"),
    (lambda logits, targets, pad_id: _right_real(logits, targets, pad_id).sum().item() / len(targets),
     "number of sequences in the batch"),
    (lambda logits, targets, pad_id: _right_real(logits, targets, pad_id).sum().item() / targets.shape[0],
     "can never exceed 1"),
    (lambda logits, targets, pad_id: (_right_real(logits, targets, pad_id).sum(1)
                                      / (targets != pad_id).sum(1)).mean().item(),
     "each sequence's own accuracy"),
])
def test_wrong_denominators_are_named(fails_with, mistake, words):
    message = fails_with(ch07.masked_accuracy, mistake, words)
    assert "0.667" not in message  # the right value on the first batch stays hidden
    assert "keep.sum()" not in message and "targets != pad_id" not in message  # and so does the code


def test_the_three_named_denominators_differ_on_both_batches():
    cases = [(*ch07._masked_accuracy_case(), ch07.PAD), ch07._random_case()]
    functions = (ch07._masked_accuracy_solution, ch07._right_over_all_positions, ch07._right_over_batch_size,
                 ch07._mean_over_sequences, ch07._all_positions)
    for logits, targets, pad_id in cases:
        values = [round(function(logits, targets, pad_id), 6) for function in functions]
        assert len(set(values[:4])) == 4, values
    # counting pads in both places differs from the right-over-all-positions slip only on the second batch
    assert ch07._all_positions(*cases[1]) != ch07._right_over_all_positions(*cases[1])


def test_the_solution_still_passes():
    assert ch07.masked_accuracy.check(ch07._masked_accuracy_solution)
    assert ch07.masked_accuracy.check(lambda logits, targets, pad_id: torch.tensor(
        ch07._masked_accuracy_solution(logits, targets, pad_id)))
