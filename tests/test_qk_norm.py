"""QK-norm (chapter 17): an RMSNorm on the queries and keys, over each head (Qwen3) or over all the
heads at once (OLMo 2), before the rotation; and a transformers Qwen3 or OLMo 2 (random weights from a
config, nothing downloaded) loaded into the course's model gives its logits to 1e-4 and its greedy tokens."""
import pytest
import torch
import torch.nn.functional as F

from small_transformers import VOCAB, random_ids, small_model
from stepbystep.models import DecoderConfig, NarrowMultiHeadAttention, from_transformers

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


def _attention(qk_norm, bias=True):
    torch.manual_seed(0)
    attention = NarrowMultiHeadAttention(4, 16, dropout=0.0, store_alphas=True, n_kv_heads=2, bias=bias,
                                         qk_norm=qk_norm, norm_eps=1e-6).eval()
    with torch.no_grad():
        for norm in (attention.q_norm, attention.k_norm):
            if norm is not None:
                norm.weight.uniform_(0.5, 1.5)
    return attention


def _by_hand(attention, x):
    """The scores' softmax written out: (N, h, L, L) weights with QK-norm as the module names it."""
    def rms(v, weight):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6) * weight

    q, k = attention.linear_query(x), attention.linear_key(x)  # (N, L, h · d_k), (N, L, h_kv · d_k)
    if attention.qk_norm == "all":
        q, k = rms(q, attention.q_norm.weight), rms(k, attention.k_norm.weight)
    q, k = attention.make_chunks(q), attention.make_chunks(k)  # (N, h, L, d_k), (N, h_kv, L, d_k)
    if attention.qk_norm == "head":
        q, k = rms(q, attention.q_norm.weight), rms(k, attention.k_norm.weight)
    k = k.repeat_interleave(attention.groups, dim=1)  # (N, h, L, d_k)
    return F.softmax(q @ k.transpose(-2, -1) / attention.d_k ** 0.5, dim=-1)  # (N, h, L, L)


@pytest.mark.parametrize("qk_norm, sizes", [("head", (4, 4)), ("all", (16, 8))])
def test_qk_norm_normalises_each_head_or_all_heads_before_the_scores(qk_norm, sizes):
    attention = _attention(qk_norm)
    assert (attention.q_norm.weight.numel(), attention.k_norm.weight.numel()) == sizes
    x = torch.randn(2, 5, 16) * 30  # large inputs: without the norm, the softmax would saturate
    with torch.no_grad():
        attention(x)
        torch.testing.assert_close(attention.alphas, _by_hand(attention, x), rtol=0, atol=1e-6)
    assert "qk_norm='%s'" % qk_norm in repr(attention)


def test_with_qk_norm_the_weights_do_not_change_with_the_queries_and_keys_scale():
    x = torch.randn(1, 6, 16)  # without biases, 1000 x gives 1000 times the queries and keys
    with torch.no_grad():
        for qk_norm in ("head", "all"):
            attention = _attention(qk_norm, bias=False)
            attention(x)
            small = attention.alphas.clone()
            attention(1000 * x)
            torch.testing.assert_close(attention.alphas, small, rtol=0, atol=1e-4)  # RMSNorm: scale-free but for eps
        plain = _attention(None, bias=False)
        plain(x)
        small = plain.alphas.clone()
        plain(1000 * x)
        assert (plain.alphas - small).abs().max() > 0.1  # without it, the weights change with the scale


def test_a_wrong_qk_norm_is_refused_at_the_model_and_at_the_attention():
    with pytest.raises(ValueError, match="qk_norm must be one of 'head', 'all', got 'heads'"):
        DecoderConfig(10, d_model=8, n_heads=2, qk_norm="heads").build()
    with pytest.raises(ValueError, match="qk_norm must be one of 'head', 'all', got True"):
        NarrowMultiHeadAttention(2, 8, qk_norm=True)


def qwen3(seed=0, **settings):
    return small_model(transformers.Qwen3ForCausalLM, transformers.Qwen3Config, seed,
                       **{"intermediate_size": 88, "num_key_value_heads": 2, "head_dim": 8, **settings})


def olmo2(seed=0, **settings):
    return small_model(transformers.Olmo2ForCausalLM, transformers.Olmo2Config, seed,
                       **{"intermediate_size": 88, "num_key_value_heads": 2, **settings})


QK_NORMED = {
    "qwen3-gqa": lambda: qwen3(),
    "qwen3-mqa-tied": lambda: qwen3(hidden_size=48, num_attention_heads=6, num_key_value_heads=1, head_dim=8,
                                    tie_word_embeddings=True,
                                    rope_parameters={"rope_type": "default", "rope_theta": 5e5}),
    "olmo2-gqa": lambda: olmo2(),
    "olmo2-mha": lambda: olmo2(seed=1, num_key_value_heads=4, rms_norm_eps=1e-6),
}
SETTINGS = {"qwen3": dict(qk_norm="head", norm_first=True, norm_output=False),
            "olmo2": dict(qk_norm="all", norm_first=False, norm_output=True)}


@pytest.mark.parametrize("name", list(QK_NORMED))
@pytest.mark.parametrize("rope_pairing", ["rotate_half", "interleaved"])
@pytest.mark.parametrize("store_alphas", [False, True], ids=["fused", "teaching"])
def test_logits_equal_theirs(name, rope_pairing, store_alphas, gives_transformers_logits):
    hf = QK_NORMED[name]()
    ours = from_transformers(hf, rope_pairing=rope_pairing, store_alphas=store_alphas)
    c = ours.config
    assert dict(qk_norm=c.qk_norm, norm_first=c.norm_first, norm_output=c.norm_output) == SETTINGS[name[:5]]
    ids = random_ids(3, 40)
    gives_transformers_logits(hf, ours, ids)


@pytest.mark.parametrize("build", [qwen3, olmo2], ids=["qwen3", "olmo2"])
def test_without_its_qk_norm_the_model_is_another_function(build):
    hf = build()
    ours = from_transformers(hf)
    plain = ours.config.replace(qk_norm=None).build()
    plain.load_state_dict({k: v for k, v in ours.state_dict().items() if "q_norm" not in k and "k_norm" not in k})
    ids = random_ids(2, 20)
    with torch.no_grad():
        assert (plain.eval()(ids) - hf(ids).logits).abs().max() > 1e-2


@pytest.mark.parametrize("name", list(QK_NORMED))
def test_greedy_generations_equal_theirs_with_and_without_the_cache(name, writes_as_transformers_does):
    hf = QK_NORMED[name]()
    writes_as_transformers_does(hf, from_transformers(hf), VOCAB)


def test_settings_the_course_lacks_are_refused():
    with pytest.raises(ValueError, match="cannot convert mlp_bias=False: the course's bias option covers"):
        from_transformers(olmo2(attention_bias=True))
    with pytest.raises(ValueError, match="cannot convert max_window_layers=1"):  # windows on some layers only
        from_transformers(qwen3(use_sliding_window=True, sliding_window=8, max_window_layers=1))
    with pytest.raises(ValueError, match="cannot convert head_dim=16"):
        from_transformers(qwen3(head_dim=16))
