"""Chapter 07's checkers name two slips a reader found only generic messages for: a finished beam going on
with a real token (not <pad>) at no cost, and a masked accuracy that averages the right token's probability."""
import torch

from stepbystep.exercises import ch07


def test_a_finished_beam_going_on_with_a_real_token_is_named(fails_with):
    def last_id_after_eos(scores, finished, log_probs, beam_width):
        kept, beams, tokens = ch07._beam_step_solution(scores, finished, log_probs, beam_width)
        finished = torch.as_tensor(finished, dtype=torch.bool)  # (B,)
        return kept, beams, torch.where(finished[beams], torch.full_like(tokens, log_probs.shape[-1] - 1), tokens)
    message = fails_with(ch07.beam_step, last_id_after_eos, "a finished beam went on with a token other than <pad>")
    assert "flattened" not in message  # not the layout hint: the layout is right


def test_the_finished_token_slip_needs_the_right_totals_and_finished_beams():
    expected = [(0.0, 1, 0), (-1.0, 0, 4)]
    finished = torch.tensor([False, True])
    assert ch07._finished_other_token([(0.0, 1, 6), (-1.0, 0, 4)], expected, finished)
    assert not ch07._finished_other_token([(0.0, 1, 0), (-1.0, 0, 5)], expected, finished)  # a live beam's token
    assert not ch07._finished_other_token([(0.0, 0, 6), (-1.0, 0, 4)], expected, finished)  # another beam
    assert not ch07._finished_other_token(expected, expected, finished)  # nothing wrong


def test_the_mean_probability_of_the_right_token_is_named(fails_with):
    def mean_right_probability(logits, targets, pad_id):
        keep = targets != pad_id  # (N, L)
        right = logits.softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (N, L)
        return right[keep].mean().item()
    message = fails_with(ch07.masked_accuracy, mean_right_probability, "the mean probability the model gives")
    assert "argmax" not in message


def test_a_negative_accuracy_is_named(fails_with):
    def mean_log_probability(logits, targets, pad_id):
        keep = targets != pad_id  # (N, L)
        right = logits.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (N, L)
        return right[keep].mean().item()
    fails_with(ch07.masked_accuracy, mean_log_probability, "below 0: an accuracy is a share")
