"""Mixtral and Qwen3-MoE (chapter 17): a transformers model built from a config with random weights
(nothing downloaded) loaded into the course's model gives its logits to 1e-4, its greedy tokens with
and without the cache, and its load-balancing loss; settings the course lacks are refused."""
import pytest
import torch

from small_transformers import VOCAB, random_ids, small_model
from stepbystep.models import MixtureOfExperts, from_transformers

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


MOE = {"intermediate_size": 40, "num_key_value_heads": 2}


def mixtral(seed=0, **settings):
    return small_model(transformers.MixtralForCausalLM, transformers.MixtralConfig, seed,
                       **{**MOE, "num_local_experts": 5, "num_experts_per_tok": 2, **settings})


def qwen3_moe(seed=0, **settings):
    return small_model(transformers.Qwen3MoeForCausalLM, transformers.Qwen3MoeConfig, seed,
                       **{**MOE, "head_dim": 8, "num_experts": 6, "num_experts_per_tok": 3, "moe_intermediate_size": 12,
                          "norm_topk_prob": False, **settings})


MIXTURES = {  # (experts, top-k, renormalised, expert width) each
    "mixtral-5e-top2-gqa": (lambda: mixtral(), (5, 2, True, 40)),
    "mixtral-3e-top1-mqa-tied": (lambda: mixtral(seed=1, hidden_size=48, num_attention_heads=6, num_key_value_heads=1,
                                                 num_local_experts=3, num_experts_per_tok=1, num_hidden_layers=3,
                                                 tie_word_embeddings=True,
                                                 rope_parameters={"rope_type": "default", "rope_theta": 5e5}),
                                 (3, 1, True, 40)),
    "qwen3moe-6e-top3-raw": (lambda: qwen3_moe(), (6, 3, False, 12)),
    "qwen3moe-8e-top2-mha-renormalised": (lambda: qwen3_moe(seed=2, num_key_value_heads=4, num_experts=8,
                                                            num_experts_per_tok=2, norm_topk_prob=True,
                                                            moe_intermediate_size=20, rms_norm_eps=1e-5),
                                          (8, 2, True, 20)),
}


@pytest.mark.parametrize("name", list(MIXTURES))
@pytest.mark.parametrize("rope_pairing", ["rotate_half", "interleaved"])
@pytest.mark.parametrize("store_alphas", [False, True], ids=["fused", "teaching"])
def test_logits_equal_theirs(name, rope_pairing, store_alphas, gives_transformers_logits):
    build, (n_experts, top_k, renormalised, width) = MIXTURES[name]
    hf = build()
    ours = from_transformers(hf, rope_pairing=rope_pairing, store_alphas=store_alphas)
    c = ours.config
    assert (c.n_experts, c.experts_per_token, c.norm_topk_prob) == (n_experts, top_k, renormalised)
    assert all(isinstance(layer.ffn, MixtureOfExperts) and layer.ffn.experts[0].hidden == width for layer in ours.layers)
    assert c.qk_norm == ("head" if name.startswith("qwen3moe") else None)
    ids = random_ids(3, 40)
    gives_transformers_logits(hf, ours, ids)
    counts = ours.layers[0].ffn.tokens_per_expert
    assert counts.sum() == 120 * top_k and (counts > 0).sum() > 1  # the routing is not one expert for all


@pytest.mark.parametrize("name", list(MIXTURES))
def test_the_load_balancing_loss_equals_theirs(name):
    hf = MIXTURES[name][0]()
    ours = from_transformers(hf)
    ids = random_ids(2, 30, seed=3)
    with torch.no_grad():
        out = hf(ids, output_router_logits=True)
        ours(ids)
    assert out.aux_loss > 0.5  # their aux_loss is before router_aux_loss_coef (it multiplies only when labels are given)
    torch.testing.assert_close(ours.aux_loss(pooled=True), out.aux_loss, rtol=0, atol=1e-5)
    one_by_one = sum(transformers.models.mixtral.modeling_mixtral.load_balancing_loss_func(
        (logits,), hf.config.num_experts, hf.config.num_experts_per_tok) for logits in out.router_logits)
    torch.testing.assert_close(ours.aux_loss(), one_by_one, rtol=0, atol=1e-5)  # Switch's: each router's, summed
    labels = ids.clone()
    with torch.no_grad():
        with_labels = hf(ids, labels=labels, output_router_logits=True)
        plain = hf(ids, labels=labels)
    torch.testing.assert_close(with_labels.loss, plain.loss + hf.config.router_aux_loss_coef * out.aux_loss)


@pytest.mark.parametrize("build", [mixtral, qwen3_moe], ids=["mixtral", "qwen3moe"])
def test_without_the_renormalisation_a_mixtral_is_another_function(build):
    hf = build(norm_topk_prob=True) if build is qwen3_moe else build()
    ours = from_transformers(hf)
    raw = ours.config.replace(norm_topk_prob=False).build()
    raw.load_state_dict(ours.state_dict())
    ids = random_ids(2, 20)
    with torch.no_grad():
        assert (raw.eval()(ids) - hf(ids).logits).abs().max() > 1e-2


@pytest.mark.parametrize("name", list(MIXTURES))
def test_greedy_generations_equal_theirs_with_and_without_the_cache(name, writes_as_transformers_does):
    hf = MIXTURES[name][0]()
    writes_as_transformers_does(hf, from_transformers(hf), VOCAB)


def test_settings_the_course_lacks_are_refused():
    refused = [
        (lambda: mixtral(sliding_window=8), "cannot convert sliding_window=8"),
        (lambda: mixtral(router_jitter_noise=0.1), "cannot convert router_jitter_noise=0.1"),
        (lambda: qwen3_moe(mlp_only_layers=[1]), "cannot convert mlp_only_layers=\\[1\\]: the course's mixture"),
        (lambda: qwen3_moe(decoder_sparse_step=2), "cannot convert decoder_sparse_step=2"),
        (lambda: qwen3_moe(num_experts=0), "cannot convert num_experts=0: without experts it is a Qwen3"),
        (lambda: qwen3_moe(use_sliding_window=True, sliding_window=8), "cannot convert use_sliding_window=True"),
        (lambda: qwen3_moe(attention_bias=True), "cannot convert mlp_bias=False"),
        (lambda: mixtral(head_dim=16), "cannot convert head_dim=16"),
    ]
    for build, message in refused:
        with pytest.raises(ValueError, match=message):
            from_transformers(build())
