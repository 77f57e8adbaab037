"""With RoPE and a KV cache, tokens fed one at a time without ``rotation`` are turned at their own
positions (after the cached tokens), so step by step equals the full causal pass."""
import pytest
import torch

from stepbystep.models import RotaryEmbedding
from stepbystep.models.attention.masks import subsequent_mask
from stepbystep.models.attention.narrow import NarrowMultiHeadAttention
from stepbystep.models.blocks.kv_cache import LayerCache


def _attention(max_len=16, seed=0):
    torch.manual_seed(seed)
    attention = NarrowMultiHeadAttention(2, 8, dropout=0.0, rotary=RotaryEmbedding(4, max_len=max_len))
    return attention.eval()


@pytest.mark.parametrize("capacity", [None, 8])
@pytest.mark.parametrize("first", [1, 3])
def test_step_by_step_without_rotation_equals_the_full_pass(capacity, first):
    attention, x = _attention(), torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(1))
    full = attention(x, mask=subsequent_mask(6))  # (N, 6, d_model)
    cache = LayerCache(capacity=capacity)
    steps = [attention(x[:, :first], mask=subsequent_mask(first), cache=cache)]
    steps += [attention(x[:, t:t + 1], cache=cache) for t in range(first, 6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_an_explicit_rotation_is_used_as_given():
    attention, x = _attention(), torch.randn(1, 3, 8)
    prefix = LayerCache()
    attention(x[:, :2], mask=subsequent_mask(2), cache=prefix)

    def step(rotation):
        cache = LayerCache()
        cache.extend(prefix.keys, prefix.values)
        return attention(x[:, 2:], cache=cache, rotation=rotation)

    at = attention.rotary.at
    torch.testing.assert_close(step(at(torch.tensor([2]))), step(None))
    assert not torch.allclose(step(at(torch.tensor([0]))), step(None), atol=1e-3)


def test_a_cache_that_would_pass_the_rotary_table_is_a_clear_error():
    attention, x = _attention(max_len=4), torch.randn(1, 4, 8)
    cache = LayerCache()
    attention(x, mask=subsequent_mask(4), cache=cache)
    with pytest.raises(ValueError, match="cache holds 4 tokens and 1 more would pass the rotary table's max_len=4"):
        attention(x[:, :1], cache=cache)
