"""Multi-head latent attention (chapter 17): keys and values rebuilt from a cached latent; a
transformers DeepSeek-V3 with dense layers (random weights from a config, nothing downloaded) loaded
into the course's model gives its logits to 1e-4 and its greedy tokens with and without the cache."""
import pytest
import torch

from small_transformers import VOCAB, small_model
from stepbystep.models import DecoderConfig, LatentAttention, RotaryEmbedding, from_transformers

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


def _latent(q_latent_dim=None):
    torch.manual_seed(0)
    attention = LatentAttention(4, 24, kv_latent_dim=10, rope_head_dim=4, nope_head_dim=6, v_head_dim=5,
                                q_latent_dim=q_latent_dim, store_alphas=True)
    attention.set_rotary(RotaryEmbedding(4, max_len=32))
    return attention.eval()


@pytest.mark.parametrize("q_latent_dim", [None, 7])
def test_the_heads_keys_and_values_are_rebuilt_from_the_latent_by_the_formula(q_latent_dim):
    attention = _latent(q_latent_dim)
    x = torch.randn(2, 9, 24)
    with torch.no_grad():
        out = attention(x)
        latent, k_rope = attention.latents(x, None)  # (2, 1, 9, 10), (2, 1, 9, 4)
        assert latent.shape == (2, 1, 9, 10) and k_rope.shape == (2, 1, 9, 4)
        k, v = attention.keys_values(latent, k_rope)  # (2, 4, 9, 10), (2, 4, 9, 5)
        up = attention.kv_up.weight.view(4, 6 + 5, 10)  # per head: (nope + v, latent)
        head = 2
        k_nope = latent[:, 0] @ up[head, :6].T  # (2, 9, 6)
        torch.testing.assert_close(k[:, head], torch.cat([k_nope, k_rope[:, 0]], dim=-1))
        torch.testing.assert_close(v[:, head], latent[:, 0] @ up[head, 6:].T)
        q = attention.queries(x, None)  # (2, 4, 9, 10)
        scores = q @ k.transpose(-2, -1) / (6 + 4) ** 0.5  # (2, 4, 9, 9)
        causal = torch.ones(9, 9, dtype=torch.bool).tril()
        weights = scores.masked_fill(~causal, float("-inf")).softmax(-1)  # (2, 4, 9, 9)
        expected = attention.linear_out((weights @ v).transpose(1, 2).flatten(2))  # (2, 9, 24)
        torch.testing.assert_close(attention(x, mask=causal.unsqueeze(0)), expected)
    assert out.shape == (2, 9, 24)


def test_the_cache_keeps_only_the_latent_and_the_shared_rotated_key():
    model = DecoderConfig.llama(VOCAB, d_model=32, n_heads=4, n_layers=2, max_len=40, n_kv_heads=None,
                                kv_latent_dim=12, rope_head_dim=4).build().eval()
    ids = torch.randint(0, VOCAB, (3, 11), generator=torch.Generator().manual_seed(0))
    cache = model.new_cache()
    with torch.no_grad():
        step_by_step = torch.cat([model(ids[:, i:i + 1], cache=cache) for i in range(11)], dim=1)  # (3, 11, V)
        torch.testing.assert_close(step_by_step, model(ids), rtol=0, atol=1e-5)
    for layer in cache.layers:
        assert layer.keys.shape == (3, 1, 11, 12) and layer.values.shape == (3, 1, 11, 4)


def test_latent_settings_are_checked_at_the_model():
    with pytest.raises(ValueError, match="latent attention \\(kv_latent_dim=8\\) needs position_scheme 'rope'"):
        DecoderConfig(VOCAB, d_model=16, n_heads=2, kv_latent_dim=8).build()
    with pytest.raises(ValueError, match="n_kv_heads and qk_norm must be left unset, got n_kv_heads=1"):
        DecoderConfig.llama(VOCAB, d_model=16, n_heads=2, n_kv_heads=1, kv_latent_dim=8).build()
    with pytest.raises(ValueError, match="rope_head_dim must be even"):
        DecoderConfig.llama(VOCAB, d_model=16, n_heads=2, n_kv_heads=None, kv_latent_dim=8, rope_head_dim=3).build()
    with pytest.raises(ValueError, match="key and bias must be None"):
        _latent()(torch.randn(1, 3, 24), key=torch.randn(1, 3, 24))


def deepseek(seed=0, **settings):
    return small_model(transformers.DeepseekV3ForCausalLM, transformers.DeepseekV3Config, seed,
                       **{"intermediate_size": 72, "num_key_value_heads": 4, "kv_lora_rank": 12, "q_lora_rank": None,
                          "qk_rope_head_dim": 4, "qk_nope_head_dim": 6, "v_head_dim": 5, "first_k_dense_replace": 2,
                          **settings})


