"""DecoderOnlyTransformer: shapes, causality, padding, tied weights, the completion loss, and every error."""
import pytest
import torch
import torch.nn.functional as F

from stepbystep.models import (
    IGNORE_INDEX,
    DecoderOnlyLayer,
    DecoderOnlyTransformer,
    EncoderLayer,
    NarrowMultiHeadAttention,
    SubLayerWrapper,
    completion_loss,
)

V = 20


def _model(**kwargs):
    torch.manual_seed(0)
    options = dict(d_model=16, n_heads=2, ff_units=32, n_layers=2, dropout=0.0, max_len=24)
    options.update(kwargs)
    return DecoderOnlyTransformer(V, **options).eval()


def test_logits_shape_and_building_blocks():
    model = _model()
    ids = torch.randint(1, V, (3, 7))
    assert model(ids).shape == (3, 7, V)
    layer = model.layers[0]
    assert isinstance(layer, DecoderOnlyLayer) and isinstance(layer, EncoderLayer)
    assert isinstance(layer.self_attn_heads, NarrowMultiHeadAttention)
    assert all(isinstance(wrapper, SubLayerWrapper) for wrapper in layer.sublayers)
    assert not hasattr(layer, "cross_attn_heads")  # nothing to attend to but the stream
    assert isinstance(model.norm, torch.nn.LayerNorm)
    assert _model(norm_first=False).norm is None


def test_causal_a_later_token_never_changes_earlier_logits():
    model = _model()
    ids = torch.randint(1, V, (2, 9))
    changed = ids.clone()
    changed[:, 5:] = torch.randint(1, V, (2, 4))
    with torch.no_grad():
        torch.testing.assert_close(model(ids)[:, :5], model(changed)[:, :5], atol=1e-6, rtol=0)
        assert not torch.allclose(model(ids)[:, 5:], model(changed)[:, 5:])


def test_teaching_and_fused_paths_agree():
    fused, teaching = _model(), _model(store_alphas=True)
    teaching.load_state_dict(fused.state_dict())
    ids = torch.randint(1, V, (2, 9))
    with torch.no_grad():
        torch.testing.assert_close(fused(ids), teaching(ids), atol=1e-5, rtol=0)


def test_left_padding_gives_the_same_logits_as_alone():
    model = _model()
    ids = torch.randint(1, V, (1, 6))
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], dim=1)  # (1, 9): three pads first
    with torch.no_grad():
        torch.testing.assert_close(model(padded)[:, 3:], model(ids), atol=1e-5, rtol=0)


def test_right_padding_does_not_change_the_real_positions():
    model = _model()
    ids = torch.randint(1, V, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(model(padded)[:, :6], model(ids), atol=1e-5, rtol=0)


def test_attention_weights_are_causal_rows_summing_to_one():
    model = _model()
    ids = torch.randint(1, V, (2, 6))
    weights = model.attention_weights(ids)
    assert weights.shape == (2, 2, 6, 6)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(2, 2, 6))
    assert torch.all(weights.triu(diagonal=1) == 0)
    assert model.layers[-1].self_attn_heads.store_alphas is False  # restored


def test_tied_weights_share_one_matrix_and_save_v_times_d_parameters():
    tied, untied = _model(), _model(tie_weights=False)
    assert tied.head.weight is tied.embed.weight
    assert untied.head.weight is not untied.embed.weight
    count = lambda model: sum(p.numel() for p in model.parameters())  # noqa: E731
    assert count(untied) - count(tied) == V * 16
    assert torch.isfinite(tied(torch.randint(1, V, (2, 5)))).all()


def test_embedding_std():
    model = _model(embedding_std=0.3, d_model=64, n_heads=4)
    assert 0.25 < model.embed.weight.std().item() < 0.35


def test_gradients_reach_every_parameter():
    model = _model(tie_weights=False).train()
    logits = model(torch.randint(1, V, (2, 6)))
    logits.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_completion_loss_ignores_the_ignored_targets():
    logits = torch.randn(2, 4, V)
    targets = torch.tensor([[IGNORE_INDEX, IGNORE_INDEX, 3, 4], [IGNORE_INDEX, 5, 6, IGNORE_INDEX]])
    keep = targets != IGNORE_INDEX
    expected = F.cross_entropy(logits[keep], targets[keep])
    torch.testing.assert_close(completion_loss(logits, targets), expected)
    smoothed = F.cross_entropy(logits[keep], targets[keep], label_smoothing=0.1)
    torch.testing.assert_close(completion_loss(logits, targets, label_smoothing=0.1), smoothed)


@pytest.mark.parametrize("ids, error, words", [
    ([[1, 2, 3]], TypeError, "ids must be a tensor, got list"),
    (torch.ones(2, 3), TypeError, "ids must be a tensor of dtype torch.int64 or torch.int32, got torch.float32"),
    (torch.ones(3, dtype=torch.long), ValueError, "shape (N, L)"),
    (torch.ones(2, 0, dtype=torch.long), ValueError, "L >= 1"),
    (torch.ones(1, 25, dtype=torch.long), ValueError, "max_len=24"),
    (torch.tensor([[1, V]]), ValueError, f"ids in 0..{V - 1}"),
    (torch.tensor([[-1, 2]]), ValueError, "from -1"),
])
def test_bad_ids_are_refused(ids, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        _model()(ids)


def test_cache_must_be_a_kv_cache_and_fit():
    model = _model()
    with pytest.raises(TypeError, match="KVCache"):
        model(torch.ones(1, 2, dtype=torch.long), cache={})
    cache = model.new_cache()
    model(torch.ones(1, 20, dtype=torch.long), cache=cache)
    with pytest.raises(ValueError, match="after the 20 tokens in the cache"):
        model(torch.ones(1, 5, dtype=torch.long), cache=cache)


@pytest.mark.parametrize("kwargs, words", [
    ({"pad_id": V}, "pad_id"),
    ({"max_len": 0}, "max_len"),
    ({"n_layers": 0}, "n_layers"),
    ({"embedding_std": 0}, "embedding_std"),
])
def test_bad_settings_are_refused(kwargs, words):
    with pytest.raises(ValueError, match=words):
        _model(**kwargs)


def test_completion_loss_errors():
    with pytest.raises(TypeError, match="tensor"):
        completion_loss([1], torch.zeros(1, 1))
    with pytest.raises(ValueError, match=r"logits \(N, L, V\)"):
        completion_loss(torch.zeros(2, 3, V), torch.zeros(2, 4, dtype=torch.long))
