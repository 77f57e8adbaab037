"""Chapter 07's checkers name three more slips: a beam step that finds the right totals but splits the
flat index the wrong way round, one that multiplies log-probabilities, and a masked accuracy divided
with //."""
import pytest
import torch

from stepbystep.exercises import ch07


def _right_totals_split_by_beams(scores, finished, log_probs, beam_width):
    """The right totals, then beam = index % B and token = index // B, B the number of beams."""
    kept, beams, tokens = ch07._beam_step_solution(scores, finished, log_probs, beam_width)
    flat = beams * torch.as_tensor(log_probs).shape[-1] + tokens  # (beam_width,)
    return kept, flat % len(scores), flat // len(scores)


def _multiplied_logs(scores, finished, log_probs, beam_width):
    only_pad = torch.full_like(log_probs[0], float("-inf"))
    only_pad[0] = 0.0
    totals = scores.unsqueeze(-1) * torch.where(finished.unsqueeze(-1), only_pad, log_probs)  # (B, V)
    totals = totals.nan_to_num(nan=float("-inf"))
    best = totals.view(-1).topk(beam_width).indices
    return totals.view(-1)[best], best // log_probs.shape[-1], best % log_probs.shape[-1]


def test_right_totals_with_a_wrong_index_split_are_named(fails_with):
    message = fails_with(ch07.beam_step, _right_totals_split_by_beams, "the right totals, but the beam index or the "
                         "token returned with them does not belong to that candidate")
    assert "% " not in message and "//" not in message  # the question, not the answer
    assert "does not keep the" not in message


def test_multiplied_log_probabilities_are_named(fails_with):
    fails_with(ch07.beam_step, _multiplied_logs, "the beam's score times the new token's log-probability")


def test_the_beam_solution_still_passes():
    assert ch07.beam_step.check(ch07._beam_step_solution)


def test_masked_accuracy_divided_with_floor_division_is_named(fails_with):
    def floor_divided(logits, targets, pad_id):
        keep = targets != pad_id
        return (((logits.argmax(-1) == targets) & keep).sum() // keep.sum()).item()
    message = fails_with(ch07.masked_accuracy, floor_divided, "dividing them with // rounds the share down")
    assert "not the masked accuracy" not in message


@pytest.mark.parametrize("share", [0.5, 1.0])
def test_other_wrong_masked_accuracies_keep_the_generic_message(fails_with, share):
    fails_with(ch07.masked_accuracy, lambda logits, targets, pad_id: share, "which is not the masked accuracy")
