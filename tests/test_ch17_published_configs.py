"""Chapter 17's table: the published configurations' caches, each from its config's fields."""
import pytest
import torch

from stepbystep.models import (PUBLISHED_CACHES, PUBLISHED_CONFIGS, kv_cache_bytes, latent_cache_bytes,
                               published_attention, published_cache_bytes)


def test_deepseek_v3_caches_the_latent_and_the_rotated_key():
    assert published_cache_bytes("DeepSeek-V3", 1) == 61 * (512 + 64) * 2 == 70_272
    assert published_attention("DeepSeek-V3")["kind"] == "latent"
    assert published_cache_bytes("DeepSeek-V3", 1000, dtype=torch.float32) == latent_cache_bytes(61, 512, 64, 1000)


def test_mistral_7b_caches_128_kib_per_token_up_to_its_window_then_stops():
    assert published_cache_bytes("Mistral 7B v0.1", 1) == 128 * 1024
    assert published_cache_bytes("Mistral 7B v0.1", 4096) == published_cache_bytes("Mistral 7B v0.1", 32768) == 2 ** 29
    assert published_cache_bytes("Mistral 7B v0.1", 4097) == 2 ** 29


def test_gemma_3_4b_windows_29_of_its_34_layers():
    a = published_attention("Gemma 3 4B")
    assert (a["n_layers"], a["full_layers"], a["window"]) == (34, 5, 1024)
    per_layer_token = 2 * 4 * 256 * 2  # keys and values, 4 KV heads of 256, bfloat16
    assert published_cache_bytes("Gemma 3 4B", 1) == 34 * per_layer_token == 139_264
    assert published_cache_bytes("Gemma 3 4B", 131072) == per_layer_token * (5 * 131072 + 29 * 1024)
    assert published_cache_bytes("Gemma 3 4B", 131072) < kv_cache_bytes(34, 4, 256, 131072, dtype=torch.bfloat16) / 6


def test_qwen3_8b_and_llama_3_8b_and_mixtral():
    assert published_cache_bytes("Qwen3 8B", 1) == 2 * 36 * 8 * 128 * 2 == 144 * 1024
    assert published_attention("Qwen3 8B")["kind"] == "grouped-query"
    llama = PUBLISHED_CACHES["Llama 3 8B"]
    assert published_cache_bytes("Llama 3 8B", 8192) == kv_cache_bytes(
        llama["n_layers"], llama["n_kv_heads"], llama["head_dim"], 8192, dtype=torch.bfloat16) == 2 ** 30
    assert published_cache_bytes("Mixtral 8x7B", 1) == 128 * 1024  # the experts change nothing in the cache
    assert published_cache_bytes("Mixtral 8x7B", 10, batch_size=3, dtype=torch.float32) == kv_cache_bytes(
        32, 8, 128, 10, batch_size=3)


def test_every_published_configuration_has_a_kind_and_a_context():
    for name in PUBLISHED_CONFIGS:
        a = published_attention(name)
        assert a["kind"] in ("latent", "grouped-query", "multi-query", "multi-head") and a["context"] > 0
        assert published_cache_bytes(name, 0) == 0


def test_unknown_names_and_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="name must be one of"):
        published_attention("GPT-5")
    with pytest.raises(ValueError, match="n_tokens"):
        published_cache_bytes("Qwen3 8B", -1)
    with pytest.raises(TypeError, match="dtype"):
        published_cache_bytes("Qwen3 8B", 1, dtype="bf16")