DEEPSEEK = {
    "direct-queries": lambda: deepseek(),
    "query-latent-halves-6-heads": lambda: deepseek(seed=1, hidden_size=48, num_attention_heads=6, num_key_value_heads=6,
                                                    q_lora_rank=16, kv_lora_rank=20, qk_rope_head_dim=6,
                                                    qk_nope_head_dim=4, v_head_dim=8, rope_interleave=False,
                                                    num_hidden_layers=3, first_k_dense_replace=3,
                                                    rope_parameters={"rope_type": "default", "rope_theta": 5e5}),
}


@pytest.mark.parametrize("name", list(DEEPSEEK))
@pytest.mark.parametrize("rope_pairing", ["rotate_half", "interleaved"])
@pytest.mark.parametrize("store_alphas", [False, True], ids=["fused", "teaching"])
def test_deepseek_v3_logits_equal_theirs(name, rope_pairing, store_alphas, gives_transformers_logits):
    hf = DEEPSEEK[name]()
    ours = from_transformers(hf, rope_pairing=rope_pairing, store_alphas=store_alphas)
    assert ours.config.kv_latent_dim == hf.config.kv_lora_rank
    ids = torch.randint(0, VOCAB, (3, 40), generator=torch.Generator().manual_seed(1))
    gives_transformers_logits(hf, ours, ids)


@pytest.mark.parametrize("name", list(DEEPSEEK))
def test_deepseek_v3_greedy_generations_equal_theirs_with_and_without_the_cache(name, writes_as_transformers_does):
    hf = DEEPSEEK[name]()
    writes_as_transformers_does(hf, from_transformers(hf), VOCAB)


def test_deepseek_v3_settings_the_course_lacks_are_refused():
    with pytest.raises(ValueError, match="cannot convert first_k_dense_replace=1: the course's latent-attention "
                                         "model is dense"):
        from_transformers(deepseek(first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
                                   moe_intermediate_size=16, n_group=1, topk_group=1))
    with pytest.raises(ValueError, match="cannot convert rope_type='yarn'"):
        from_transformers(deepseek(rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0,
                                                     "original_max_position_embeddings": 12}))
    with pytest.raises(ValueError, match="cannot convert attention_bias=True"):
        from_transformers(deepseek(attention_bias=True))


def test_latent_sizes_without_a_latent_are_refused():
    with pytest.raises(ValueError, match="q_latent_dim=4, v_head_dim=3 only apply to latent attention: set "
                                         "kv_latent_dim too"):
        DecoderConfig.llama(VOCAB, d_model=16, n_heads=2, q_latent_dim=4, v_head_dim=3).build()


def test_latent_cache_bytes_count_the_latent_and_the_rotated_key_per_layer_and_token():
    from stepbystep.models import kv_cache_bytes, latent_cache_bytes

    assert latent_cache_bytes(61, 512, 64, 1, dtype=torch.bfloat16) == 70_272  # DeepSeek-V3, per token
    assert latent_cache_bytes(2, 12, 4, 11, batch_size=3) == 2 * 16 * 11 * 3 * 4
    # the same layers with a key and a value per head: 128 heads of 192 and 128 numbers
    per_head = kv_cache_bytes(61, 128, 160, 1, dtype=torch.bfloat16)  # (192 + 128) / 2 = 160 on average
    assert per_head == 61 * 128 * (192 + 128) * 2 and per_head / 70_272 > 50
    model = DecoderConfig.llama(VOCAB, d_model=32, n_heads=4, n_layers=2, max_len=40, n_kv_heads=None,
                                kv_latent_dim=12, rope_head_dim=4).build()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.zeros(3, 11, dtype=torch.long), cache=cache)
    held = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert held == latent_cache_bytes(2, 12, 4, 11, batch_size=3)
    with pytest.raises(ValueError, match="kv_latent_dim"):
        latent_cache_bytes(2, 0, 4, 1)


def test_a_standalone_cached_run_past_the_rotary_table_is_refused_clearly():
    from stepbystep.models import KVCache

    attention = _latent()  # its rotary table holds 32 positions
    cache = KVCache(1).layers[0]
    with torch.no_grad():
        attention(torch.randn(1, 30, 24), cache=cache)
        attention(torch.randn(1, 2, 24), cache=cache)  # positions 30 and 31: the last two rows
        with pytest.raises(ValueError, match="the cache holds 32 tokens and 1 more would pass the rotary table's "
                                             "max_len=32 positions"):
            attention(torch.randn(1, 1, 24), cache=cache)
