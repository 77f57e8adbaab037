"""Chapter 07's exercises: percentages, <eos> counted wrong, the least likely candidates and
length-normalised scores each get their own diagnosis, and the hints nudge without the recipe."""
import math

import pytest
import torch

from stepbystep.exercises import ch07

_solution_masked = ch07.masked_accuracy._solution
_solution_exact = ch07.exact_match._solution
_solution_beam = ch07.beam_step._solution


def _masked_percent(logits, targets, pad_id):
    return 100 * _solution_masked(logits, targets, pad_id)


def _masked_without_eos(logits, targets, pad_id):
    keep = (targets != pad_id) & (targets != 2)  # (N, L): <eos> (id 2) dropped too
    return (((logits.argmax(-1) == targets) & keep).sum() / keep.sum()).item()


def _exact_percent(predicted, targets, eos_id):
    return 100 * _solution_exact(predicted, targets, eos_id)


def _exact_before_eos(predicted, targets, eos_id):
    is_eos = (targets == eos_id).long()
    up_to = is_eos.cumsum(dim=1) == 0  # (N, L): strictly before the first eos
    return ((predicted == targets) | ~up_to).all(dim=1).float().mean().item()


def _exact_one_past(predicted, targets, eos_id):
    first = (targets == eos_id).long().argmax(dim=1, keepdim=True)  # (N, 1)
    keep = torch.arange(targets.shape[1]) <= first + 1  # (N, L)
    return ((predicted == targets) | ~keep).all(dim=1).float().mean().item()


def _beam_smallest(scores, finished, log_probs, beam_width):
    log_probs = torch.where(finished.unsqueeze(-1), torch.tensor([0.0] + [-math.inf] * (log_probs.shape[-1] - 1)),
                            log_probs)  # (B, V)
    totals = (scores.unsqueeze(-1) + log_probs).view(-1)  # (B·V,)
    worst = totals.topk(beam_width, largest=False).indices
    return totals[worst], worst // log_probs.shape[-1], worst % log_probs.shape[-1]


def _beam_normalised(scores, finished, log_probs, beam_width):
    kept, beams, tokens = _solution_beam(scores, finished, log_probs, beam_width)
    return kept / 3, beams, tokens  # divided by a length


@pytest.mark.parametrize("exercise, wrong, words", [
    (ch07.masked_accuracy, _masked_percent, "a percentage"),
    (ch07.masked_accuracy, _masked_without_eos, "left out the <eos> positions"),
    (ch07.exact_match, _exact_percent, "a percentage"),
    (ch07.exact_match, _exact_before_eos, "<eos> itself was not compared"),
    (ch07.exact_match, _exact_one_past, "one position past"),
    (ch07.beam_step, _beam_smallest, "least likely"),
    (ch07.beam_step, _beam_normalised, "divided by a length"),
])
def test_each_slip_is_named(fails_with, exercise, wrong, words):
    fails_with(exercise, wrong, words)


def test_comparing_everything_is_not_called_one_past():
    def everything(predicted, targets, eos_id):
        return (predicted == targets).all(dim=1).float().mean().item()
    message = repr(ch07.exact_match.check(everything))
    assert "one position past" not in message and "<eos> itself" not in message


@pytest.mark.parametrize("exercise", [ch07.masked_accuracy, ch07.exact_match, ch07.beam_step])
def test_the_solutions_still_pass(exercise):
    assert exercise.check(exercise._solution)


@pytest.mark.parametrize("exercise, recipe", [
    (ch07.masked_accuracy, "keep.sum()"), (ch07.exact_match, "cumulative sum"), (ch07.beam_step, "index // V"),
])
def test_hints_nudge_without_the_recipe(capsys, exercise, recipe):
    exercise.hint()
    hint = capsys.readouterr().out
    assert hint.strip().endswith(("?", "on")) or "?" in hint
    assert recipe not in hint and "topk" not in hint
