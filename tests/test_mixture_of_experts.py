"""The mixture-of-experts feed-forward layer (chapter 17): the router's softmax, top-k and
renormalisation, the weighted sum of the chosen experts, the tokens dispatched (each expert runs only on
its rows), the per-expert counts and Switch Transformer's load-balancing loss; the model's
``aux_loss()``, the trainer's loss with it, and the total and active parameter counts."""
import pytest
import torch
import torch.nn.functional as F

from stepbystep.models import (
    DecoderConfig,
    MixtureOfExperts,
    completion_loss,
    load_balancing_loss,
    parameter_counts,
    with_load_balancing,
)
from stepbystep.training.trainer import StepByStep


def _moe(n_experts=5, top_k=2, norm_topk_prob=True, mlp="swiglu", seed=0):
    torch.manual_seed(seed)
    return MixtureOfExperts(8, 12, n_experts, top_k, mlp=mlp, norm_topk_prob=norm_topk_prob).eval()


def _dense_by_hand(moe, x):
    """Every expert on every token, weighted by the router's renormalised (or raw) top-k
    probabilities and 0 elsewhere: the same function as the dispatched layer, E times the work."""
    tokens = x.reshape(-1, moe.d_model)  # (T, d)
    probs = F.softmax(tokens @ moe.router.weight.t(), dim=-1)  # (T, E)
    top = probs.topk(moe.top_k, dim=-1)  # (T, k)
    kept = torch.zeros_like(probs).scatter(1, top.indices, top.values)  # (T, E): zero off the top k
    if moe.norm_topk_prob:
        kept = kept / kept.sum(dim=-1, keepdim=True)
    outputs = torch.stack([expert(tokens) for expert in moe.experts], dim=1)  # (T, E, d)
    return (kept[..., None] * outputs).sum(dim=1).view(x.shape), probs, top.indices


@pytest.mark.parametrize("n_experts, top_k, norm_topk_prob, mlp", [
    (5, 2, True, "swiglu"), (5, 2, False, "swiglu"), (4, 1, True, "swiglu"), (6, 3, False, "gelu"), (3, 3, True, "relu"),
])
def test_the_layer_is_the_weighted_sum_of_each_tokens_top_k_experts(n_experts, top_k, norm_topk_prob, mlp):
    moe = _moe(n_experts, top_k, norm_topk_prob, mlp)
    x = torch.randn(3, 7, 8)
    with torch.no_grad():
        out = moe(x)
        expected, probs, chosen = _dense_by_hand(moe, x)
    assert out.shape == x.shape
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)
    counts = torch.bincount(chosen.flatten(), minlength=n_experts)  # (E,)
    assert torch.equal(moe.tokens_per_expert, counts) and counts.sum() == 21 * top_k
    f, p = counts.float() / 21, probs.mean(dim=0)
    torch.testing.assert_close(moe.fraction, f)
    torch.testing.assert_close(moe.aux_loss, n_experts * (f * p).sum())  # E · Σ f_i · P_i


def test_renormalising_the_top_k_weights_changes_the_output_unless_k_is_every_expert():
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        assert (_moe(5, 2, True)(x) - _moe(5, 2, False)(x)).abs().max() > 1e-2
        every = _moe(4, 4, True)  # k = E: the renormalised weights are the softmax itself
        outputs = torch.stack([expert(x) for expert in every.experts], dim=-1)  # (N, L, d, E)
        probs = F.softmax(every.router(x), dim=-1)  # (N, L, E)
        torch.testing.assert_close(every(x), (outputs * probs[..., None, :]).sum(-1), rtol=0, atol=1e-6)


def test_each_expert_runs_only_on_the_tokens_that_chose_it():
    moe = _moe(6, 2)
    rows = {}
    for e, expert in enumerate(moe.experts):
        expert.register_forward_hook(lambda module, args, out, e=e: rows.__setitem__(e, args[0].shape[0]))
    with torch.no_grad():
        moe(torch.randn(4, 9, 8))
    assert [rows[e] for e in range(6)] == moe.tokens_per_expert.tolist()
    assert sum(rows.values()) == 36 * 2  # k networks per token, not E


