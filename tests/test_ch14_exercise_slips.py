"""Chapter 14's exercises: the slips the chapter's own text invites get their own message."""
import math

import torch

from stepbystep.exercises import ch14
from stepbystep.models import tile_plan


def test_skipped_tiles_names_each_slip(fails_with):
    def bottom_right(l_q, l_k, block_q, block_k):  # the alignment just taught, not the one asked
        return tile_plan(l_q, l_k, block_q, block_k, is_causal=True, causal_alignment="bottom_right")[1].skipped

    def tiles(l_q, l_k, block_q, block_k):
        return [(q, min(q + block_q, l_q), k, min(k + block_k, l_k))
                for q in range(0, l_q, block_q) for k in range(0, l_k, block_k)]

    def diagonal_too(*case):  # >= instead of >
        return sum(ks >= qe - 1 for qs, qe, ks, ke in tiles(*case))

    def partly_masked(*case):  # skips a tile as soon as one key is in the future
        return sum(ke - 1 > qs for qs, qe, ks, ke in tiles(*case))

    def first_query(*case):
        return sum(ks > qs for qs, qe, ks, ke in tiles(*case))

    fails_with(ch14.skipped_tiles, bottom_right, "bottom-right")
    fails_with(ch14.skipped_tiles, diagonal_too, "read its own key")
    fails_with(ch14.skipped_tiles, partly_masked, "diagonal crosses")
    message = fails_with(ch14.skipped_tiles, first_query, "with its first query")
    assert "bottom-right" not in message and "crosses" not in message


def test_merge_that_forgets_l_in_the_weights_is_named(fails_with):
    def no_l(m1, l1, o1, m2, l2, o2):
        m = max(m1, m2)
        w1, w2 = math.exp(m1 - m), math.exp(m2 - m)
        return m, l1 * w1 + l2 * w2, (o1 * w1 + o2 * w2) / (w1 + w2)
    fails_with(ch14.merge, no_l, "its whole sum l")


def test_running_update_with_the_rescale_inverted_is_named(fails_with):
    def inverted(lse, o, scores, values):
        new_lse = torch.logaddexp(torch.as_tensor(lse, dtype=scores.dtype), torch.logsumexp(scores, dim=0))
        return new_lse, o * torch.exp(new_lse - lse) + torch.exp(scores - new_lse) @ values
    fails_with(ch14.running_update, inverted, "rescales the wrong way")
    assert ch14.running_update.check(ch14.running_update._solution)
