"""Chapter 13's measures: repeated sequences, the attention-only model, head scores, ablation and
the loss at every position."""
import math

import pytest
import torch

from stepbystep.data import repeated_sequences
from stepbystep.interpret import (
    ablate_heads,
    ablate_path,
    copying_score,
    ov_circuit,
    attention_weights,
    half_losses,
    head_scores,
    induction_score,
    per_position_loss,
    previous_token_score,
)
from stepbystep.models import AttentionOnlyTransformer, DecoderOnlyTransformer, generate


# ----------------------------------------------------------------------------- repeated_sequences
def test_repeated_sequences_shape_dtype_and_repeat():
    ids = repeated_sequences(5, 7, 11, seed=3)
    assert ids.shape == (5, 14) and ids.dtype == torch.int64
    assert torch.equal(ids[:, :7], ids[:, 7:])
    assert ids.min() >= 0 and ids.max() < 11


def test_repeated_sequences_seeding():
    a = repeated_sequences(6, 8, 50, seed=1)
    assert torch.equal(a, repeated_sequences(6, 8, 50, seed=1))
    assert not torch.equal(a, repeated_sequences(6, 8, 50, seed=2))
    assert torch.equal(repeated_sequences(3, 8, 50, seed=1), a[:3])  # each sequence its own generator
    assert len({tuple(row) for row in a.tolist()}) == 6  # different sequences


def test_repeated_sequences_uses_every_token():
    ids = repeated_sequences(200, 10, 5, seed=0)
    assert torch.equal(ids.unique(), torch.arange(5))


@pytest.mark.parametrize("kwargs, error", [
    (dict(n=0, length=4, vocab_size=8), ValueError), (dict(n=2, length=4, vocab_size=1), ValueError),
    (dict(n=2, length=4.0, vocab_size=8), TypeError), (dict(n=2, length=4, vocab_size=8, seed=-1), ValueError),
    (dict(n=2, length=4, vocab_size=8, seed=2 ** 16), ValueError),
])
def test_repeated_sequences_errors(kwargs, error):
    with pytest.raises(error):
        repeated_sequences(**kwargs)


# ----------------------------------------------------------------------------- attention-only model
def test_attention_only_model_has_no_feed_forward():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(10, d_model=16, n_heads=2, n_layers=2, max_len=12)
    assert not any(hasattr(layer, "ffn") for layer in model.layers)
    assert len(model.layers[0].sublayers) == 1
    full = DecoderOnlyTransformer(10, d_model=16, n_heads=2, ff_units=32, n_layers=2, max_len=12, pad_id=None,
                                  tie_weights=False, position_scheme="learned", dropout=0.0)
    ff_params = sum(p.numel() for layer in full.layers for p in layer.ffn.parameters())
    sublayer_norms = sum(p.numel() for layer in full.layers for p in layer.sublayers[1].parameters())
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in full.parameters()) - ff_params \
        - sublayer_norms


def test_attention_only_layer_adds_only_attention():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(10, d_model=16, n_heads=2, n_layers=1, max_len=12).eval()
    layer = model.layers[0]
    x = torch.randn(2, 5, 16)
    mask = torch.ones(5, 5, dtype=torch.bool).tril().unsqueeze(0)
    normed = layer.sublayers[0].norm(x)
    expected = x + layer.self_attn_heads(normed, mask=mask, key=normed)
    assert torch.allclose(layer(x, mask), expected, atol=1e-6)


@pytest.mark.parametrize("scheme", ["learned", "rope", "sinusoidal"])
def test_attention_only_paths_and_cache_agree(scheme):
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(10, d_model=16, n_heads=2, n_layers=2, max_len=12, position_scheme=scheme).eval()
    ids = repeated_sequences(3, 5, 10, seed=0)
    with torch.no_grad():
        fused = model(ids)
        cache = model.new_cache()
        stepped = torch.cat([model(ids[:, i:i + 1], cache=cache) for i in range(ids.shape[1])], dim=1)
    teaching = torch.cat([w.sum(dim=-1, keepdim=True) for w in attention_weights(model, ids)])
    assert torch.allclose(teaching, torch.ones_like(teaching))
    assert torch.allclose(fused, stepped, atol=1e-5)
    for layer in model.layers:
        layer.self_attn_heads.store_alphas = True
    with torch.no_grad():
        assert torch.allclose(model(ids), fused, atol=1e-5)


