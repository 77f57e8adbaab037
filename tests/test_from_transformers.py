"""from_transformers: the course's model built from a transformers GPT-2 or Llama (random weights
from a config, nothing downloaded) gives its logits to 1e-4 and its greedy generations, with and
without the cache, multi-head, grouped-query and multi-query; every refusal is a clear error."""
import pytest
import torch

transformers = pytest.importorskip("transformers")

from small_transformers import VOCAB, random_ids, small_model  # noqa: E402  (after the skip)
from stepbystep.models import (  # noqa: E402  (after the skip)
    RMSNorm,
    config_from_transformers,
    from_transformers,
)

transformers.logging.set_verbosity_error()


def gpt2(seed=0, **settings):
    torch.manual_seed(seed)
    config = dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=48, initializer_range=0.3, bos_token_id=None,
                  eos_token_id=None)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(**{**config, **settings})).eval()


def llama(seed=0, **settings):
    return small_model(transformers.LlamaForCausalLM, transformers.LlamaConfig, seed,
                       **{"intermediate_size": 88, "num_key_value_heads": 4, **settings})


MODELS = {
    "gpt2": lambda: gpt2(),
    "gpt2-wide-untied-exact-gelu": lambda: gpt2(n_embd=48, n_head=3, n_layer=3, n_inner=80, activation_function="gelu",
                                                layer_norm_epsilon=1e-6, tie_word_embeddings=False),
    "llama": lambda: llama(),
    "llama-gqa": lambda: llama(num_key_value_heads=2, rope_parameters={"rope_type": "default", "rope_theta": 500.0}),
    "llama-mqa-tied-biased": lambda: llama(hidden_size=48, num_attention_heads=6, num_key_value_heads=1,
                                           tie_word_embeddings=True, attention_bias=True, mlp_bias=True,
                                           rms_norm_eps=1e-5),
}


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("store_alphas", [False, True], ids=["fused", "teaching"])
def test_logits_equal_theirs(name, store_alphas, gives_transformers_logits):
    hf = MODELS[name]()
    ours = from_transformers(hf, store_alphas=store_alphas)
    ids = random_ids(3, 40)
    gives_transformers_logits(hf, ours, ids)


@pytest.mark.parametrize("name", list(MODELS))
def test_greedy_generations_equal_theirs_with_and_without_the_cache(name, writes_as_transformers_does):
    hf = MODELS[name]()
    writes_as_transformers_does(hf, from_transformers(hf), VOCAB)


def test_llama_with_interleaved_pairs_is_the_same_function():
    hf = llama(num_key_value_heads=2)
    half, interleaved = from_transformers(hf), from_transformers(hf, rope_pairing="interleaved")
    assert interleaved.rotary.pairing == "interleaved"
    ids = random_ids(2, 30)
    with torch.no_grad():
        torch.testing.assert_close(interleaved(ids), half(ids), rtol=0, atol=1e-5)
        order = [0, 4, 1, 5, 2, 6, 3, 7]  # d_k = 8: rows (i, i + 4) become (2i, 2i + 1)
        rows = hf.model.layers[0].self_attn.q_proj.weight[:8]
        assert torch.equal(interleaved.layers[0].self_attn_heads.linear_query.weight[:8], rows[order])
        assert not torch.equal(half.layers[0].self_attn_heads.linear_query.weight[:8], rows[order])


def test_config_is_read_from_theirs():
    config = config_from_transformers(llama(num_key_value_heads=2, intermediate_size=40, rms_norm_eps=1e-5,
                                            rope_parameters={"rope_type": "default", "rope_theta": 5e5}))
    assert (config.d_model, config.n_heads, config.n_kv_heads, config.ff_units, config.norm_eps) == (32, 4, 2, 40, 1e-5)
    assert (config.rope_base, config.rope_pairing, config.max_len, config.tie_weights) == (5e5, "rotate_half", 48, False)
    config = config_from_transformers(gpt2())
    assert (config.mlp, config.position_scheme, config.ff_units, config.tie_weights, config.pad_id) == \
           ("gelu_tanh", "learned", 128, True, None)


def test_the_copy_follows_device_dtype_and_mode():
    hf = llama().to(torch.float64).train()
    ours = from_transformers(hf)
    assert ours.training and next(ours.parameters()).dtype == torch.float64
    assert isinstance(ours.norm, RMSNorm)
    ids = random_ids(1, 10)
    with torch.no_grad():
        torch.testing.assert_close(ours.eval()(ids), hf.eval()(ids).logits, rtol=0, atol=1e-4)


def test_other_architectures_are_refused():
    with pytest.raises(TypeError, match="from_transformers converts a transformers model of one of the architectures "
                                        "GPT2LMHeadModel, LlamaForCausalLM, .*DeepseekV3ForCausalLM.*, got GPT2Model"):
        from_transformers(gpt2().transformer)
    with pytest.raises(TypeError, match="got Linear"):
        from_transformers(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="rope_pairing must be one of"):
        from_transformers(llama(), rope_pairing="half")


@pytest.mark.parametrize("build, message", [
    (lambda: llama(rope_parameters={"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0}),
     "cannot convert rope_type='linear'"),
    (lambda: llama(hidden_act="gelu"), "cannot convert hidden_act='gelu'"),
    (lambda: llama(head_dim=16), "cannot convert head_dim=16: the course's heads are hidden_size // "
                                 "num_attention_heads = 8 wide"),
    (lambda: llama(attention_bias=True), "cannot convert mlp_bias=False"),
    (lambda: gpt2(activation_function="relu"), "cannot convert activation_function='relu'"),
    (lambda: gpt2(scale_attn_by_inverse_layer_idx=True), "cannot convert scale_attn_by_inverse_layer_idx=True"),
    (lambda: gpt2(scale_attn_weights=False), "cannot convert scale_attn_weights=False"),
], ids=["rope-scaling", "activation", "head-dim", "mixed-bias", "gpt2-activation", "layer-scaling", "no-scaling"])
def test_settings_the_course_lacks_are_refused(build, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        from_transformers(build())


def test_dropout_goes_where_theirs_is():
    ours = from_transformers(gpt2(attn_pdrop=0.2, resid_pdrop=0.3))
    layer = ours.layers[0]
    assert layer.self_attn_heads.dropout.p == 0.2 and [s.drop.p for s in layer.sublayers] == [0.3, 0.3]
    assert layer.ffn[2].p == 0.0  # GPT-2 has none inside its MLP
    ours = from_transformers(llama(attention_dropout=0.1))
    layer = ours.layers[0]
    assert layer.self_attn_heads.dropout.p == 0.1 and [s.drop.p for s in layer.sublayers] == [0.0, 0.0]
    assert layer.ffn.drop.p == 0.0
