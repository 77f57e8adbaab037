"""Chapter 07's checkers name four more slips: a finished beam going on with any token at no cost, or with <pad>
at no cost but its real tokens still open; a masked accuracy that counts pads predicted right over the real
tokens; and an exact match that returns one boolean per row."""
import pytest
import torch

from stepbystep.exercises import ch07


def _step(totals, beam_width):
    best = totals.view(-1).topk(beam_width).indices  # (beam_width,)
    return totals.view(-1)[best], best // totals.shape[-1], best % totals.shape[-1]


def test_a_finished_beam_free_on_every_token_is_named(fails_with):
    def all_free(scores, finished, log_probs, beam_width):
        log_probs = log_probs.clone()
        log_probs[finished] = 0.0  # every token free after <eos>
        return _step(scores.unsqueeze(-1) + log_probs, beam_width)
    message = fails_with(ch07.beam_step, all_free, "several tokens, each at no cost")
    assert "does not keep" not in message and "<pad>" not in message  # the slip, not the answer


def test_a_finished_beam_free_on_pad_but_open_to_real_tokens_is_named(fails_with):
    def pad_only_free(scores, finished, log_probs, beam_width):
        log_probs = log_probs.clone()
        log_probs[finished, 0] = 0.0  # <pad> free, the real tokens left at their cost
        return _step(scores.unsqueeze(-1) + log_probs, beam_width)
    message = fails_with(ch07.beam_step, pad_only_free, "could still be extended by real tokens")
    assert "does not keep" not in message


def test_the_reference_step_still_passes_and_a_live_beam_keeps_several_tokens():
    assert ch07.beam_step.check(ch07._beam_step_solution)
    got = [(0.0, 1, 1), (0.0, 1, 2)]  # two free continuations of a live beam are not the finished-beam slip
    assert not ch07._finished_free(got, torch.tensor([-1.0, 0.0]), torch.tensor([True, False]))
    assert ch07._finished_free(got, torch.tensor([-1.0, 0.0]), torch.tensor([False, True]))


def test_pads_predicted_right_counted_over_the_real_tokens_is_named(fails_with):
    def right_anywhere(logits, targets, pad_id):
        return ((logits.argmax(-1) == targets).sum() / (targets != pad_id).sum()).item()
    message = fails_with(ch07.masked_accuracy, right_anywhere, "a padded position the model happened to get right")
    assert "which is not the masked accuracy" not in message


def _per_row(predicted, targets, eos_id):
    is_eos = (targets == eos_id).long()
    up_to_eos = (is_eos.cumsum(dim=1) - is_eos) == 0
    return ((predicted == targets) | ~up_to_eos).all(dim=1)  # (N,) booleans, no share taken


@pytest.mark.parametrize("as_list, says", [(False, "a tensor of 4 values"), (True, "a list of 1 value")])
def test_one_boolean_per_row_is_named_without_none(fails_with, as_list, says):
    answer = (lambda *args: _per_row(*args).tolist()) if as_list else _per_row
    message = fails_with(ch07.exact_match, answer, says)
    assert "None" not in message and "share of the rows" in message
