"""Chapter 09, exercise 5: a nucleus measured by a running sum of the sorted logits, not of the
probabilities, gets its own diagnosis, not "the kept tokens are not the most likely"."""
import torch

from stepbystep.exercises import ch09


def _nucleus_of_logits(include_self):
    def top_p(logits, p):
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        running = sorted_logits.cumsum(dim=-1)
        keep_sorted = running <= p if include_self else running - sorted_logits < p
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        return logits.masked_fill(~keep, float("-inf"))
    return top_p


def test_a_running_sum_of_logits_is_diagnosed(fails_with):
    for include_self in (False, True):
        message = fails_with(ch09.top_p, _nucleus_of_logits(include_self), "adds up logits")
        assert "softmax" not in message and "not the most likely" not in message


def test_the_solution_is_not_taken_for_the_logit_mistake():
    assert ch09.top_p.check(ch09.top_p._solution)
