"""Sublayer wrappers and the Transformer's encoder and decoder layers."""
from torch import nn

from ..checks import check_positive_int
from .narrow_attention import MultiHeadedAttention

__all__ = ["SubLayerWrapper", "EncoderLayer", "DecoderLayer", "feed_forward"]


def feed_forward(d_model, ff_units, dropout):
    """The position-wise feed-forward network ``(N, L, d_model) -> (N, L, d_model)``.

    Linear, ReLU, Dropout, Linear: the same order as PyTorch's Transformer layers, so
    weights copied with ``copy_to_torch`` compute the same function.
    """
    return nn.Sequential(
        nn.Linear(d_model, ff_units),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(ff_units, d_model),
    )


class SubLayerWrapper(nn.Module):
    """A residual connection, layer norm and dropout around one sublayer.

    * norm-first (``norm_first=True``, the default, as in the book): ``x + drop(sublayer(norm(x)))``;
    * norm-last (``norm_first=False``, the original paper's post-norm): ``norm(x + drop(sublayer(x)))``.

    ``forward(x, sublayer, is_self_attn=False, **kwargs)``: ``x`` is ``(N, L, d_model)`` and so is
    the output; ``kwargs`` (e.g. ``mask``) go to the sublayer. For self-attention the wrapper
    first calls ``sublayer.init_keys`` with the tensor the sublayer sees (normalised ``x`` when
    norm-first, ``x`` itself when norm-last), so queries, keys and values come from the same input.
    """

    def __init__(self, d_model, dropout, norm_first=True):
        super().__init__()
        self.norm_first = bool(norm_first)
        self.norm = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, sublayer, is_self_attn=False, **kwargs):
        sub_in = self.norm(x) if self.norm_first else x  # (N, L, d_model)
        if is_self_attn:
            sublayer.init_keys(sub_in)
        out = x + self.drop(sublayer(sub_in, **kwargs))  # (N, L, d_model)
        return out if self.norm_first else self.norm(out)

    def extra_repr(self):
        return f"norm_first={self.norm_first}"


def _check_sizes(n_heads, d_model, ff_units):
    for name, value in (("n_heads", n_heads), ("d_model", d_model), ("ff_units", ff_units)):
        check_positive_int(name, value)


class EncoderLayer(nn.Module):
    """One encoder layer: self-attention, then a feed-forward network, each wrapped.

    Args:
        n_heads, d_model: the self-attention's heads and size (``d_model % n_heads == 0``).
        ff_units: hidden units of the feed-forward network.
        dropout: used by the attention weights, the feed-forward network and the wrappers.
        norm_first: where the wrappers put the layer norm (see ``SubLayerWrapper``).
        store_alphas: ``False`` uses the fused attention kernel and keeps no weights.

    ``forward(query, mask=None)``: ``query`` ``(N, L, d_model)``, ``mask`` a source keep-mask
    ``(N, 1, L)`` (``True`` = may attend); returns ``(N, L, d_model)``.
    """

    def __init__(self, n_heads, d_model, ff_units, dropout=0.1, norm_first=True, store_alphas=True):
        super().__init__()
        _check_sizes(n_heads, d_model, ff_units)
        self.n_heads = n_heads
        self.d_model = d_model
        self.ff_units = ff_units
        self.norm_first = bool(norm_first)
        # creation order as in the book: attention, then feed-forward, then wrappers
        self.self_attn_heads = MultiHeadedAttention(n_heads, d_model, dropout, store_alphas)
        self.ffn = feed_forward(d_model, ff_units, dropout)
        self.sublayers = nn.ModuleList([SubLayerWrapper(d_model, dropout, norm_first) for _ in range(2)])

    def forward(self, query, mask=None):
        att = self.sublayers[0](query, sublayer=self.self_attn_heads, is_self_attn=True, mask=mask)  # (N, L, d_model)
        return self.sublayers[1](att, sublayer=self.ffn)  # (N, L, d_model)


class DecoderLayer(nn.Module):
    """One decoder layer: masked self-attention, cross-attention, feed-forward, each wrapped.

    Same arguments as ``EncoderLayer``. Call ``init_keys(states)`` with the encoder's output
    ``(N, L_source, d_model)`` before ``forward``; the cross-attention attends to it.

    ``forward(query, source_mask=None, target_mask=None)``: ``query`` ``(N, L_target, d_model)``;
    ``source_mask`` ``(N, 1, L_source)`` masks the cross-attention's keys; ``target_mask``
    ``(1, L_target, L_target)`` (usually ``subsequent_mask``) masks the self-attention.
    Returns ``(N, L_target, d_model)``.
    """

    def __init__(self, n_heads, d_model, ff_units, dropout=0.1, norm_first=True, store_alphas=True):
        super().__init__()
        _check_sizes(n_heads, d_model, ff_units)
        self.n_heads = n_heads
        self.d_model = d_model
        self.ff_units = ff_units
        self.norm_first = bool(norm_first)
        # creation order as in the book: self-attention, cross-attention, feed-forward, wrappers
        self.self_attn_heads = MultiHeadedAttention(n_heads, d_model, dropout, store_alphas)
        self.cross_attn_heads = MultiHeadedAttention(n_heads, d_model, dropout, store_alphas)
        self.ffn = feed_forward(d_model, ff_units, dropout)
        self.sublayers = nn.ModuleList([SubLayerWrapper(d_model, dropout, norm_first) for _ in range(3)])

    def init_keys(self, states):
        """Set the cross-attention's keys and values from ``states`` ``(N, L_source, d_model)``."""
        self.cross_attn_heads.init_keys(states)

    def forward(self, query, source_mask=None, target_mask=None):
        att1 = self.sublayers[0](
            query, sublayer=self.self_attn_heads, is_self_attn=True, mask=target_mask
        )  # (N, L_target, d_model)
        att2 = self.sublayers[1](att1, sublayer=self.cross_attn_heads, mask=source_mask)  # (N, L_target, d_model)
        return self.sublayers[2](att2, sublayer=self.ffn)  # (N, L_target, d_model)
