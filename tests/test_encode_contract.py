"""One contract for ``encode`` across the course's encoders: the encoder's states, one per source
position, ``(N, L_s, d_model)``; what reads them (the decoder's cross-attention, a pooled head)
is the caller's business."""
import torch
from torch import nn

from stepbystep.models import EncoderLayer, EncoderTransf, TokenTransformer, TransformerModel, ViT, build_transformer


def test_every_encode_returns_one_state_per_source_position():
    torch.manual_seed(0)
    points = torch.rand(3, 2, 2)  # (N, input_len, n_features): the square corners' source
    book = build_transformer(n_features=2, input_len=2, target_len=2, d_model=6, n_heads=3, ff_units=10).eval()
    assert book.encode(points).shape == (3, 2, 6)

    torch_model = TransformerModel(nn.Transformer(d_model=6, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                                  dim_feedforward=10, batch_first=True),
                                   input_len=2, target_len=2, n_features=2).eval()
    assert torch_model.encode(points).shape == (3, 2, 6)

    tokens = TokenTransformer(9, 11, d_model=16, n_heads=2, ff_units=20, n_layers=1, max_len=12).eval()
    source_ids = torch.randint(1, 9, (3, 7))
    assert tokens.encode(source_ids).shape == (3, 7, 16)

    encoder = EncoderTransf(EncoderLayer(n_heads=2, d_model=16, ff_units=20), n_layers=1)
    vit = ViT(encoder, img_size=12, in_channels=1, patch_size=4, n_outputs=3).eval()
    states = vit.encode(vit.preprocess(torch.rand(3, 1, 12, 12)))
    assert states.shape == (3, 10, 16)  # the CLS token and 9 patches
    torch.testing.assert_close(vit.pool(states), states[:, 0])  # the head reads the CLS state alone


def test_the_square_model_keeps_its_encoded_states_for_decode():
    torch.manual_seed(0)
    model = build_transformer(n_features=2, input_len=2, target_len=2, d_model=6, n_heads=3, ff_units=10).eval()
    states = model.encode(torch.rand(3, 2, 2))
    assert model.memory is states and states.shape == (3, 2, 6)
    shifted = torch.rand(3, 2, 2)
    expected = model.linear(model.decoder(model.proj(shifted), memory=states))  # the decoder is told the states
    torch.testing.assert_close(model.decode(shifted), expected, atol=0, rtol=0)
