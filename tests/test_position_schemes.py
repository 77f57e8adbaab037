"""Every position scheme in the course's attention and decoder-only model: the teaching and fused
paths agree, the KV cache changes nothing, and left padding moves no position."""
import pytest
import torch
import torch.nn.functional as F

from stepbystep.models import (
    POSITION_SCHEMES,
    DecoderOnlyTransformer,
    NarrowMultiHeadAttention,
    RotaryEmbedding,
    alibi_bias,
    alibi_slopes,
    generate,
    subsequent_mask,
)
from stepbystep.experiments.generation_timing import step_logits
from stepbystep.models.attention import scaled_dot_product as scaled_dot_product_module

PROMPTS = [[1, 5, 6, 7], [1, 3], [1, 4, 4, 4, 4, 9, 2]]


def build(scheme, seed=0, **kwargs):
    torch.manual_seed(seed)
    settings = dict(d_model=16, n_heads=2, ff_units=32, n_layers=2, dropout=0.0, max_len=40, tie_weights=False,
                    position_scheme=scheme)
    settings.update(kwargs)
    return DecoderOnlyTransformer(12, **settings).eval()


def _padded_batch():
    ids = torch.randint(1, 12, (3, 9), generator=torch.Generator().manual_seed(3))
    ids[0, :3] = 0  # left padding
    ids[1, :1] = 0
    return ids


def _both_paths(model, ids):
    with torch.no_grad():
        fused = model(ids)
        for layer in model.layers:
            layer.self_attn_heads.store_alphas = True
        teaching = model(ids)
        for layer in model.layers:
            layer.self_attn_heads.store_alphas = False
    return teaching, fused


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
def test_teaching_and_fused_paths_agree(scheme):
    model = build(scheme)
    ids = torch.randint(1, 12, (2, 10), generator=torch.Generator().manual_seed(2))
    teaching, fused = _both_paths(model, ids)
    torch.testing.assert_close(fused, teaching, atol=1e-5, rtol=0)
    padded = _padded_batch()
    teaching, fused = _both_paths(model, padded)
    real = padded != 0
    torch.testing.assert_close(fused[real], teaching[real], atol=1e-5, rtol=0)


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
def test_left_padding_gives_the_same_logits_as_alone(scheme):
    model = build(scheme)
    padded = _padded_batch()
    with torch.no_grad():
        batch = model(padded)
        alone = model(padded[0:1, 3:])
    torch.testing.assert_close(batch[0, 3:], alone[0], atol=1e-5, rtol=0)


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
@pytest.mark.parametrize("store_alphas", [False, True])
def test_cached_and_uncached_agree_on_a_left_padded_batch(scheme, store_alphas):
    model = build(scheme, store_alphas=store_alphas)
    cached_logits, cached_ids = step_logits(model, PROMPTS, 12, use_cache=True)
    uncached_logits, uncached_ids = step_logits(model, PROMPTS, 12, use_cache=False)
    assert torch.equal(cached_ids, uncached_ids)
    torch.testing.assert_close(cached_logits, uncached_logits, atol=1e-5, rtol=0)


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
def test_a_batch_is_generated_as_each_prompt_alone(scheme):
    model = build(scheme)
    batch = generate(model, PROMPTS, 8, temperature=0)
    for row, prompt in zip(batch, PROMPTS):
        alone = generate(model, prompt, 8, temperature=0)
        assert torch.equal(row[-len(alone):], alone)


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
def test_a_prompt_fed_in_pieces_to_the_cache_gives_the_whole_prompts_logits(scheme):
    model = build(scheme)
    ids = torch.randint(1, 12, (2, 9), generator=torch.Generator().manual_seed(4))
    cache = model.new_cache()
    with torch.no_grad():
        pieces = torch.cat([model(ids[:, :4], cache=cache), model(ids[:, 4:], cache=cache)], dim=1)
        whole = model(ids)
    torch.testing.assert_close(pieces, whole, atol=1e-5, rtol=0)


def test_what_each_scheme_adds_to_the_model():
    counts = {scheme: sum(p.numel() for p in build(scheme).parameters()) for scheme in POSITION_SCHEMES}
    assert counts["learned"] == counts["none"] + 40 * 16  # max_len x d_model
    assert counts["sinusoidal"] == counts["alibi"] == counts["rope"] == counts["none"]  # nothing trainable
    keys = set(build("none").state_dict())
    for scheme in ("sinusoidal", "alibi", "rope"):
        assert set(build(scheme).state_dict()) == keys  # tables and slopes are rebuilt, not saved
    rope = build("rope")
    assert all(layer.self_attn_heads.rotary is rope.rotary for layer in rope.layers)
    assert build("sinusoidal").pe is not None and build("alibi").pe is None
    assert "position_scheme='alibi'" in repr(build("alibi"))


