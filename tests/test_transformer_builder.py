"""build_transformer and xavier_init_: the book's chapter-10 model in one call, reproducibly."""
import math

import pytest
import torch
from torch import nn

from stepbystep.models import (
    DecoderLayer,
    DecoderTransf,
    EncoderDecoderTransf,
    EncoderLayer,
    EncoderTransf,
    build_transformer,
    xavier_init_,
)


def test_seeded_build_equals_the_steps_written_out_after_manual_seed():
    torch.manual_seed(42)
    encoder = EncoderTransf(EncoderLayer(3, 6, 10, 0.1), n_layers=2, max_len=2)
    decoder = DecoderTransf(DecoderLayer(3, 6, 10, 0.1), n_layers=2, max_len=2)
    by_hand = EncoderDecoderTransf(encoder, decoder, input_len=2, target_len=2, n_features=2)
    for parameter in by_hand.parameters():
        if parameter.dim() > 1:
            nn.init.xavier_uniform_(parameter)
    built = build_transformer(seed=42)
    by_hand_state, built_state = by_hand.state_dict(), built.state_dict()
    assert by_hand_state.keys() == built_state.keys()
    for name, value in by_hand_state.items():
        assert torch.equal(value, built_state[name]), name


def test_a_seed_leaves_the_global_stream_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    first = build_transformer(seed=7)
    assert torch.equal(torch.rand(3), expected)
    second = build_transformer(seed=7)
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters()))
    other = build_transformer(seed=8)
    assert not torch.equal(first.proj.weight, other.proj.weight)


def test_no_seed_draws_from_the_global_stream_as_building_by_hand_does():
    torch.manual_seed(42)
    untouched = torch.rand(3)
    torch.manual_seed(42)
    drawn = build_transformer()
    assert not torch.equal(torch.rand(3), untouched)  # the build advanced the global stream
    seeded = build_transformer(seed=42)
    assert all(torch.equal(a, b) for a, b in zip(drawn.parameters(), seeded.parameters()))


def test_hyper_parameters_reach_every_part():
    model = build_transformer(n_features=3, input_len=4, target_len=5, d_model=8, n_heads=2, ff_units=7,
                              dropout=0.2, n_layers=3, norm_first=False, seed=0)
    assert (model.input_len, model.target_len, model.n_features) == (4, 5, 3)
    assert len(model.encoder.layers) == len(model.decoder.layers) == 3
    layer = model.decoder.layers[0]
    assert (layer.n_heads, layer.d_model, layer.ff_units, layer.norm_first) == (2, 8, 7, False)
    assert layer.cross_attn_heads.dropout.p == 0.2
    assert model.encoder.norm is None  # norm-last layers end with their own norm
    assert model.train()(torch.randn(6, 9, 3)).shape == (6, 5, 3)
    assert model.eval()(torch.randn(6, 4, 3)).shape == (6, 5, 3)


def test_xavier_init_touches_only_weight_matrices():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(200, 300), nn.LayerNorm(300))
    bias_before = model[0].bias.clone()
    assert xavier_init_(model) is model
    bound = math.sqrt(6 / (200 + 300))
    weight = model[0].weight
    assert weight.abs().max() <= bound
    # U(-a, a) has standard deviation a / sqrt(3); 60,000 draws pin it to about 0.3%
    assert weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    assert torch.equal(model[0].bias, bias_before)
    assert torch.equal(model[1].weight, torch.ones(300)) and torch.equal(model[1].bias, torch.zeros(300))


def test_xavier_bound_holds_in_the_built_model():
    model = build_transformer(seed=1)
    for name, parameter in model.named_parameters():
        if parameter.dim() > 1:
            fan_out, fan_in = parameter.shape
            assert parameter.abs().max() <= math.sqrt(6 / (fan_in + fan_out)), name


@pytest.mark.parametrize("kwargs, error, message", [
    ({"seed": -1}, ValueError, "seed must be a non-negative int, got -1"),
    ({"seed": 1.5}, TypeError, "seed must be a non-negative int, got float 1.5"),
    ({"n_features": 0}, ValueError, "n_features must be a positive int, got 0"),
    ({"input_len": "2"}, TypeError, "input_len must be a positive int, got str '2'"),
    ({"d_model": 7}, ValueError, "d_model must be divisible by n_heads"),
])
def test_bad_arguments_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        build_transformer(**kwargs)


def test_xavier_init_rejects_a_non_module():
    with pytest.raises(TypeError, match="model must be an nn.Module, got Tensor"):
        xavier_init_(torch.zeros(3, 3))
