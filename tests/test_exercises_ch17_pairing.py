"""Chapter 17's exercises, the slips added after the first read: weights paired with the wrong
experts (exercise 2), and the checked prediction of how many keys a windowed query reads (exercise 3)."""
import torch

from stepbystep.exercises import ch17
from stepbystep.models import window_mask


def test_route_weights_paired_with_the_wrong_experts_get_their_own_message(fails_with):
    def mispaired(logits, k):
        weights, experts = ch17.route._solution(logits, k)  # weights in descending order
        return weights, experts.sort(dim=-1).values  # the experts by index: the pairs broken
    fails_with(ch17.route, mispaired, "same order")


def test_the_keys_query_9_reads_is_the_package_s_mask_count():
    index = torch.arange(10)
    mask = window_mask(index, index, 3, sinks=2)[0] & (index.unsqueeze(0) <= index.unsqueeze(1))  # (L, L)
    assert ch17.window_keys._solution() == int(mask[9].sum()) == 5
    assert ch17.window_keys.check(5) and ch17.window_keys.check(torch.tensor(5))


def test_the_keys_query_9_reads_slips_are_named(fails_with):
    fails_with(ch17.window_keys, 6, "one key too many")
    fails_with(ch17.window_keys, 4, "one key too few")
    fails_with(ch17.window_keys, 3, "the window alone")
    fails_with(ch17.window_keys, 2, "the sinks alone")
    fails_with(ch17.window_keys, 10, "causal mask")
    fails_with(ch17.window_keys, 1, "only the query itself")
    fails_with(ch17.window_keys, 7, "count the keys")
    fails_with(ch17.window_keys, "five", "expected one number")
    assert "5" not in repr(ch17.window_keys.check(6))