def test_a_uniform_router_gives_the_balanced_loss_k():
    moe = _moe(6, 2)
    with torch.no_grad():
        moe.router.weight.zero_()  # every probability 1/E
        moe(torch.randn(2, 10, 8))
    torch.testing.assert_close(moe.aux_loss, torch.tensor(2.0))  # E · Σ f_i / E = Σ f_i = k
    torch.testing.assert_close(moe.mean_prob, torch.full((6,), 1 / 6))


def test_the_loss_has_a_gradient_through_the_probabilities_only():
    moe = _moe(4, 1).train()
    moe(torch.randn(2, 6, 8))
    assert moe.fraction.requires_grad is False and moe.mean_prob.requires_grad
    moe.aux_loss.backward()
    assert moe.router.weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in moe.experts.parameters())  # the balance moves the router, not the experts


def _moe_model(**changes):
    torch.manual_seed(0)
    return DecoderConfig.llama(31, d_model=16, n_heads=4, n_layers=3, max_len=24, n_kv_heads=2, ff_units=24,
                               n_experts=4, **changes).build()


def test_the_model_sums_each_layers_loss_or_pools_the_layers_first():
    model = _moe_model()
    assert all(isinstance(layer.ffn, MixtureOfExperts) for layer in model.layers)
    assert model.layers[0].ffn.experts[0].hidden == 24 and model.layers[0].ffn.top_k == 2
    model(torch.randint(0, 31, (2, 12)))
    layers = [layer.ffn for layer in model.layers]
    torch.testing.assert_close(model.aux_loss(), sum(layer.aux_loss for layer in layers))
    f = torch.stack([layer.fraction for layer in layers]).mean(0)
    p = torch.stack([layer.mean_prob for layer in layers]).mean(0)
    torch.testing.assert_close(model.aux_loss(pooled=True), 4 * (f * p).sum())
    assert torch.equal(load_balancing_loss(model), model.aux_loss())
    narrow = _moe_model(expert_ff_units=8, experts_per_token=3, norm_topk_prob=False)
    ffn = narrow.layers[0].ffn
    assert (ffn.experts[0].hidden, ffn.top_k, ffn.norm_topk_prob) == (8, 3, False)


def test_mistakes_are_refused_with_what_was_expected():
    with pytest.raises(ValueError, match="top_k must be at most n_experts \\(3\\), got 4"):
        MixtureOfExperts(8, 12, 3, 4)
    with pytest.raises(ValueError, match="experts_per_token must be at most n_experts \\(2\\), got 3"):
        DecoderConfig(20, n_experts=2, experts_per_token=3).build()
    with pytest.raises(ValueError, match="n_experts must be a positive int"):
        DecoderConfig(20, n_experts=0).build()
    with pytest.raises(TypeError, match="norm_topk_prob must be True or False"):
        DecoderConfig(20, n_experts=2, norm_topk_prob=1).build()
    dense = DecoderConfig(20).build()
    with pytest.raises(ValueError, match="needs a model with MixtureOfExperts layers, got a DecoderOnlyTransformer"):
        dense.aux_loss()
    with pytest.raises(ValueError, match="with_load_balancing needs a model with MixtureOfExperts layers"):
        with_load_balancing(completion_loss, dense)
    with pytest.raises(ValueError, match="call the model first"):
        _moe_model().aux_loss()
    with pytest.raises(ValueError, match="coef must be a number >= 0, got -1"):
        with_load_balancing(completion_loss, _moe_model(), coef=-1)
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        with_load_balancing("cross-entropy", _moe_model())