def test_the_default_scheme_is_sinusoidal_and_unchanged():
    torch.manual_seed(0)
    default = DecoderOnlyTransformer(12, d_model=16, n_heads=2, ff_units=32, dropout=0.0, max_len=40).eval()
    torch.manual_seed(0)
    sinusoidal = DecoderOnlyTransformer(12, d_model=16, n_heads=2, ff_units=32, dropout=0.0, max_len=40,
                                        position_scheme="sinusoidal").eval()
    ids = torch.randint(1, 12, (2, 7))
    assert default.position_scheme == "sinusoidal"
    assert torch.equal(default(ids), sinusoidal(ids))


def test_the_alibi_model_adds_minus_slope_times_distance():
    model = build("alibi", n_heads=4, d_model=16)
    torch.testing.assert_close(model.alibi_slopes, alibi_slopes(4))
    positions = torch.arange(5)
    torch.testing.assert_close(model.attention_bias(positions, positions), alibi_bias(4, 5))
    assert build("rope").attention_bias(positions, positions) is None


def test_without_positions_the_last_output_ignores_the_order_before_it():
    """No positions, one layer: permuting the earlier tokens leaves the last output alone. (With two
    layers the earlier states already depend on their own prefixes, so the causal mask leaks order.)"""
    model = build("none", n_layers=1)
    ids = torch.tensor([[1, 5, 6, 7, 8, 3]])
    shuffled = torch.tensor([[7, 1, 8, 6, 5, 3]])
    with torch.no_grad():
        torch.testing.assert_close(model(ids)[0, -1], model(shuffled)[0, -1], atol=1e-5, rtol=0)
    with torch.no_grad():
        rope = build("rope", n_layers=1)
        assert not torch.allclose(rope(ids)[0, -1], rope(shuffled)[0, -1], atol=1e-3)


def test_bad_schemes_are_refused():
    with pytest.raises(ValueError, match="position_scheme must be one of 'sinusoidal', 'learned'"):
        build("relative")
    with pytest.raises(ValueError, match="needs an even d_model // n_heads"):
        build("rope", d_model=12, n_heads=4)
    with pytest.raises(ValueError, match="rope_base must be a positive number"):
        build("rope", rope_base=0)


# ----------------------------------------------------------------------------- the attention module itself
def _attention(store_alphas, rotary=None, seed=0):
    torch.manual_seed(seed)
    return NarrowMultiHeadAttention(4, 16, dropout=0.0, store_alphas=store_alphas, rotary=rotary).eval()


@pytest.mark.parametrize("with_mask", [False, True])
def test_attention_with_a_bias_and_a_rotation_agrees_on_both_paths(with_mask):
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(5))
    bias = alibi_bias(4, 6)
    mask = subsequent_mask(6) & torch.tensor([[True] * 6, [False] + [True] * 5]).unsqueeze(1) if with_mask else None
    positions = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 0, 1, 2, 3, 4]])
    outputs = []
    for store_alphas in (True, False):
        rotary = RotaryEmbedding(4)
        attention = _attention(store_alphas, rotary)
        outputs.append(attention(x, mask=mask, bias=bias, rotation=rotary.at(positions)))
    torch.testing.assert_close(outputs[1], outputs[0], atol=1e-5, rtol=0)


def test_the_bias_changes_the_teaching_paths_weights_as_added_scores():
    x = torch.randn(1, 5, 16)
    attention = _attention(True)
    q, k = attention.make_chunks(attention.linear_query(x)), attention.project_keys(x)[0]  # (1, h, 5, d_k) each
    scores = q @ k.transpose(-2, -1) / attention.d_k ** 0.5  # (1, h, 5, 5)
    bias = alibi_bias(4, 5)
    attention(x, mask=subsequent_mask(5), bias=bias)
    expected = torch.softmax((scores + bias).masked_fill(~subsequent_mask(5).bool().unsqueeze(1), float("-inf")), -1)
    torch.testing.assert_close(attention.alphas, expected, atol=1e-6, rtol=0)


def test_the_fused_path_gets_alibi_as_a_float_mask_with_minus_infinity(monkeypatch):
    seen = {}
    original = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        seen["mask"] = kwargs.get("attn_mask")
        return original(*args, **kwargs)

    monkeypatch.setattr(scaled_dot_product_module.F, "scaled_dot_product_attention", spy)
    x = torch.randn(1, 5, 16)
    attention = _attention(False)
    attention(x, mask=subsequent_mask(5), bias=alibi_bias(4, 5))
    mask = seen["mask"]
    assert mask.is_floating_point() and mask.shape == (1, 4, 5, 5)
    future = ~subsequent_mask(5)[0].bool()
    assert torch.isneginf(mask[0][:, future]).all()
    torch.testing.assert_close(mask[0][:, ~future], alibi_bias(4, 5)[:, ~future])


def test_attention_refuses_a_bias_or_rotation_that_does_not_fit():
    attention = _attention(True)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"bias must have shape \(4, 5, 5\)"):
        attention(x, bias=alibi_bias(2, 5))
    with pytest.raises(TypeError, match="bias must be a float tensor"):
        attention(x, bias=torch.ones(4, 5, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"rotary must rotate vectors of d_k \(d_model // n_heads\)=4"):
        _attention(True, RotaryEmbedding(8))
    with pytest.raises(TypeError, match="rotary must be a RotaryEmbedding or None"):
        _attention(True, rotary="rope")
