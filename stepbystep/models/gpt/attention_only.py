"""An attention-only decoder (chapter 13): the decoder-only Transformer without its feed-forward
sublayers, the smallest model in which Elhage et al. (2021) study how heads compose.

Each layer only adds what its heads write to the residual stream, ``x + attn(norm(x))``, so every
path from the embedding to the logits runs through zero, one or more heads: up to the LayerNorms
(which rescale the whole stream), the model is a sum of head circuits.
"""
from torch import nn

from ...checks import check_positive_int
from ..attention.narrow import NarrowMultiHeadAttention
from ..blocks.layers import SubLayerWrapper
from .model import DecoderOnlyTransformer

__all__ = ["AttentionOnlyLayer", "AttentionOnlyTransformer"]


class AttentionOnlyLayer(nn.Module):
    """One causal self-attention sublayer, wrapped (residual, norm, dropout), and nothing else.

    Same arguments and ``forward`` as ``DecoderOnlyLayer``, less ``ff_units``:
    ``forward(query, mask=None, bias=None, rotation=None, cache=None)``: ``(N, L, d_model)`` in and out.
    """

    def __init__(self, n_heads, d_model, dropout=0.0, norm_first=True, store_alphas=True, rotary=None):
        super().__init__()
        check_positive_int("n_heads", n_heads)
        check_positive_int("d_model", d_model)
        self.n_heads, self.d_model, self.norm_first = n_heads, d_model, bool(norm_first)
        self.self_attn_heads = NarrowMultiHeadAttention(n_heads, d_model, dropout, store_alphas, rotary)
        self.sublayers = nn.ModuleList([SubLayerWrapper(d_model, dropout, norm_first)])

    def forward(self, query, mask=None, bias=None, rotation=None, cache=None):
        self.self_attn_heads.check_input("query", query)  # before the norm: shape and dtype
        return self.sublayers[0](query, lambda y: self.self_attn_heads(y, mask=mask, bias=bias, rotation=rotation,
                                                                       cache=cache))  # (N, L, d_model)


class AttentionOnlyTransformer(DecoderOnlyTransformer):
    """A ``DecoderOnlyTransformer`` whose layers are ``AttentionOnlyLayer``: ids ``(N, L)`` in,
    next-token logits ``(N, L, V)`` out, with the same embedding, positions, cache and output layer.

    Same arguments, less ``ff_units``; its own defaults: no padding (``pad_id=None``), no dropout,
    learned positions and an output layer of its own (``tie_weights=False``). Chapter 13's
    ``build_model`` (``stepbystep.experiments.induction``) passes RoPE positions.
    """

    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=2, dropout=0.0, max_len=64, pad_id=None,
                 norm_first=True, tie_weights=False, embedding_std=None, store_alphas=False,
                 position_scheme="learned", rope_base=10000.0):
        super().__init__(vocab_size, d_model=d_model, n_heads=n_heads, ff_units=None, n_layers=n_layers,
                         dropout=dropout, max_len=max_len, pad_id=pad_id, norm_first=norm_first,
                         tie_weights=tie_weights, embedding_std=embedding_std, store_alphas=store_alphas,
                         position_scheme=position_scheme, rope_base=rope_base)

    def make_layer(self, c):
        """An ``AttentionOnlyLayer`` (``c.ff_units`` and ``c.mlp`` are not used: there is no feed-forward
        sublayer, and this model takes none of chapter 12's options)."""
        return AttentionOnlyLayer(c.n_heads, c.d_model, c.dropout, c.norm_first, c.store_alphas, self.rotary)
