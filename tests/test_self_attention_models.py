"""The chapter-9 self-attention models: the book's numbers, masks, decoding modes, training."""
import pytest
import torch
from torch import nn

from stepbystep.models import (
    DecoderPe,
    DecoderSelfAttn,
    EncoderDecoderSelfAttn,
    EncoderPe,
    EncoderSelfAttn,
    padding_mask,
    subsequent_mask,
)


def test_encoder_reproduces_the_books_numbers():
    torch.manual_seed(11)
    encoder = EncoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2)
    out = encoder(torch.tensor([[[-1.0, -1.0], [-1.0, 1.0]]]))  # the perfect square's first corners
    expected = torch.tensor([[[-0.0498, 0.2193], [-0.0642, 0.2258]]])
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=0)


def test_encoder_shapes_and_what_it_computes():
    encoder = EncoderSelfAttn(n_heads=2, d_model=4, ff_units=8, n_features=3)
    assert encoder.n_features == 3 and encoder.self_attn_heads.attn_heads[0].input_dim == 3
    x = torch.randn(5, 6, 3)
    out = encoder(x)
    assert out.shape == (5, 6, 4)
    assert encoder.self_attn_heads.alphas.shape == (2, 5, 6, 6)
    torch.testing.assert_close(out, encoder.ffn(encoder.self_attn_heads(x)))
    assert EncoderSelfAttn(2, 4, 8).n_features == 4


def test_encoder_padding_mask_hides_the_padded_inputs():
    torch.manual_seed(0)
    encoder = EncoderSelfAttn(n_heads=2, d_model=2, ff_units=4)
    x = torch.randn(1, 4, 2)
    mask = padding_mask(torch.tensor([[1, 1, 1, 0]]))  # (1, 1, 4): the last element is padding
    out = encoder(x, mask)
    changed = x.clone()
    changed[:, 3] += 3.0
    torch.testing.assert_close(encoder(changed, mask)[:, :3], out[:, :3])
    assert not torch.allclose(encoder(changed)[:, :3], out[:, :3])


def test_decoder_shapes_and_output_features():
    decoder = DecoderSelfAttn(n_heads=3, d_model=4, ff_units=8, n_features=2)
    assert decoder.self_attn_heads.attn_heads[0].input_dim == 2
    assert decoder.cross_attn_heads.attn_heads[0].input_dim == 4
    decoder.init_keys(torch.randn(5, 3, 4))  # encoder states
    out = decoder(torch.randn(5, 2, 2), target_mask=subsequent_mask(2))
    assert out.shape == (5, 2, 2)
    assert decoder.cross_attn_heads.alphas.shape == (3, 5, 2, 3)
    assert DecoderSelfAttn(3, 4, 8).n_features == 4


def test_decoder_creates_self_attention_then_cross_attention_then_ffn():
    torch.manual_seed(2)
    decoder = DecoderSelfAttn(n_heads=1, d_model=2, ff_units=3)
    names = [name for name, _ in decoder.named_children()]
    assert names == ["self_attn_heads", "cross_attn_heads", "ffn"]
    torch.manual_seed(2)
    first = nn.Linear(1 * 2, 2)  # the self-attention's linear_out comes first
    torch.testing.assert_close(decoder.self_attn_heads.linear_out.weight, first.weight)


def test_causal_mask_makes_earlier_outputs_independent_of_later_inputs():
    torch.manual_seed(0)
    decoder = DecoderSelfAttn(n_heads=2, d_model=2, ff_units=4)
    decoder.init_keys(torch.randn(1, 3, 2))
    x = torch.randn(1, 4, 2)
    out = decoder(x, target_mask=subsequent_mask(4))
    changed = x.clone()
    changed[:, 2:] += 3.0
    torch.testing.assert_close(decoder(changed, target_mask=subsequent_mask(4))[:, :2], out[:, :2])
    assert not torch.allclose(decoder(changed)[:, :2], out[:, :2])


def test_positional_encoding_wrappers():
    torch.manual_seed(0)
    encoder = EncoderPe(n_heads=2, d_model=4, ff_units=8, n_features=2, max_len=5)
    decoder = DecoderPe(n_heads=2, d_model=4, ff_units=8, n_features=2, max_len=5)
    assert encoder.pe.d_model == 2 and encoder.pe.max_len == 5 and decoder.n_features == 2
    x = torch.randn(3, 5, 2)
    states = encoder(x)
    torch.testing.assert_close(states, encoder.layer(encoder.pe(x)))
    decoder.init_keys(states)
    out = decoder(x[:, :2], target_mask=subsequent_mask(2))
    torch.testing.assert_close(out, decoder.layer(decoder.pe(x[:, :2]), target_mask=subsequent_mask(2)))
    assert out.shape == (3, 2, 2)
    # with the encoding, the order of the inputs matters
    reversed_out = encoder(x.flip(1)).flip(1)
    assert not torch.allclose(reversed_out, states)
    plain = encoder.layer
    torch.testing.assert_close(plain(x.flip(1)).flip(1), plain(x))  # without it, it does not


