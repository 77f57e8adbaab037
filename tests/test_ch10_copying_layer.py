"""Chapter 10's claims on RoPE's second layer: in training most of its heads copy the previous token (one
head that does not, as a seed can give, is allowed; two are not), and past it every head reads an alias."""
import math

import torch

from stepbystep.experiments.position_claims import copying_layer_claims

from test_experiment_claims import failing

ALIASES = [1 + 2 * math.pi * n for n in range(5, 10)]  # 32.4, 38.7, 45.0, 51.3, 57.5
COPIES = "in training, at least 3 of the 4 heads of layer 2 put over 0.9 of their weight on the previous token, " \
         "in every seed"


def chapter_pattern():
    copying = [torch.tensor([0.999, 0.997, 0.994, 0.992]), torch.tensor([1.0, 1.0, 1.0, 0.995]),
               torch.tensor([0.986, 0.984, 0.449, 0.986])]  # the third seed: one head copies little
    top_offsets = {(seed, query): [39, 1, 39, 39] if query == 40 else [45, 51, 45, 45]
                   for seed in range(3) for query in (40, 50, 60)}
    far_weight = {(seed, query): 0.2 if query == 40 else 0.95 for seed in range(3) for query in (40, 50, 60)}
    return copying, top_offsets, far_weight


def test_the_chapter_pattern_holds_with_one_head_that_does_not_copy():
    assert failing(copying_layer_claims(*chapter_pattern(), ALIASES)) == []


def test_two_heads_that_do_not_copy_in_one_seed_break_the_claim():
    copying, top_offsets, far_weight = chapter_pattern()
    copying[2][0] = 0.85
    assert failing(copying_layer_claims(copying, top_offsets, far_weight, ALIASES)) == [COPIES]


def test_a_head_reading_no_alias_late_or_near_weight_break_their_claims():
    copying, top_offsets, far_weight = chapter_pattern()
    top_offsets[1, 60] = [45, 45, 1, 45]  # a head back on the previous token at query 60
    far_weight[0, 50] = 0.4
    assert failing(copying_layer_claims(copying, top_offsets, far_weight, ALIASES)) == [
        "at queries 50 and 60, every head of layer 2 reads most an offset within 1 of an alias of offset 1, "
        "in every seed", "and there, most of its weight lies on offsets beyond the trained ones"]
    copying, top_offsets, far_weight = chapter_pattern()
    top_offsets[1, 40] = [1, 1, 1, 1]  # query 40 is not one of the late queries
    assert failing(copying_layer_claims(copying, top_offsets, far_weight, ALIASES)) == []
