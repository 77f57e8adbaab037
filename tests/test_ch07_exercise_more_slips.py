"""Chapter 07's checkers name three more slips: a percentage computed in float64, a finished beam going on
with <eos>, and a beam step that returns probabilities."""
import torch

from stepbystep.exercises import ch07


def test_a_percentage_in_float64_is_named(fails_with):
    def percent_float64(logits, targets, pad_id):
        keep = targets != pad_id
        right = (logits.argmax(-1) == targets) & keep
        return 100 * right.sum().item() / keep.sum().item()

    def percent_mean(logits, targets, pad_id):
        keep = targets != pad_id
        return 100 * (logits.argmax(-1) == targets)[keep].float().mean()

    for answer in (percent_float64, percent_mean):
        fails_with(ch07.masked_accuracy, answer, "a percentage")


def test_the_right_share_in_float64_still_passes():
    def share_float64(logits, targets, pad_id):
        keep = targets != pad_id
        return ((logits.argmax(-1) == targets) & keep).sum().item() / keep.sum().item()
    assert ch07.masked_accuracy.check(share_float64)


def test_a_finished_beam_going_on_with_eos_is_named(fails_with):
    def with_eos(scores, finished, log_probs, beam_width):
        only_eos = torch.full_like(log_probs[0], float("-inf"))  # (V,)
        only_eos[ch07.EOS] = 0.0
        totals = scores.unsqueeze(-1) + torch.where(finished.unsqueeze(-1), only_eos, log_probs)  # (B, V)
        best = totals.view(-1).topk(beam_width).indices
        return totals.view(-1)[best], best // log_probs.shape[-1], best % log_probs.shape[-1]
    message = fails_with(ch07.beam_step, with_eos, "went on with <eos>")
    assert "flattened" not in message


def test_probabilities_returned_are_named(fails_with):
    def probabilities(scores, finished, log_probs, beam_width):
        kept, beams, tokens = ch07._beam_step_solution(scores, finished, log_probs, beam_width)
        return kept.exp(), beams, tokens
    message = fails_with(ch07.beam_step, probabilities, "probabilities")
    assert "does not keep" not in message
