"""Sliding-window attention and attention sinks (chapter 17): the window mask counts as Mistral's does,
the cache holds at most ``attention_sinks + sliding_window`` tokens (growing or preallocated as a
rolling buffer) and gives the uncached model's logits; a transformers Mistral, or a Qwen3 windowed in
every layer (random weights from a config, nothing downloaded), loads to 1e-4 with its greedy tokens."""
import pytest
import torch

from small_transformers import VOCAB, random_ids, small_model
from stepbystep.models import DecoderConfig, from_transformers, generate
from stepbystep.models.attention.masks import window_mask
from stepbystep.models.blocks.kv_cache import KVCache
from stepbystep.models.blocks.window_cache import WindowedKVCache, WindowedLayerCache
from stepbystep.models.gpt.cache_memory import kv_cache_bytes

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


def test_the_window_mask_is_mistrals_count_and_keeps_the_sinks():
    from transformers.masking_utils import sliding_window_causal_mask_function

    index = torch.arange(12)
    for window in (1, 3, 5, 12):
        theirs = sliding_window_causal_mask_function(window)(0, 0, index[:, None], index[None, :])  # (L, L)
        causal = index[None, :] <= index[:, None]  # (L, L)
        assert torch.equal(window_mask(index, index, window)[0] & causal, theirs)
    rows = window_mask(index, index, 3, sinks=2)[0] & causal  # (L, L)
    assert rows[7].nonzero().flatten().tolist() == [0, 1, 5, 6, 7]  # the sinks, then the 3 most recent
    assert rows[2].nonzero().flatten().tolist() == [0, 1, 2]
    assert rows.sum(1).max() == 5  # never more than sinks + window keys
    later = window_mask(torch.tensor([20]), torch.tensor([0, 3, 17, 18, 19, 20]), 3, sinks=1)  # a cache's columns
    assert later[0, 0].tolist() == [True, False, False, True, True, True]


def test_a_wrong_window_or_sinks_is_refused():
    with pytest.raises(ValueError, match="window must be a positive int"):
        window_mask(torch.arange(3), torch.arange(3), 0)
    with pytest.raises(ValueError, match="attention_sinks=2 needs a sliding_window"):
        DecoderConfig(10, d_model=8, n_heads=2, attention_sinks=2).build()
    with pytest.raises(ValueError, match="sliding_window must be a positive int"):
        DecoderConfig(10, d_model=8, n_heads=2, sliding_window=0).build()
    with pytest.raises(ValueError, match="attention_sinks must be a non-negative int"):
        DecoderConfig(10, d_model=8, n_heads=2, sliding_window=4, attention_sinks=-1).build()
    with pytest.raises(TypeError, match="unexpected keyword argument 'sinks'"):
        KVCache(2, sinks=1)  # sinks need a window: a WindowedKVCache
    with pytest.raises(ValueError, match="window must be a positive int"):
        WindowedKVCache(2, 0)
    with pytest.raises(ValueError, match="sinks must be a non-negative int"):
        WindowedKVCache(2, 4, sinks=-1)


def _model(window, sinks=0, n_heads=4, n_kv_heads=2, pad_id=None, seed=0, position_scheme="rope"):
    torch.manual_seed(seed)
    config = DecoderConfig.llama(VOCAB, d_model=32, n_heads=n_heads, n_layers=2, n_kv_heads=n_kv_heads, ff_units=48,
                                 max_len=80, sliding_window=window, attention_sinks=sinks, pad_id=pad_id,
                                 position_scheme=position_scheme)
    model = config.build().eval()
    with torch.no_grad():  # larger weights than the default: greedy tokens that vary, scores that differ
        for weight in model.parameters():
            if weight.dim() > 1:
                weight.normal_(0, 0.3)
    return model



