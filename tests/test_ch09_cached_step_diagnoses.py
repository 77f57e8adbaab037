"""Chapter 09's cached-step checker names three common bugs instead of one generic message."""
import math

import torch
import torch.nn.functional as F

from stepbystep.exercises import ch09


def _projected(attention, x_new, keys, values):
    q = attention.make_chunks(attention.linear_query(x_new))  # (N, h, 1, d_k)
    keys = torch.cat([keys, attention.make_chunks(attention.linear_key(x_new))], dim=2)  # (N, h, t + 1, d_k)
    values = torch.cat([values, attention.make_chunks(attention.linear_value(x_new))], dim=2)
    return q, keys, values


def test_is_causal_with_one_query_is_named(fails_with):
    def top_left(attention, x_new, keys, values):
        q, keys, values = _projected(attention, x_new, keys, values)
        context = F.scaled_dot_product_attention(q, keys, values, is_causal=True)  # (N, h, 1, d_k): key 0 only
        return attention.output_function(context), keys, values
    message = fails_with(ch09.cached_step, top_left, "reads only the first key")
    assert "is_causal" in message and "differs from the last row" not in message


def test_the_new_token_left_out_of_its_own_attention_is_named(fails_with):
    def without_itself(attention, x_new, keys, values):
        q, new_keys, new_values = _projected(attention, x_new, keys, values)
        weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_k), dim=-1)  # the old keys only
        return attention.output_function(weights @ values), new_keys, new_values
    fails_with(ch09.cached_step, without_itself, "not itself")


def test_a_softmax_over_the_wrong_dimension_is_named(fails_with):
    for dim in (-2, 1):
        def wrong_dim(attention, x_new, keys, values, dim=dim):
            q, keys, values = _projected(attention, x_new, keys, values)
            weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_k), dim=dim)
            return attention.output_function(weights @ values), keys, values
        fails_with(ch09.cached_step, wrong_dim, "wrong dimension")


def test_a_right_answer_through_the_fused_kernel_passes():
    def fused(attention, x_new, keys, values):
        q, keys, values = _projected(attention, x_new, keys, values)
        return attention.output_function(F.scaled_dot_product_attention(q, keys, values)), keys, values
    assert ch09.cached_step.check(fused)
