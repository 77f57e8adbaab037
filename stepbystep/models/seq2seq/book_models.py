"""The book's chapter-9 self-attention models (chapter 02): wide-head encoder, decoder and seq2seq,
without residual connections or norms yet; created in the book's order."""
from torch import nn

from ...checks import check_instance
from ..attention.wide import WideMultiHeadAttention
from ..positions.sinusoidal import PositionalEncoding
from .stacks import GreedySeq2Seq

__all__ = ["EncoderSelfAttn", "DecoderSelfAttn", "EncoderPe", "DecoderPe", "EncoderDecoderSelfAttn"]


class EncoderSelfAttn(nn.Module):
    """Encoder: wide multi-head self-attention, then a feed-forward network.
    ``n_features``: the inputs' size (``None``: ``d_model``). ``forward(query, mask=None)``:
    ``(N, L, n_features)`` -> ``(N, L, d_model)``, ``mask`` ``(N, 1, L)``."""

    def __init__(self, n_heads, d_model, ff_units, n_features=None):
        super().__init__()
        self.n_heads, self.d_model, self.ff_units = n_heads, d_model, ff_units
        self.n_features = d_model if n_features is None else n_features
        self.self_attn_heads = WideMultiHeadAttention(n_heads, d_model, input_dim=self.n_features)
        self.ffn = nn.Sequential(nn.Linear(d_model, ff_units), nn.ReLU(), nn.Linear(ff_units, d_model))

    def forward(self, query, mask=None):
        self.self_attn_heads.init_keys(query)
        att = self.self_attn_heads(query, mask)  # (N, L, d_model)
        return self.ffn(att)  # (N, L, d_model)


class DecoderSelfAttn(nn.Module):
    """Decoder: masked self-attention, cross-attention to the encoder (``init_keys(states)``), then a
    feed-forward network back to ``n_features`` (the decoder predicts points).

    ``forward(query, source_mask=None, target_mask=None)``: ``(N, L_t, n_features)`` in and out."""

    def __init__(self, n_heads, d_model, ff_units, n_features=None):
        super().__init__()
        self.n_heads, self.d_model, self.ff_units = n_heads, d_model, ff_units
        self.n_features = d_model if n_features is None else n_features
        self.self_attn_heads = WideMultiHeadAttention(n_heads, d_model, input_dim=self.n_features)
        self.cross_attn_heads = WideMultiHeadAttention(n_heads, d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, ff_units), nn.ReLU(), nn.Linear(ff_units, self.n_features))

    def init_keys(self, states):
        """Give the cross-attention the encoder states ``(N, L_source, d_model)``."""
        self.cross_attn_heads.init_keys(states)

    def forward(self, query, source_mask=None, target_mask=None):
        self.self_attn_heads.init_keys(query)
        att1 = self.self_attn_heads(query, target_mask)  # (N, L_t, d_model)
        att2 = self.cross_attn_heads(att1, source_mask)  # (N, L_t, d_model)
        return self.ffn(att2)  # (N, L_t, n_features)


class _WithPe(nn.Module):
    """A self-attention model (``layer``, of class ``LAYER``) behind a sinusoidal positional
    encoding ``pe`` of ``n_features``."""

    def __init__(self, n_heads, d_model, ff_units, n_features=None, max_len=100):
        super().__init__()
        self.d_model = d_model
        self.n_features = d_model if n_features is None else n_features
        self.pe = PositionalEncoding(max_len, self.n_features)
        self.layer = self.LAYER(n_heads, d_model, ff_units, n_features)


class EncoderPe(_WithPe):
    """``EncoderSelfAttn`` (``layer``) behind a sinusoidal positional encoding ``pe`` of ``n_features``."""

    LAYER = EncoderSelfAttn

    def forward(self, query, mask=None):
        query_pe = self.pe(query)  # (N, L, n_features)
        return self.layer(query_pe, mask)  # (N, L, d_model)


class DecoderPe(_WithPe):
    """``DecoderSelfAttn`` (``layer``) behind a sinusoidal positional encoding ``pe`` of ``n_features``."""

    LAYER = DecoderSelfAttn

    def init_keys(self, states):
        """Give the decoder's cross-attention the encoder states ``(N, L_source, d_model)``."""
        self.layer.init_keys(states)

    def forward(self, query, source_mask=None, target_mask=None):
        query_pe = self.pe(query)  # (N, L_t, n_features)
        return self.layer(query_pe, source_mask, target_mask)  # (N, L_t, n_features)


class EncoderDecoderSelfAttn(GreedySeq2Seq):
    """Encoder-decoder for sequences of points, from the models above: ``X`` ``(N, input_len +
    target_len, n_features)``; teacher forcing under ``trg_masks`` in training, greedy in eval.
    ``forward(X, source_mask=None)`` returns ``(N, target_len, n_features)``."""

    def __init__(self, encoder, decoder, input_len, target_len):
        super().__init__()
        for name, module in (("encoder", encoder), ("decoder", decoder)):
            check_instance(name, module, nn.Module, "an nn.Module")
            if not hasattr(module, "d_model"):
                raise TypeError(f"{name} must be a module with a d_model attribute, got {type(module).__name__}")
        if not hasattr(decoder, "n_features"):
            raise TypeError(f"decoder must have an n_features attribute, got {type(decoder).__name__}")
        encoder_features = getattr(encoder, "n_features", decoder.n_features)
        if decoder.n_features != encoder_features:
            raise ValueError(f"decoder must have the encoder's n_features={encoder_features} (both read the same "
                             f"points), got {decoder.n_features}")
        self.keep_stacks(encoder, decoder, input_len, target_len, decoder.n_features)

    def encode(self, source_seq, source_mask=None):
        """Encode ``(N, input_len, n_features)``, hand the states ``(N, input_len, d_model)`` to the decoder."""
        states = self.encoder(source_seq, source_mask)  # (N, L_s, d_model)
        self.decoder.init_keys(states)
        return states

    def decode(self, shifted_target_seq, source_mask=None, target_mask=None):
        """Decode ``(N, L, n_features)`` against the encoded source under ``target_mask`` ``(1, L, L)``."""
        return self.decoder(shifted_target_seq, source_mask=source_mask, target_mask=target_mask)