@pytest.mark.parametrize("window, sinks", [(4, 0), (6, 2)])
def test_each_query_reads_only_its_window_and_the_sinks(window, sinks):
    model = _model(window, sinks)
    ids = random_ids(2, 20)
    weights = model.attention_weights(ids, layer_idx=0)  # (N, h, L, L)
    index = torch.arange(20)
    recent = (index[:, None] - index[None, :] < window) | (index[None, :] < sinks)  # (L, L)
    allowed = (index[None, :] <= index[:, None]) & recent
    assert weights[..., ~allowed].abs().max() == 0 and weights[..., allowed].min() > 0
    plain = model.config.replace(sliding_window=None, attention_sinks=0).build().eval()
    plain.load_state_dict(model.state_dict())
    with torch.no_grad():
        ours, full = model(ids), plain(ids)
    held = window + sinks  # before it, every earlier token is readable
    torch.testing.assert_close(ours[:, :held], full[:, :held], rtol=0, atol=1e-6)
    assert (ours[:, held:] - full[:, held:]).abs().max() > 1e-2  # past it: another function
    assert f"sliding_window={window}, attention_sinks={sinks}" in repr(model)


@pytest.mark.parametrize("capacity", [None, 100], ids=["growing", "rolling"])
@pytest.mark.parametrize("window, sinks, n_heads, n_kv_heads", [(5, 0, 4, 2), (4, 2, 4, 1), (7, 3, 2, 2)])
def test_the_cache_holds_at_most_sinks_plus_window_and_gives_the_uncached_logits(capacity, window, sinks, n_heads,
                                                                                  n_kv_heads):
    model = _model(window, sinks, n_heads, n_kv_heads)
    length = 3 * (sinks + window) + 5  # a stream 3x longer than what is held
    ids = random_ids(2, length)
    steps = [3, 1, 1, window + 2, 1, 3] + [1] * length  # one token, several, more than the window
    cache, logits, start = model.new_cache(capacity=capacity), [], 0
    with torch.no_grad():
        for size in steps:
            if start >= length:
                break
            logits.append(model(ids[:, start:start + size], cache=cache))
            start += size
            for layer in cache.layers:
                assert layer.keys.shape[2] == layer.values.shape[2] == min(start, sinks + window)
        full = model(ids)
    assert cache.length == length and len(cache.key_index) == sinks + window
    torch.testing.assert_close(torch.cat(logits, dim=1), full, rtol=0, atol=1e-4)


def test_the_rolling_buffer_overwrites_in_place_and_keeps_the_sinks():
    model = _model(4, 2)
    cache = model.new_cache(capacity=50)
    with torch.no_grad():
        model(random_ids(1, 6), cache=cache)
        buffer = cache.layers[0].keys
        for step in range(7):
            model(random_ids(1, 1, seed=step), cache=cache)
            assert cache.layers[0].keys.data_ptr() == buffer.data_ptr()  # the same memory, written in place
    # stream 0..12: slots 0, 1 keep the sinks; token s >= 2 sits in slot 2 + (s - 2) mod 4
    assert cache.key_index.tolist() == [0, 1, 10, 11, 12, 9]
    assert cache.positions[0].tolist() == [0, 1, 10, 11, 12, 9]  # the stream's positions, not the cache's


def test_a_layer_cache_alone_refuses_a_stream_past_a_small_buffer():
    layer = WindowedLayerCache(5, capacity=3)
    keys = torch.randn(1, 2, 3, 4)
    layer.extend(keys, keys)
    with pytest.raises(ValueError, match="the KV cache is full: it was preallocated for capacity=3 tokens"):
        layer.extend(keys[:, :, :1], keys[:, :, :1])


def test_a_small_capacity_fills_as_before_a_large_one_never_does():
    model = _model(6, 2)
    small = model.new_cache(capacity=5)
    with torch.no_grad():
        model(random_ids(1, 5), cache=small)
        with pytest.raises(ValueError, match="the KV cache is full"):
            model(random_ids(1, 1), cache=small)
        large = model.new_cache(capacity=8)  # sinks + window: a rolling buffer
        for step in range(30):
            model(random_ids(1, 1, seed=step), cache=large)
    assert large.length == 30 and large.layers[1].keys.shape[2] == 8