def _collapsed_model():
    """Top-1 routing with every layer's router sending (almost) every token to expert 0: the
    feed-forward norm's bias points one way, and the router's row 0 reads that way."""
    torch.manual_seed(0)
    model = DecoderConfig(17, d_model=16, n_heads=2, ff_units=16, n_layers=2, max_len=12, dropout=0.0, pad_id=None,
                          n_experts=4, experts_per_token=1, mlp="swiglu").build()
    with torch.no_grad():
        for layer in model.layers:
            layer.sublayers[1].norm.bias.zero_()[0] = 4.0
            layer.ffn.router.weight[0, 0] = 4.0
    return model


def _train(coef, steps=60):
    model = _collapsed_model()
    ids = torch.randint(0, 17, (64, 12), generator=torch.Generator().manual_seed(1))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(ids[:, :-1], ids[:, 1:]), batch_size=16)
    loss = with_load_balancing(completion_loss, model, coef=coef)
    trainer = StepByStep(model, loss, torch.optim.Adam(model.parameters(), lr=1e-2), device="cpu")
    trainer.set_loaders(loader)
    with torch.no_grad():
        model(ids[:, :-1])
    before = (model.aux_loss().item(), max(layer.ffn.fraction.max().item() for layer in model.layers))
    trainer.train_steps(steps, seed=0, progress=False)
    with torch.no_grad():
        model(ids[:, :-1])
    after = (model.aux_loss().item(), max(layer.ffn.fraction.max().item() for layer in model.layers))
    return before, after


def test_training_with_the_balancing_loss_spreads_a_collapsed_load_and_without_it_does_not():
    (aux0, top0), (aux1, top1) = _train(coef=1.0)
    assert top0 > 0.95 and aux0 > 7  # two layers, each near E · 1 · P_0 with P_0 near 1
    assert top1 < 0.6 and aux1 < 0.5 * aux0  # the busiest expert of any layer now has under 60 % of the tokens
    (_, top0_plain), (_, top1_plain) = _train(coef=0.0)
    assert top0_plain == top0 and top1_plain > 0.9  # the control: the language loss alone keeps the collapse


def test_parameter_counts_match_the_built_models():
    configs = [
        DecoderConfig(23),
        DecoderConfig(23, position_scheme="learned", norm="rmsnorm", bias=False, tie_weights=False),
        DecoderConfig.gpt2(23, d_model=16, n_heads=2, n_layers=2, max_len=10),
        DecoderConfig.llama(23, d_model=16, n_heads=4, n_layers=3, max_len=10, n_kv_heads=2, n_experts=5,
                            experts_per_token=2, expert_ff_units=12, qk_norm="all"),
        DecoderConfig.llama(23, d_model=16, n_heads=4, n_layers=3, max_len=10, n_kv_heads=1, qk_norm="head",
                            norm_first=False, norm_output=True, bias=True),
        DecoderConfig(23, n_experts=3, experts_per_token=1, norm_first=False, norm_output=True, mlp="gelu",
                      head_bias=False),
        DecoderConfig(23, norm_first=False),
    ]
    for config in configs:
        model = config.build()
        counts = parameter_counts(config)
        assert counts.total == sum(p.numel() for p in model.parameters()), config
        if config.n_experts is None:
            assert counts.active == counts.total
        else:  # a token skips E - k experts in each layer
            expert = sum(p.numel() for p in model.layers[0].ffn.experts[0].parameters())
            skipped = config.n_layers * (config.n_experts - config.experts_per_token) * expert
            assert counts.active == counts.total - skipped


def test_mixtral_8x7b_has_about_46_7b_parameters_of_which_12_9b_per_token():
    mixtral = DecoderConfig.llama(32000, d_model=4096, n_heads=32, n_layers=32, n_kv_heads=8, ff_units=14336,
                                  n_experts=8, experts_per_token=2, max_len=32768)
    total, active = parameter_counts(mixtral)
    assert round(total / 1e9, 1) == 46.7 and round(active / 1e9, 1) == 12.9
    dense = parameter_counts(mixtral.replace(n_experts=None)).total  # one network, no router
    assert dense == active - 32 * (4096 * 8 + 3 * 4096 * 14336)
    with pytest.raises(TypeError, match="config must be a DecoderConfig"):
        parameter_counts({"d_model": 4096})