def test_decoder_only_model_unchanged_by_the_layer_factory():
    """The seeded decoder-only model draws the weights it drew before ``make_layer`` existed."""
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(12, d_model=8, n_heads=2, ff_units=16, n_layers=2, max_len=8)
    assert [type(layer).__name__ for layer in model.layers] == ["DecoderOnlyLayer"] * 2
    assert model.layers[1].ffn[3].weight[0, :2].tolist() == pytest.approx([0.005320549, -0.229416370], abs=1e-8)
    assert model.head.bias[:2].tolist() == pytest.approx([-0.091257490, -0.192836165], abs=1e-8)


# ----------------------------------------------------------------------------- scores
def _previous_pattern(n, h, length):
    weights = torch.zeros(n, h, length, length)
    weights[:, :, 0, 0] = 1.0
    idx = torch.arange(1, length)
    weights[:, :, idx, idx - 1] = 1.0
    return weights


def _uniform_causal(n, h, length):
    weights = torch.ones(length, length).tril()
    return (weights / weights.sum(dim=-1, keepdim=True)).expand(n, h, length, length).clone()


def _induction_pattern(ids):
    """Each query reads the key after the earlier occurrence of its token; the others read themselves."""
    n, length = ids.shape
    weights = torch.zeros(n, 1, length, length)
    for b in range(n):
        for i in range(length):
            earlier = [j for j in range(i) if ids[b, j] == ids[b, i]]
            if earlier:
                for j in earlier:
                    weights[b, 0, i, j + 1] = 1.0 / len(earlier)
            else:
                weights[b, 0, i, i] = 1.0
    return weights