@pytest.mark.parametrize("sinks", [0, 2])
@pytest.mark.parametrize("position_scheme", ["rope", "alibi", "learned"])
def test_greedy_generation_past_the_window_is_the_same_with_and_without_the_cache(sinks, position_scheme):
    model = _model(5, sinks, position_scheme=position_scheme)
    prompt = random_ids(2, 4, seed=3)
    cached = generate(model, prompt, 3 * 5 + 10, temperature=0)
    assert cached.shape == (2, 29) and min(len(set(row[4:].tolist())) for row in cached) > 3
    assert torch.equal(generate(model, prompt, 25, temperature=0, use_cache=False), cached)


def test_a_left_padded_row_reads_the_window_it_reads_alone():
    model = _model(4, pad_id=0)
    alone = random_ids(1, 7, seed=4, vocab=VOCAB - 1) + 1  # no padding id
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), alone], dim=1)  # (1, 10)
    batch = torch.cat([padded, random_ids(1, 10, seed=5, vocab=VOCAB - 1) + 1])  # (2, 10)
    with torch.no_grad():
        torch.testing.assert_close(model(batch)[:1, 3:], model(alone), rtol=0, atol=1e-4)
    cached, uncached = (generate(model, batch, 12, temperature=0, pad_id=0, use_cache=flag) for flag in (True, False))
    assert torch.equal(cached, uncached)
    assert torch.equal(generate(model, alone, 12, temperature=0, pad_id=0)[0, 7:], cached[0, 10:])


@pytest.mark.parametrize("capacity", [None, 60], ids=["growing", "rolling"])
def test_reordered_rows_go_on_as_the_reordered_stream(capacity):
    model = _model(4, 1)
    ids = random_ids(3, 20)
    rows = torch.tensor([2, 2, 0])
    cache = model.new_cache(capacity=capacity)
    with torch.no_grad():
        model(ids[:, :12], cache=cache)
        cache.reorder(rows)
        continued = model(ids[rows, 12:], cache=cache)
        torch.testing.assert_close(continued, model(ids[rows])[:, 12:], rtol=0, atol=1e-4)


def test_kv_cache_bytes_stop_growing_at_the_window():
    mistral = dict(n_layers=32, n_kv_heads=8, head_dim=128, dtype=torch.bfloat16)  # Mistral 7B v0.1's config
    per_token = kv_cache_bytes(**mistral, n_tokens=1)
    assert per_token == 131072
    assert kv_cache_bytes(**mistral, n_tokens=1000, window=4096) == 1000 * per_token
    for context in (4096, 8192, 32768):
        assert kv_cache_bytes(**mistral, n_tokens=context, window=4096) == 4096 * per_token == 512 * 2 ** 20
    assert kv_cache_bytes(**mistral, n_tokens=32768) == 4 * 2 ** 30
    assert kv_cache_bytes(**mistral, n_tokens=32768, window=4096, sinks=4) == 4100 * per_token
    with pytest.raises(ValueError, match="sinks=4 needs a window"):
        kv_cache_bytes(**mistral, n_tokens=10, sinks=4)
    model = _model(5, 2, n_kv_heads=1)
    cache = model.new_cache()
    with torch.no_grad():
        model(random_ids(2, 30), cache=cache)
    held = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert held == kv_cache_bytes(2, 1, 8, 30, batch_size=2, window=5, sinks=2)


def _hf(family, seed=0, **settings):
    model_class, config_class = {"mistral": (transformers.MistralForCausalLM, transformers.MistralConfig),
                                 "qwen3": (transformers.Qwen3ForCausalLM, transformers.Qwen3Config)}[family]
    return small_model(model_class, config_class, seed, **{"intermediate_size": 88, "num_key_value_heads": 2,
                                                           "max_position_embeddings": 64, "sliding_window": 6,
                                                           **settings})


