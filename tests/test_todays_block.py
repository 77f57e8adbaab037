"""Chapter 12's pieces: RMSNorm, SwiGLU and Llama's width rule, grouped-query attention on both
paths and in the cache, the rotate_half pairing, the decoder's options and DecoderConfig,
kv_cache_bytes against the cache's real tensors, and every error."""
import pytest
import torch
from torch import nn

from stepbystep.models import (
    DecoderConfig,
    DecoderOnlyTransformer,
    NarrowMultiHeadAttention,
    RMSNorm,
    RotaryEmbedding,
    SwiGLU,
    generate,
    interleave_permutation,
    kv_cache_bytes,
    llama_hidden_size,
    make_feed_forward,
    make_norm,
    subsequent_mask,
)


# ----------------------------------------------------------------------------- RMSNorm
def test_rms_norm_equals_torch_rms_norm_with_the_same_weight():
    torch.manual_seed(0)
    ours, theirs = RMSNorm(16, eps=1e-6), nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ours.weight.normal_()
        theirs.weight.copy_(ours.weight)
    x = torch.randn(3, 5, 16) * 4 + 1
    torch.testing.assert_close(ours(x), theirs(x), rtol=1e-6, atol=1e-6)


def test_rms_norm_gives_unit_root_mean_square_and_keeps_the_mean():
    x = torch.tensor([[3.0, 4.0, 0.0, 5.0]]) + 10
    y = RMSNorm(4, eps=1e-12)(x)
    assert y.pow(2).mean().item() == pytest.approx(1.0, abs=1e-6)
    assert y.mean().item() > 0.9  # not centred, unlike LayerNorm
    assert y.dtype == x.dtype


def test_rms_norm_keeps_a_half_precision_input_in_its_dtype():
    y = RMSNorm(8)(torch.randn(2, 8).to(torch.bfloat16))
    assert y.dtype == torch.float32  # float32 weight times the bf16 result promotes, as Llama's does
    assert RMSNorm(8).to(torch.bfloat16)(torch.randn(2, 8).to(torch.bfloat16)).dtype == torch.bfloat16


def test_make_norm_chooses_and_refuses():
    assert isinstance(make_norm("rmsnorm", 8), RMSNorm)
    layer_norm = make_norm("layernorm", 8, eps=1e-6, bias=False)
    assert isinstance(layer_norm, nn.LayerNorm) and layer_norm.bias is None and layer_norm.eps == 1e-6
    with pytest.raises(ValueError, match="norm must be one of 'layernorm', 'rmsnorm', got 'batchnorm'"):
        make_norm("batchnorm", 8)
    with pytest.raises(ValueError, match="eps must be"):
        RMSNorm(8, eps=-1.0)
    with pytest.raises(TypeError, match="d_model must be"):
        RMSNorm(8.0)


# ----------------------------------------------------------------------------- SwiGLU
def test_llama_hidden_size_matches_the_released_models():
    assert llama_hidden_size(4096) == 11008  # Llama 2 7B
    assert llama_hidden_size(4096, multiple_of=1024, ffn_dim_multiplier=1.3) == 14336  # Llama 3 8B
    assert llama_hidden_size(8192, multiple_of=4096, ffn_dim_multiplier=1.3) == 28672  # Llama 3 70B
    assert llama_hidden_size(48, multiple_of=1) == 128
    with pytest.raises(ValueError, match="ffn_dim_multiplier must be"):
        llama_hidden_size(64, ffn_dim_multiplier=0)


def test_swiglu_computes_down_of_silu_gate_times_up():
    torch.manual_seed(0)
    ffn = SwiGLU(6, 10)
    x = torch.randn(2, 3, 6)
    gate, up = x @ ffn.gate.weight.t(), x @ ffn.up.weight.t()
    expected = (gate * torch.sigmoid(gate) * up) @ ffn.down.weight.t()
    torch.testing.assert_close(ffn(x), expected)
    assert ffn.gate.bias is None and SwiGLU(6, 10, bias=True).down.bias is not None


