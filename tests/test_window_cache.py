"""The sliding-window cache on its own (chapter 17): one rolling buffer whether preallocated or not,
the window and sinks checked once when the cache is made (never on the per-step path), gradients
through a cache made without capacity, and the names importable where they were."""
import pytest
import torch

import stepbystep.models.attention.masks as masks
from stepbystep.models import DecoderConfig, KVCache, WindowBuffer, WindowedKVCache, window_mask
from stepbystep.models.blocks.window_cache import WindowedLayerCache


def _model(window=4, sinks=1):
    torch.manual_seed(0)
    return DecoderConfig.llama(50, d_model=16, n_heads=2, n_kv_heads=1, n_layers=1, ff_units=24, max_len=40,
                               sliding_window=window, attention_sinks=sinks).build().eval()


def test_the_model_makes_a_windowed_cache_only_with_a_window():
    assert type(_model().new_cache()) is WindowedKVCache
    plain = DecoderConfig(50, d_model=16, n_heads=2, n_layers=1).build()
    assert type(plain.new_cache()) is KVCache and isinstance(_model().new_cache(), KVCache)
    assert repr(_model().new_cache()) == "KVCache(1 layers, 0 tokens, window=4, sinks=1)"


@pytest.mark.parametrize("capacity", [None, 30])
def test_with_or_without_capacity_the_columns_are_the_same_rolling_buffer(capacity):
    model, ids = _model(), torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(1))
    cache = model.new_cache(capacity=capacity)
    with torch.no_grad():
        for step in range(12):
            model(ids[:, step:step + 1], cache=cache)
    # stream 0..11, one sink, window 4: token s >= 1 sits in column 1 + (s - 1) mod 4
    assert cache.key_index.tolist() == [0, 9, 10, 11, 8]
    assert all(layer.keys.shape[2] == 5 for layer in cache.layers)


def test_a_cache_without_capacity_lets_gradients_through_every_step():
    model, ids = _model().train(), torch.randint(0, 50, (1, 9), generator=torch.Generator().manual_seed(2))
    cache = model.new_cache()
    logits = torch.cat([model(ids[:, :3], cache=cache)] + [model(ids[:, s:s + 1], cache=cache) for s in range(3, 9)], 1)
    logits.sum().backward()  # an in-place overwrite of a key an earlier step read would fail here
    grad = model.layers[0].self_attn_heads.linear_key.weight.grad
    assert grad is not None and grad.abs().sum() > 0


def test_window_and_sinks_are_checked_when_the_cache_is_made_not_at_each_step(monkeypatch):
    with pytest.raises(ValueError, match="window must be a positive int"):
        WindowedKVCache(1, 0)
    model = _model()
    cache = model.new_cache(capacity=20)

    def refuse(*args, **kwargs):
        raise AssertionError("a per-step argument check ran")

    for name in ("window_mask", "check_positive_int", "check_non_negative_int"):  # the window's own checks
        monkeypatch.setattr(masks, name, refuse)
    with torch.no_grad():
        for step in range(8):
            model(torch.tensor([[step + 1]]), cache=cache)
    assert cache.length == 8


def test_the_causal_window_mask_is_the_window_and_the_causal_mask():
    index = torch.arange(9)
    causal = index[None, :] <= index[:, None]  # (L, L)
    for window, sinks in ((1, 0), (3, 2), (9, 0)):
        assert torch.equal(window_mask(index, index, window, sinks, causal=True)[0],
                           window_mask(index, index, window, sinks)[0] & causal)
    assert window_mask(index, index, 3)[0, 0, 2]  # without causal: it says nothing of the future


def test_a_layer_cache_of_a_small_capacity_refuses_a_stream_past_it():
    layer = WindowedLayerCache(5, capacity=3)
    keys = torch.randn(1, 2, 2, 4)
    layer.extend(keys, keys)
    with pytest.raises(ValueError, match="capacity=3 tokens and holds 2, so 2 more do not fit"):
        layer.extend(keys, keys)
