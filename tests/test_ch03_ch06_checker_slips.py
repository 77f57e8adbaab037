"""Chapters 03 and 06: a two-tensor split, padding put on the queries and a float64 mask are named."""
import torch

from stepbystep.exercises import ch03, ch06


def test_split_qkv_that_returns_two_tensors_says_how_many_arrived():
    result = ch03.split_qkv.check(lambda qkv, n_heads: tuple(qkv.chunk(2, dim=-1)))
    assert not result and "got a tuple of 2" in repr(result)


def test_combined_mask_with_padding_on_the_queries_is_named(fails_with):
    def on_queries(target_pad, causal, n_heads):
        keep = target_pad.transpose(1, 2) & causal  # (N, L, 1) & (1, L, L): rows of padded queries blocked
        additive = torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))
        return additive.repeat_interleave(n_heads, dim=0)

    fails_with(ch06.combined_mask, on_queries, "padded queries")


def test_combined_mask_in_float64_is_refused_before_pytorch_sees_it(fails_with):
    text = fails_with(ch06.combined_mask, lambda *a: ch06._combined_mask_solution(*a).double(), "must be too")
    assert "torch.float64" in text and "Input dtypes" not in text
