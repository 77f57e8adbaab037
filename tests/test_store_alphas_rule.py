"""One rule for when attention weights are kept (the docstring of attend's module, scaled_dot_product): every
module and model keeps them by default, the decoder-only models (DecoderConfig) do not."""
import inspect

import torch

from stepbystep.models import (
    AttentionOnlyLayer,
    AttentionOnlyTransformer,
    DecoderConfig,
    DecoderLayer,
    DecoderOnlyLayer,
    DecoderOnlyTransformer,
    EncoderLayer,
    NarrowMultiHeadAttention,
    TokenTransformer,
    build_transformer,
)


def _attentions(model):
    return [m for m in model.modules() if isinstance(m, NarrowMultiHeadAttention)]


def test_modules_keep_the_weights_by_default():
    for cls in (NarrowMultiHeadAttention, EncoderLayer, DecoderLayer, DecoderOnlyLayer, AttentionOnlyLayer):
        assert inspect.signature(cls.__init__).parameters["store_alphas"].default is True, cls.__name__
    for model in (TokenTransformer(10, 10, d_model=8, n_heads=2, ff_units=16), build_transformer()):
        assert all(attention.store_alphas for attention in _attentions(model))


def test_the_decoder_only_models_do_not_and_show_them_on_request():
    assert DecoderConfig(10).store_alphas is False
    for model in (DecoderOnlyTransformer(10, d_model=8, n_heads=2, ff_units=16), AttentionOnlyTransformer(10, d_model=8)):
        assert not any(attention.store_alphas for attention in _attentions(model))
        weights = model.attention_weights(torch.randint(1, 10, (2, 5)))
        assert weights.shape == (2, model.layers[0].self_attn_heads.n_heads, 5, 5)
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, weights.shape[1], 5))
        assert not any(attention.store_alphas for attention in _attentions(model))  # restored
