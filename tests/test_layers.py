"""SubLayerWrapper, EncoderLayer and DecoderLayer: norm placement, shapes, masks and causality."""
import pytest
import torch
from torch import nn

from stepbystep.models import DecoderLayer, EncoderLayer, SubLayerWrapper, subsequent_mask


@pytest.mark.parametrize("norm_first", [True, False])
def test_wrapper_follows_its_equation(norm_first, randomise_norms):
    torch.manual_seed(0)
    wrapper = randomise_norms(SubLayerWrapper(d_model=4, dropout=0.1, norm_first=norm_first)).eval()
    sub = nn.Linear(4, 4)
    x = torch.randn(2, 3, 4)
    expected = x + sub(wrapper.norm(x)) if norm_first else wrapper.norm(x + sub(x))
    torch.testing.assert_close(wrapper(x, sub), expected)


@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_layer_follows_its_equations(norm_first, randomise_norms):
    torch.manual_seed(1)
    layer = randomise_norms(EncoderLayer(n_heads=2, d_model=4, ff_units=8, norm_first=norm_first)).eval()
    x = torch.randn(3, 5, 4)
    mask = torch.ones(3, 1, 5, dtype=torch.bool)
    mask[1, 0, 4] = False
    attn, ffn = layer.self_attn_heads, layer.ffn
    norm1, norm2 = layer.sublayers[0].norm, layer.sublayers[1].norm

    def self_attend(z):
        return attn(z, mask=mask)  # keys come from the same tensor the queries do

    if norm_first:
        h = x + self_attend(norm1(x))
        expected = h + ffn(norm2(h))
    else:
        h = norm1(x + self_attend(x))
        expected = norm2(h + ffn(h))
    torch.testing.assert_close(layer(x, mask), expected)


def test_norm_placements_compute_different_functions():
    torch.manual_seed(2)
    pre = EncoderLayer(2, 4, 8, norm_first=True).eval()
    post = EncoderLayer(2, 4, 8, norm_first=False).eval()
    post.load_state_dict(pre.state_dict())  # same weights, different placement
    x = torch.randn(2, 5, 4)
    assert not torch.allclose(pre(x), post(x), atol=1e-3)
    # norm-last outputs are normalised rows; norm-first outputs are not
    out = post(x)
    torch.testing.assert_close(out.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)


def test_ffn_is_linear_relu_dropout_linear():
    layer = EncoderLayer(2, 4, 8, dropout=0.3)
    kinds = [type(m) for m in layer.ffn]
    assert kinds == [nn.Linear, nn.ReLU, nn.Dropout, nn.Linear]
    assert layer.ffn[0].out_features == 8 and layer.ffn[2].p == 0.3


@pytest.mark.parametrize("norm_first", [True, False])
def test_shapes(norm_first):
    enc = EncoderLayer(3, 6, 10, norm_first=norm_first)
    dec = DecoderLayer(3, 6, 10, norm_first=norm_first)
    source, target = torch.randn(4, 2, 6), torch.randn(4, 3, 6)
    states = enc(source)
    assert states.shape == (4, 2, 6)
    assert dec(target, target_mask=subsequent_mask(3), memory=states).shape == (4, 3, 6)
    assert dec.self_attn_heads.alphas.shape == (4, 3, 3, 3)
    assert dec.cross_attn_heads.alphas.shape == (4, 3, 3, 2)
    assert len(enc.sublayers) == 2 and len(dec.sublayers) == 3


@pytest.mark.parametrize("norm_first", [True, False])
def test_padded_source_positions_do_not_influence_the_rest(norm_first):
    torch.manual_seed(3)
    enc = EncoderLayer(2, 4, 8, norm_first=norm_first).eval()
    dec = DecoderLayer(2, 4, 8, norm_first=norm_first).eval()
    x = torch.randn(2, 5, 4)
    mask = torch.ones(2, 1, 5, dtype=torch.bool)
    mask[:, 0, 3:] = False  # the last two positions are padding
    changed = x.clone()
    changed[:, 3:] = torch.randn(2, 2, 4)
    torch.testing.assert_close(enc(x, mask)[:, :3], enc(changed, mask)[:, :3])
    target = torch.randn(2, 3, 4)
    out = dec(target, source_mask=mask, memory=x)
    torch.testing.assert_close(dec(target, source_mask=mask, memory=changed), out)


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_layer_is_causal(norm_first):
    torch.manual_seed(4)
    dec = DecoderLayer(2, 4, 8, norm_first=norm_first).eval()
    memory = torch.randn(2, 3, 4)  # the encoder's states
    target = torch.randn(2, 6, 4)
    out = dec(target, target_mask=subsequent_mask(6), memory=memory)
    for i in range(5):
        changed = target.clone()
        changed[:, i + 1 :] = torch.randn(2, 5 - i, 4)
        out_changed = dec(changed, target_mask=subsequent_mask(6), memory=memory)
        torch.testing.assert_close(out_changed[:, : i + 1], out[:, : i + 1])
        assert not torch.allclose(out_changed[:, i + 1 :], out[:, i + 1 :])
    # without the mask, earlier outputs do see later inputs
    assert not torch.allclose(dec(changed, memory=memory)[:, :5], dec(target, memory=memory)[:, :5])


def test_bad_sizes_name_the_value():
    with pytest.raises(ValueError, match="ff_units must be a positive int, got 0"):
        EncoderLayer(2, 4, 0)
    with pytest.raises(TypeError, match="n_heads must be a positive int, got float 2.0"):
        EncoderLayer(2.0, 4, 8)
    with pytest.raises(ValueError, match=r"d_model=5.*n_heads=2"):
        DecoderLayer(2, 5, 8)
