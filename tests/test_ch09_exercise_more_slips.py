"""Chapter 09's checkers name three more slips: tensor windows, a count for a share, the cache joined along heads."""
import math

import torch

from stepbystep.exercises import ch09


def test_windows_of_tensor_elements_are_named(fails_with):
    def tensor_windows(tokens, n):  # a tensor's windows hold 0-d tensors, which a set tells apart by identity
        windows = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
        return (len(windows) - len(set(windows))) / len(windows) if windows else 0.0
    message = fails_with(ch09.repeat_share, tensor_windows, ".tolist()")
    assert "not 0" not in message


def test_a_count_instead_of_a_share_is_named(fails_with):
    def count(tokens, n):
        tokens = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        windows = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
        return len(windows) - len(set(windows))
    message = fails_with(ch09.repeat_share, count, "count")
    assert "is not 1" not in message


def test_the_cache_joined_along_the_heads_is_named(fails_with):
    def along_heads(attention, x_new, keys, values):
        q = attention.make_chunks(attention.linear_query(x_new))  # (N, h, 1, d_k)
        keys = torch.cat([keys, attention.make_chunks(attention.linear_key(x_new))], dim=1)  # fails: dim 2 differs
        values = torch.cat([values, attention.make_chunks(attention.linear_value(x_new))], dim=1)
        weights = torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(attention.d_k), dim=-1)
        return attention.output_function(weights @ values), keys, values
    message = fails_with(ch09.cached_step, along_heads, "torch.cat failed")
    assert "dim=2" not in message


def test_other_runtime_errors_keep_their_own_message(fails_with):
    def broken(attention, x_new, keys, values):
        raise RuntimeError("something else")
    message = fails_with(ch09.cached_step, broken, "raised RuntimeError: something else")
    assert "torch.cat" not in message