def test_swiglu_at_two_thirds_the_width_has_the_parameters_of_a_four_times_network():
    d = 48
    relu = make_feed_forward("relu", d, 4 * d, bias=False)
    swiglu = make_feed_forward("swiglu", d, 8 * d // 3, bias=False)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(relu) == count(swiglu) == 8 * d * d


def test_make_feed_forward_activations_and_errors():
    assert isinstance(make_feed_forward("gelu_tanh", 4, 8)[1], nn.GELU)
    assert make_feed_forward("gelu_tanh", 4, 8)[1].approximate == "tanh"
    assert make_feed_forward("gelu", 4, 8)[1].approximate == "none"
    with pytest.raises(ValueError, match="mlp must be one of"):
        make_feed_forward("tanh", 4, 8)
    with pytest.raises(TypeError, match="bias must be True or False"):
        SwiGLU(4, 8, bias=1)


# ----------------------------------------------------------------------------- grouped-query attention
def _gqa(n_kv_heads, store_alphas, seed=0, rotary=None):
    torch.manual_seed(seed)
    return NarrowMultiHeadAttention(4, 16, dropout=0.0, store_alphas=store_alphas, rotary=rotary,
                                    n_kv_heads=n_kv_heads).eval()


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_grouped_query_teaching_path_equals_the_fused_path(n_kv_heads):
    rotary = RotaryEmbedding(4, max_len=16)
    teach, fused = _gqa(n_kv_heads, True, rotary=rotary), _gqa(n_kv_heads, False, rotary=rotary)
    x = torch.randn(2, 7, 16)
    mask = subsequent_mask(7)
    out = teach(x, mask=mask, key=x)
    torch.testing.assert_close(out, fused(x, mask=mask, key=x), rtol=1e-5, atol=1e-6)
    assert teach.alphas.shape == (2, 4, 7, 7)


@pytest.mark.parametrize("n_kv_heads", [2, 1])
def test_grouped_query_equals_multi_head_attention_with_each_key_head_repeated(n_kv_heads):
    gqa = _gqa(n_kv_heads, True)
    mha = _gqa(None, True, seed=1)
    groups = 4 // n_kv_heads
    with torch.no_grad():
        mha.linear_query.load_state_dict(gqa.linear_query.state_dict())
        mha.linear_out.load_state_dict(gqa.linear_out.state_dict())
        for full, shared in ((mha.linear_key, gqa.linear_key), (mha.linear_value, gqa.linear_value)):
            weight = shared.weight.view(n_kv_heads, 1, 4, 16).expand(n_kv_heads, groups, 4, 16)
            full.weight.copy_(weight.reshape(16, 16))
            full.bias.copy_(shared.bias.view(n_kv_heads, 1, 4).expand(n_kv_heads, groups, 4).reshape(16))
    x = torch.randn(3, 5, 16)
    torch.testing.assert_close(gqa(x, key=x), mha(x, key=x), rtol=1e-5, atol=1e-6)


def test_n_kv_heads_equal_to_n_heads_is_todays_attention_exactly():
    torch.manual_seed(0)
    old = NarrowMultiHeadAttention(4, 16, dropout=0.0)
    torch.manual_seed(0)
    new = NarrowMultiHeadAttention(4, 16, dropout=0.0, n_kv_heads=4)
    for (name, a), (_, b) in zip(old.state_dict().items(), new.state_dict().items()):
        assert torch.equal(a, b), name
    x = torch.randn(2, 5, 16)
    assert torch.equal(old(x, key=x), new(x, key=x))
    assert new.groups == 1 and "n_kv_heads" not in repr(new)


def test_grouped_query_keys_are_projected_once_per_key_head():
    gqa = _gqa(2, True)
    x = torch.randn(2, 5, 16)
    keys, values = gqa.project_keys(x)
    assert keys.shape == values.shape == (2, 2, 5, 4)  # the book's two steps on them: test_book_attention.py
    torch.testing.assert_close(gqa(x), gqa(x, key=x))
    assert gqa.alphas.shape == (2, 4, 5, 5)


@pytest.mark.parametrize("store_alphas", [True, False])
def test_grouped_query_cached_equals_uncached_and_the_cache_holds_only_the_key_heads(store_alphas):
    torch.manual_seed(0)
    model = DecoderConfig.llama(50, d_model=32, n_heads=4, n_layers=2, max_len=32, n_kv_heads=2,
                                store_alphas=store_alphas).build().eval()
    ids = torch.randint(0, 50, (2, 12))
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache()
        steps = [model(ids[:, :5], cache=cache)] + [model(ids[:, t:t + 1], cache=cache) for t in range(5, 12)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)
    assert [tuple(layer.keys.shape) for layer in cache.layers] == [(2, 2, 12, 8)] * 2
    assert torch.equal(generate(model, ids[:, :4], 8, temperature=0),
                       generate(model, ids[:, :4], 8, temperature=0, use_cache=False))


def test_grouped_query_errors():
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads .* got n_heads=4 and n_kv_heads=3"):
        NarrowMultiHeadAttention(4, 16, n_kv_heads=3)
    with pytest.raises(ValueError, match="n_kv_heads must be"):
        NarrowMultiHeadAttention(4, 16, n_kv_heads=0)
    with pytest.raises(TypeError, match="bias must be True or False"):
        NarrowMultiHeadAttention(4, 16, bias="no")
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads"):
        DecoderOnlyTransformer(20, d_model=16, n_heads=4, n_kv_heads=3)


def test_no_bias_attention_has_no_bias_parameters():
    attention = NarrowMultiHeadAttention(4, 16, bias=False, n_kv_heads=1)
    assert all(linear.bias is None for linear in (attention.linear_query, attention.linear_key,
                                                  attention.linear_value, attention.linear_out))
    assert attention.linear_key.weight.shape == (4, 16)


# ----------------------------------------------------------------------------- the rotate_half pairing
def test_rotate_half_is_interleaved_rotary_on_permuted_dimensions():
    half = RotaryEmbedding(8, max_len=10, pairing="rotate_half")
    interleaved = RotaryEmbedding(8, max_len=10)
    order = interleave_permutation(8)
    assert order.tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    x = torch.randn(2, 3, 10, 8)
    torch.testing.assert_close(half(x)[..., order], interleaved(x[..., order]))
    q, k = torch.randn(10, 8), torch.randn(10, 8)
    torch.testing.assert_close(half(q) @ half(k).t(), interleaved(q[:, order]) @ interleaved(k[:, order]).t())
    assert "rotate_half" in repr(half) and "pairing" not in repr(interleaved)
    with pytest.raises(ValueError, match="pairing must be one of 'interleaved', 'rotate_half', got 'halves'"):
        RotaryEmbedding(8, pairing="halves")


# ----------------------------------------------------------------------------- the decoder's options
def test_default_options_build_the_same_seeded_model_as_before():
    torch.manual_seed(0)
    old = DecoderOnlyTransformer(30, d_model=16, n_heads=2, ff_units=32, n_layers=2, dropout=0.0)
    torch.manual_seed(0)
    new = DecoderConfig(30, d_model=16, n_heads=2, ff_units=32, n_layers=2, dropout=0.0).build()
    assert old.state_dict().keys() == new.state_dict().keys()
    assert all(torch.equal(a, b) for a, b in zip(old.state_dict().values(), new.state_dict().values()))


def test_llama_options_build_todays_block():
    model = DecoderConfig.llama(40, d_model=32, n_heads=4, n_layers=1, max_len=16, n_kv_heads=1).build()
    layer = model.layers[0]
    assert isinstance(layer.ffn, SwiGLU) and layer.ffn.hidden == llama_hidden_size(32)
    assert isinstance(layer.sublayers[0].norm, RMSNorm) and isinstance(model.norm, RMSNorm)
    assert layer.self_attn_heads.n_kv_heads == 1 and model.rotary.pairing == "rotate_half"
    assert not any(name.endswith("bias") for name, _ in model.named_parameters())
    assert model.head.weight is not model.embed.weight
    assert model(torch.randint(0, 40, (2, 6))).shape == (2, 6, 40)


def test_gpt2_options_build_gpt2s_block():
    model = DecoderConfig.gpt2(40, d_model=32, n_heads=4, n_layers=1, max_len=16).build()
    assert model.head.bias is None and model.head.weight is model.embed.weight
    assert model.layers[0].ffn[1].approximate == "tanh" and model.layers[0].ffn[0].out_features == 128
    assert model.pe.weight.shape == (16, 32) and model.pad_id is None


def test_decoder_option_errors():
    for name, value in (("norm", "batchnorm"), ("mlp", "tanh"), ("rope_pairing", "halves")):
        with pytest.raises(ValueError, match=f"{name} must be one of"):
            DecoderOnlyTransformer(20, **{name: value})
    with pytest.raises(TypeError, match="head_bias must be True or False"):
        DecoderOnlyTransformer(20, head_bias=None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_kv'"):
        DecoderConfig(20, n_kv=2)


# ----------------------------------------------------------------------------- kv_cache_bytes
def test_kv_cache_bytes_of_published_configurations():
    assert kv_cache_bytes(32, 8, 128, 1, dtype=torch.bfloat16) == 128 * 1024  # Llama 3 8B
    assert kv_cache_bytes(32, 8, 128, 8192, dtype=torch.bfloat16) == 2 ** 30
    assert kv_cache_bytes(12, 12, 64, 1024, dtype=torch.float16) == 36 * 2 ** 20  # GPT-2 small
    assert kv_cache_bytes(2, 2, 8, 0) == 0


@pytest.mark.parametrize("n_kv_heads, dtype", [(4, torch.float32), (2, torch.float32), (1, torch.bfloat16)])
def test_kv_cache_bytes_equals_the_cache_s_real_tensors(n_kv_heads, dtype):
    torch.manual_seed(0)
    model = DecoderConfig.llama(50, d_model=32, n_heads=4, n_layers=3, max_len=32,
                                n_kv_heads=n_kv_heads).build().to(dtype).eval()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.randint(0, 50, (2, 9)), cache=cache)
        model(torch.randint(0, 50, (2, 1)), cache=cache)
    held = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert held == kv_cache_bytes(3, n_kv_heads, 8, 10, batch_size=2, dtype=dtype)


def test_kv_cache_bytes_errors():
    with pytest.raises(ValueError, match="n_layers must be"):
        kv_cache_bytes(0, 8, 128, 10)
    with pytest.raises(TypeError, match="head_dim must be"):
        kv_cache_bytes(2, 8, 128.0, 10)
    with pytest.raises(ValueError, match="n_tokens must be"):
        kv_cache_bytes(2, 8, 128, -1)
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        kv_cache_bytes(2, 8, 128, 10, dtype="bf16")


# ----------------------------------------------------------------------------- the code before chapter 12
# Outputs of seeded models computed with the package as it was before chapter 12's options (commit
# fcd6d13): with the default options the new code must give them still.
_GOLDEN_DECODERS = {
    "sinusoidal": ([1.74994, 7.20595, 12.15594, -4.13879], 137.8114),
    "learned": ([0.96224, 4.27487, 12.98478, -4.59618], 73.0157),
    "rope": ([1.48591, 6.28324, 12.81818, -6.41078], 71.7691),
    "alibi": ([1.12177, 6.12033, 12.92583, -7.3175], 70.3531),
}


@pytest.mark.parametrize("scheme", list(_GOLDEN_DECODERS))
def test_seeded_decoders_give_the_outputs_of_the_code_before_chapter_12(scheme):
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(12, d_model=16, n_heads=4, ff_units=32, n_layers=2, dropout=0.0, max_len=8,
                                   position_scheme=scheme).eval()
    with torch.no_grad():
        out = model(torch.tensor([[1, 5, 9, 3, 7, 2], [1, 4, 4, 8, 0, 0]]))
    last_row, total = _GOLDEN_DECODERS[scheme]
    torch.testing.assert_close(out[0, -1, :4], torch.tensor(last_row), rtol=0, atol=1e-4)
    assert out.sum().item() == pytest.approx(total, abs=1e-2)


@pytest.mark.parametrize("store_alphas", [True, False])
def test_seeded_attention_gives_the_outputs_of_the_code_before_chapter_12(store_alphas):
    torch.manual_seed(0)
    attention = NarrowMultiHeadAttention(4, 16, dropout=0.0, store_alphas=store_alphas)
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        out = attention(x, key=x)
    torch.testing.assert_close(out[1, -1, :4], torch.tensor([0.41813, -0.19612, 0.22626, -0.48963]), rtol=0, atol=1e-4)