WINDOWED = {
    "mistral-gqa-w6": lambda: _hf("mistral"),
    "mistral-mqa-w3": lambda: _hf("mistral", seed=1, hidden_size=48, num_attention_heads=6, num_key_value_heads=1,
                                  sliding_window=3, rope_parameters={"rope_type": "default", "rope_theta": 5e5}),
    "mistral-mha-w11-tied": lambda: _hf("mistral", seed=2, num_key_value_heads=4, sliding_window=11,
                                        tie_word_embeddings=True),
    "qwen3-w5": lambda: _hf("qwen3", head_dim=8, use_sliding_window=True, max_window_layers=0, sliding_window=5),
}


@pytest.mark.parametrize("name", list(WINDOWED))
@pytest.mark.parametrize("rope_pairing", ["rotate_half", "interleaved"])
@pytest.mark.parametrize("store_alphas", [False, True], ids=["fused", "teaching"])
def test_logits_equal_theirs_on_streams_longer_than_the_window(name, rope_pairing, store_alphas):
    hf = WINDOWED[name]()
    ours = from_transformers(hf, rope_pairing=rope_pairing, store_alphas=store_alphas)
    assert ours.config.sliding_window == hf.config.sliding_window and ours.config.attention_sinks == 0
    ids = random_ids(3, 40)
    with torch.no_grad():
        theirs, mine = hf(ids).logits, ours(ids)
        unwindowed = ours.config.replace(sliding_window=None).build().eval()
        unwindowed.load_state_dict(ours.state_dict())
        assert (unwindowed(ids) - theirs).abs().max() > 1e-2  # their window changes their logits
    assert theirs.abs().max() > 0.1  # not a vacuous comparison
    torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-4)


@pytest.mark.parametrize("name", list(WINDOWED))
def test_greedy_generations_past_the_window_equal_theirs_with_and_without_the_cache(name, writes_as_transformers_does):
    hf = WINDOWED[name]()
    writes_as_transformers_does(hf, from_transformers(hf), VOCAB, prompt_length=8)  # 38 tokens, window 6


def test_windows_on_some_layers_only_are_refused():
    with pytest.raises(ValueError, match="cannot convert max_window_layers=1: the course's sliding window covers"):
        from_transformers(_hf("qwen3", head_dim=8, use_sliding_window=True, max_window_layers=1))
    qwen3 = from_transformers(_hf("qwen3", head_dim=8))  # use_sliding_window off: no window
    assert qwen3.config.sliding_window is None
    mistral = _hf("mistral", sliding_window=None)
    assert from_transformers(mistral).config.sliding_window is None


def test_sinks_refuse_a_left_padded_row_whose_sinks_would_be_padding():
    model = _model(4, sinks=2, pad_id=0)
    alone = random_ids(1, 7, seed=4, vocab=VOCAB - 1) + 1  # no padding id
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), alone], dim=1)  # (1, 10)
    batch = torch.cat([random_ids(1, 10, seed=5, vocab=VOCAB - 1) + 1, padded])  # (2, 10): row 1 left-padded
    for run in (lambda: model(batch), lambda: generate(model, batch, 4, temperature=0, pad_id=0),
                lambda: generate(model, batch, 4, temperature=0, pad_id=0, use_cache=False)):
        with pytest.raises(ValueError, match=r"attention_sinks=2 keep each stream's first 2 tokens, but row 1 starts "
                                             r"with padding \(pad_id=0\)"):
            run()
    right_padded = torch.cat([alone, torch.zeros(1, 3, dtype=torch.long)], dim=1)  # padding after the sinks: allowed
    with torch.no_grad():
        torch.testing.assert_close(model(right_padded)[:, :7], model(alone), rtol=0, atol=1e-4)