def _model(pe=True, seed=0):
    torch.manual_seed(seed)
    if pe:
        encoder = EncoderPe(n_heads=3, d_model=2, ff_units=10, n_features=2, max_len=2)
        decoder = DecoderPe(n_heads=3, d_model=2, ff_units=10, n_features=2, max_len=2)
    else:
        encoder = EncoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2)
        decoder = DecoderSelfAttn(n_heads=3, d_model=2, ff_units=10, n_features=2)
    return EncoderDecoderSelfAttn(encoder, decoder, input_len=2, target_len=2)


def test_trg_masks_is_a_non_persistent_buffer_that_follows_the_model():
    model = _model()
    assert "trg_masks" in dict(model.named_buffers())
    assert "trg_masks" not in model.state_dict()
    assert torch.equal(model.trg_masks, subsequent_mask(2))
    assert model.to("meta").trg_masks.device.type == "meta"


@pytest.mark.parametrize("pe", [True, False])
def test_shapes_in_training_and_eval(pe):
    model = _model(pe=pe)
    X = torch.randn(5, 4, 2)
    assert model.train()(X).shape == (5, 2, 2)
    assert model.eval()(X).shape == (5, 2, 2)
    assert model(X[:, :2]).shape == (5, 2, 2)  # eval needs only the source
    assert model.predict(X[:, :2]).shape == (5, 2, 2)


def test_teacher_forcing_reads_the_shifted_target():
    model = _model().train()
    X = torch.randn(3, 4, 2)
    out = model(X)
    model.encode(X[:, :2])
    shifted = X[:, 1:3]  # last source point, first target point
    torch.testing.assert_close(out, model.decode(shifted, target_mask=model.trg_masks))
    # the first prediction never sees the target; the second sees its first point
    changed = X.clone()
    changed[:, 3] += 5.0
    torch.testing.assert_close(model(changed), out)
    changed[:, 2] += 5.0
    torch.testing.assert_close(model(changed)[:, 0], out[:, 0])
    assert not torch.allclose(model(changed)[:, 1], out[:, 1])


def test_greedy_feeds_its_own_predictions_back():
    model = _model(seed=1).eval()
    X = torch.randn(3, 4, 2)
    greedy = model(X)
    assert torch.equal(greedy, model(X[:, :2]))  # the target is not used
    torch.testing.assert_close(model.predict(X[:, :2]), greedy)
    model.encode(X[:, :2])
    fed_back = torch.cat([X[:, 1:2], greedy[:, :1]], dim=1)  # teacher forcing on its own output
    torch.testing.assert_close(model.decode(fed_back, target_mask=model.trg_masks), greedy)


def test_wrong_inputs_and_mismatched_parts():
    model = _model().train()
    with pytest.raises(ValueError, match=r"\(N, 4, 2\).*\(3, 2, 2\)"):
        model(torch.randn(3, 2, 2))  # teacher forcing needs the target too
    with pytest.raises(ValueError, match=r"\(N, 4, 2\) or \(N, 2, 2\).*\(3, 4, 3\)"):
        model.eval()(torch.randn(3, 4, 3))
    with pytest.raises(ValueError, match="input_len must be at most the positional encoding's max_len=2, got 5"):
        EncoderDecoderSelfAttn(model.encoder, model.decoder, input_len=5, target_len=2)
    with pytest.raises(ValueError, match="decoder must have the encoder's d_model=2, got 4"):
        EncoderDecoderSelfAttn(EncoderSelfAttn(1, 2, 4), DecoderSelfAttn(1, 4, 4, n_features=2), 2, 2)
    with pytest.raises(ValueError, match=r"decoder must have the encoder's n_features=3 \(both read the same points\), got 2"):
        EncoderDecoderSelfAttn(EncoderSelfAttn(1, 2, 4, n_features=3), DecoderSelfAttn(1, 2, 4), 2, 2)
    with pytest.raises(ValueError, match="target_len must be a positive int, got 0"):
        EncoderDecoderSelfAttn(EncoderSelfAttn(1, 2, 4), DecoderSelfAttn(1, 2, 4), 2, 0)


def test_training_smoke_test_on_the_squares(train_on_squares):
    """The book's chapter-9 settings (d_model 2, 3 heads, ff 10, Adam lr 0.01) learn the squares.

    Such tiny models without residuals or norms vary a lot between seeds and platforms (50 epochs,
    batches of 16, ``square_datasets(128, 64)``, positional encoding; predicting zeros scores 1.0).
    Test MSE with torch 2.13 on one CPU thread, shuffle seed 0: 0.10-0.49 over model seeds 0-11
    (seeds 0 and 1: 0.47 and 0.14; the mean of any two of the twelve at most 0.48); model seed 0
    gave 0.52 on a GPU machine. So the bound is on the mean over two model seeds, not on one run:
    0.5, half the zero baseline, which a model that learned nothing (near 1) does not reach. (A
    median over three seeds would take about 14 s of CPU; two take about 9.)
    """
    results = [train_on_squares(_model(pe=True, seed=seed)) for seed in (0, 1)]  # (test MSE, zeros MSE) each
    assert all(zeros_mse > 0.9 for _, zeros_mse in results)
    assert sum(test_mse for test_mse, _ in results) / len(results) < 0.5
