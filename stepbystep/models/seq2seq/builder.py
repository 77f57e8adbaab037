"""The book's chapter-10 Transformer in one call (chapters 05-06): same sizes, creation order and
Xavier initialisation in both chapters."""
import torch
from torch import nn

from ...checks import check_instance, check_non_negative_int, check_positive_int
from ..blocks.layers import DecoderLayer, EncoderLayer
from .stacks import DecoderTransf, EncoderDecoderTransf, EncoderTransf

__all__ = ["xavier_init_", "build_transformer"]


def xavier_init_(model):
    """Re-draw every weight matrix (2+ dims) of ``model`` Xavier-uniform, in place and in
    ``parameters()`` order, so signals keep their variance through each layer; returns ``model``."""
    check_instance("model", model, nn.Module, "an nn.Module")
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                nn.init.xavier_uniform_(parameter)
    return model


def build_transformer(n_features=2, input_len=2, target_len=2, d_model=6, n_heads=3, ff_units=10,
                      dropout=0.1, n_layers=2, norm_first=True, seed=None):
    """An ``EncoderDecoderTransf`` with the book's defaults, in training mode, on the CPU: an
    ``EncoderLayer`` and a ``DecoderLayer`` (``d_model``, ``n_heads``, ``ff_units``, ``dropout``,
    ``norm_first``), ``n_layers`` copies of each, joined for ``n_features`` per element (2: points in
    the plane), then ``xavier_init_``: the parameters of those steps written out after
    ``torch.manual_seed(seed)``. ``seed=None`` draws from the global RNG, as building by hand does;
    an int builds inside a forked RNG, leaving the global stream where it was."""
    for name, value in (("n_features", n_features), ("input_len", input_len), ("target_len", target_len)):
        check_positive_int(name, value)
    if seed is not None:
        check_non_negative_int("seed", seed)
    with torch.random.fork_rng(devices=[], enabled=seed is not None):  # seed=None: the global stream itself
        if seed is not None:
            torch.manual_seed(seed)
        encoder_layer = EncoderLayer(n_heads, d_model, ff_units, dropout, norm_first=norm_first)
        decoder_layer = DecoderLayer(n_heads, d_model, ff_units, dropout, norm_first=norm_first)
        max_len = max(input_len, target_len)  # the positional encodings need cover no more
        encoder = EncoderTransf(encoder_layer, n_layers=n_layers, max_len=max_len)
        decoder = DecoderTransf(decoder_layer, n_layers=n_layers, max_len=max_len)
        model = EncoderDecoderTransf(encoder, decoder, input_len=input_len, target_len=target_len, n_features=n_features)
        return xavier_init_(model)