def test_previous_token_score_perfect_uniform_shifted():
    assert torch.equal(previous_token_score(_previous_pattern(2, 3, 6)), torch.ones(3))
    uniform = previous_token_score(_uniform_causal(1, 1, 5))  # queries 1..4 give 1/2, 1/3, 1/4, 1/5
    assert uniform.item() == pytest.approx((1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4)
    diagonal = torch.eye(6).expand(1, 2, 6, 6)  # every query reads itself
    assert torch.equal(previous_token_score(diagonal), torch.zeros(2))


def test_previous_token_score_per_head():
    weights = torch.cat([_previous_pattern(2, 1, 6), torch.eye(6).expand(2, 1, 6, 6)], dim=1)
    assert torch.equal(previous_token_score(weights), torch.tensor([1.0, 0.0]))


def _distinct_repeats(n, length, vocab_size=50, seed=0):
    """``(n, 2 · length)`` repeated sequences with no token twice in a half."""
    generator = torch.Generator().manual_seed(seed)
    halves = torch.stack([torch.randperm(vocab_size, generator=generator)[:length] for _ in range(n)])
    return torch.cat([halves, halves], dim=1)


def _fixed_offset_pattern(n, length, back):
    """Every query of the repeat on the key ``back`` positions earlier; the others on themselves."""
    weights = torch.eye(2 * length).repeat(n, 1, 1, 1)  # (n, 1, 2·length, 2·length)
    queries = torch.arange(length, 2 * length)
    weights[:, 0, queries] = 0.0
    weights[:, 0, queries, queries - back] = 1.0
    return weights


def test_induction_score_perfect_uniform_shifted():
    ids = _distinct_repeats(4, 6)
    assert torch.equal(_induction_pattern(ids), _fixed_offset_pattern(4, 6, back=5))  # the stripe T - 1 back
    assert induction_score(_induction_pattern(ids), ids).item() == 1.0
    for back in (6, 7, 4):  # the occurrence itself, the key before it, two after it
        assert induction_score(_fixed_offset_pattern(4, 6, back), ids).item() == 0.0
    uniform = induction_score(_uniform_causal(4, 1, 12), ids).item()
    assert uniform == pytest.approx(sum(1 / (i + 1) for i in range(6, 12)) / 6)  # 1 key of 7 to 12


def test_induction_score_on_data_with_first_half_duplicates():
    ids = repeated_sequences(4, 6, 50, seed=0)
    assert induction_score(_induction_pattern(ids), ids).item() == pytest.approx(1.0, abs=1e-6)


def test_induction_score_counts_only_queries_with_an_earlier_occurrence():
    ids = torch.tensor([[1, 2, 3, 1, 2, 3]])  # queries 3, 4, 5 repeat; their targets are keys 1, 2, 3
    weights = torch.zeros(1, 2, 6, 6)
    weights[0, :, torch.arange(6), torch.arange(6)] = 1.0  # head 1: every query on itself
    weights[0, 0, 3:, :] = 0.0
    weights[0, 0, torch.tensor([3, 4, 5]), torch.tensor([1, 2, 3])] = 1.0  # head 0: perfect on the repeat
    assert torch.equal(induction_score(weights, ids), torch.tensor([1.0, 0.0]))


def test_induction_score_with_a_duplicate_in_the_first_half():
    ids = torch.tensor([[5, 5, 7]])  # query 1 (token 5) has an earlier 5 at 0: its target is key 1 (itself)
    weights = torch.eye(3).reshape(1, 1, 3, 3)
    assert induction_score(weights, ids).item() == 1.0


def test_score_errors():
    with pytest.raises(ValueError, match="weights"):
        previous_token_score(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="weights"):
        previous_token_score(torch.zeros(1, 2, 4, 5))
    with pytest.raises(TypeError, match="weights"):
        previous_token_score(torch.zeros(1, 2, 4, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="weights"):
        previous_token_score([[0.0]])
    weights = _uniform_causal(2, 1, 6)
    with pytest.raises(ValueError, match="ids"):
        induction_score(weights, torch.zeros(2, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="ids"):
        induction_score(weights, torch.zeros(2, 6))
    with pytest.raises(ValueError, match="repeat"):
        induction_score(weights, torch.arange(12).view(2, 6))


# ----------------------------------------------------------------------------- ablation
@pytest.fixture
def model_and_ids():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(12, d_model=16, n_heads=4, n_layers=2, max_len=16, position_scheme="rope").eval()
    return model, repeated_sequences(3, 6, 12, seed=0)


@pytest.mark.parametrize("store_alphas", [True, False])
@pytest.mark.parametrize("how", ["zero", "mean"])
def test_ablate_heads_changes_output_and_restores_it_exactly(model_and_ids, store_alphas, how):
    model, ids = model_and_ids
    for layer in model.layers:
        layer.self_attn_heads.store_alphas = store_alphas
    with torch.no_grad():
        before = model(ids)
        with ablate_heads(model, [(0, 1), (1, 3)], how=how) as ablated:
            assert ablated is model
            inside = model(ids)
        after = model(ids)
    assert not torch.allclose(inside, before)
    assert torch.equal(after, before)
    assert all(not layer.self_attn_heads.linear_out._forward_pre_hooks for layer in model.layers)


def test_ablate_heads_zero_equals_zeroing_the_output_weights(model_and_ids):
    """Switching a head off = removing its columns of linear_out, on both paths alike."""
    model, ids = model_and_ids
    import copy
    edited = copy.deepcopy(model)
    d_k = edited.layers[1].self_attn_heads.d_k
    with torch.no_grad():
        edited.layers[1].self_attn_heads.linear_out.weight[:, 2 * d_k:3 * d_k] = 0.0
        with ablate_heads(model, [(1, 2)]):
            ablated = model(ids)
        assert torch.allclose(ablated, edited(ids), atol=1e-6)
        for layer in model.layers:
            layer.self_attn_heads.store_alphas = True
        with ablate_heads(model, [(1, 2)]):
            assert torch.allclose(model(ids), ablated, atol=1e-5)


def test_ablate_heads_restores_after_an_error(model_and_ids):
    model, ids = model_and_ids
    with torch.no_grad():
        before = model(ids)
        with pytest.raises(RuntimeError):
            with ablate_heads(model, [(0, 0)]):
                raise RuntimeError("inside")
        assert torch.equal(model(ids), before)


def test_ablate_no_heads_changes_nothing(model_and_ids):
    model, ids = model_and_ids
    with torch.no_grad():
        before = model(ids)
        with ablate_heads(model, []):
            assert torch.equal(model(ids), before)


@pytest.mark.parametrize("heads, error", [
    ([(2, 0)], ValueError), ([(0, 4)], ValueError), ([(0, -1)], ValueError), ([(0,)], TypeError),
    ([(0.0, 1)], TypeError), ((0, 1), TypeError), ("01", TypeError),
])
def test_ablate_heads_errors(model_and_ids, heads, error):
    model, _ = model_and_ids
    with pytest.raises(error):
        with ablate_heads(model, heads):
            pass


def test_ablate_heads_refuses_other_models_and_modes(model_and_ids):
    model, _ = model_and_ids
    with pytest.raises(ValueError, match="how"):
        with ablate_heads(model, [(0, 0)], how="noise"):
            pass
    with pytest.raises(TypeError, match="model"):
        with ablate_heads(torch.nn.Linear(2, 2), [(0, 0)]):
            pass


# ----------------------------------------------------------------------------- losses and head_scores
def test_per_position_loss_and_halves():
    ids = torch.tensor([[0, 1, 2, 0, 1, 2]])
    logits = torch.zeros(1, 6, 3)
    assert torch.allclose(per_position_loss(logits, ids), torch.full((5,), math.log(3)))
    logits[0, torch.arange(5), ids[0, 1:]] = 50.0  # every next token certain
    losses = per_position_loss(logits, ids)
    assert losses.shape == (5,) and losses.max() < 1e-6
    losses = torch.tensor([1.0, 2.0, 9.0, 4.0, 6.0])  # targets 1, 2 | 3 (start of the repeat) | 4, 5
    first, repeat = half_losses(losses, 3)
    assert first.item() == 1.5 and repeat.item() == 5.0
    with pytest.raises(ValueError, match="losses"):
        half_losses(losses, 4)
    with pytest.raises(ValueError, match="ids"):
        per_position_loss(torch.zeros(1, 6, 3), torch.zeros(1, 5, dtype=torch.long))


def test_head_scores_shapes_and_restores_settings(model_and_ids):
    model, ids = model_and_ids
    model.train()
    previous, induction = head_scores(model, ids)
    assert previous.shape == induction.shape == (2, 4)
    assert model.training and not model.layers[0].self_attn_heads.store_alphas
    weights = attention_weights(model, ids)
    assert torch.equal(previous[1], previous_token_score(weights[1]))
    assert torch.equal(induction[0], induction_score(weights[0], ids))


def test_attention_only_model_generates_the_same_with_and_without_the_cache():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(10, d_model=16, n_heads=2, n_layers=2, max_len=16, position_scheme="rope")
    prompt = repeated_sequences(1, 4, 10, seed=0)[0]  # (8,)
    cached = generate(model, prompt, 6, temperature=0)
    assert cached.shape == (14,) and torch.equal(cached[:8], prompt)
    assert torch.equal(cached, generate(model, prompt, 6, temperature=0, use_cache=False))


# ----------------------------------------------------------------------------- ablate_path
def test_ablate_path_reading_nothing_is_the_intact_model(model_and_ids):
    model, ids = model_and_ids
    with torch.no_grad():
        intact = model(ids)
    logits, weights = ablate_path(model, ids, [(0, 1)], layer=1, reads=())
    assert torch.allclose(logits, intact, atol=1e-5)  # layer 1 on the teaching path: equal up to rounding
    assert torch.allclose(weights, attention_weights(model, ids)[1])


def test_ablate_path_values_leave_the_pattern_and_keys_change_it(model_and_ids):
    model, ids = model_and_ids
    intact = attention_weights(model, ids)[1]
    _, through_values = ablate_path(model, ids, [(0, 0), (0, 1)], layer=1, reads=("value",))
    _, through_keys = ablate_path(model, ids, [(0, 0), (0, 1)], layer=1, reads=("key",))
    assert torch.allclose(through_values, intact, atol=1e-6)
    assert not torch.allclose(through_keys, intact, atol=1e-3)


def test_ablate_path_through_queries_and_keys_gives_the_ablated_pattern(model_and_ids):
    model, ids = model_and_ids
    with ablate_heads(model, [(0, 2)]):
        ablated = attention_weights(model, ids)[1]
    _, both = ablate_path(model, ids, [(0, 2)], layer=1, reads=("query", "key"))
    assert torch.allclose(both, ablated, atol=1e-6)


def test_ablate_path_restores_the_model(model_and_ids):
    model, ids = model_and_ids
    model.train()
    with torch.no_grad():
        before = model.eval()(ids)
    model.train()
    ablate_path(model, ids, [(0, 0)], layer=1, reads=("query", "key", "value"))
    assert model.training and not model.layers[1].self_attn_heads.store_alphas
    assert all(not linear._forward_pre_hooks for layer in model.layers for linear in (
        layer.self_attn_heads.linear_query, layer.self_attn_heads.linear_key, layer.self_attn_heads.linear_value,
        layer.self_attn_heads.linear_out))
    with torch.no_grad():
        assert torch.equal(model.eval()(ids), before)


@pytest.mark.parametrize("kwargs, error", [
    (dict(heads=[(1, 0)], layer=1), ValueError), (dict(heads=[(0, 0)], layer=2), ValueError),
    (dict(heads=[(0, 0)], layer=1, reads=("keys",)), ValueError),
    (dict(heads=[(0, 0)], layer=1, reads="key"), TypeError),
    (dict(heads=[(0, 9)], layer=1), ValueError),
])
def test_ablate_path_errors(model_and_ids, kwargs, error):
    model, ids = model_and_ids
    with pytest.raises(error):
        ablate_path(model, ids, **kwargs)


# ----------------------------------------------------------------------------- the OV circuit
def test_ov_circuit_matches_the_heads_direct_path(model_and_ids):
    """Token j alone at the key, LayerNorms without biases: the head's logit change is column j."""
    import copy
    model = copy.deepcopy(model_and_ids[0])
    gains = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for norm in (model.layers[1].sublayers[0].norm, model.norm):
            norm.bias.zero_()
            norm.weight.copy_(torch.rand(norm.weight.shape, generator=gains) + 0.5)  # gains and centring do not commute
    attention, d_k = model.layers[1].self_attn_heads, model.layers[1].self_attn_heads.d_k
    circuit = ov_circuit(model, 1, 2)
    assert circuit.shape == (12, 12)
    token = 5
    x = model.embed.weight[token]  # (d_model,): the residual stream holding token 5 only
    with torch.no_grad():
        normed = model.layers[1].sublayers[0].norm(x)
        value = attention.linear_value.weight @ normed  # (d_model,), bias left out
        written = attention.linear_out.weight[:, 2 * d_k:3 * d_k] @ value[2 * d_k:3 * d_k]  # (d_model,)
        centred = written - written.mean()
        direct = model.head.weight @ (model.norm.weight * centred)  # (V,)
    scale = normed.norm() / (model.layers[1].sublayers[0].norm.weight * (x - x.mean())).norm()  # 1 / spread
    assert torch.allclose(direct, circuit[:, token] * scale, atol=1e-5)


def test_copying_score_of_a_copying_and_an_anti_copying_head(model_and_ids):
    import copy
    model = copy.deepcopy(model_and_ids[0])
    d_model, d_k = 16, 4
    with torch.no_grad():
        model.embed.weight.copy_(torch.eye(12, d_model) * 3)  # token j: direction j
        model.head.weight.copy_(torch.eye(12, d_model))  # logit i reads direction i
        attention = model.layers[0].self_attn_heads
        attention.linear_value.weight.zero_()
        attention.linear_out.weight.zero_()
        attention.linear_value.weight[:d_k, :d_k] = torch.eye(d_k)  # head 0 writes back directions 0..3
        attention.linear_out.weight[:d_k, :d_k] = torch.eye(d_k)
        attention.linear_out.weight[:d_k, d_k:2 * d_k] = -torch.eye(d_k)  # head 1: minus what head 0 writes
        attention.linear_value.weight[d_k:2 * d_k, :d_k] = torch.eye(d_k)
    copies, opposes = ov_circuit(model, 0, 0), ov_circuit(model, 0, 1)
    assert torch.equal(copies.argmax(dim=0)[:4], torch.arange(4))  # tokens 0..3 raise themselves most
    assert not (opposes.argmax(dim=0)[:4] == torch.arange(4)).any()  # and here lower themselves
    assert torch.allclose(opposes, -copies)
    score = copying_score(model, 0, 0)
    assert score == (copies.argmax(dim=0) == torch.arange(12)).float().mean().item() and score >= 4 / 12
    with pytest.raises(ValueError):
        copying_score(model, 0, 4)
