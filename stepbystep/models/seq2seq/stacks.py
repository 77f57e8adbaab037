"""Stacks of encoder and decoder layers, and the encoder-decoder Transformer built from them."""
import copy

from torch import nn

from ...checks import check_positive_int
from ..attention.masks import subsequent_mask
from ..positions.sinusoidal import PositionalEncoding
from .decoding import GreedySeq2Seq

__all__ = ["EncoderTransf", "DecoderTransf", "EncoderDecoderTransf"]


class _LayerStack(nn.Module):
    """Positional encoding, ``n_layers`` deep copies of a layer and an optional final norm.

    The final norm: norm-first layers leave their output un-normalised (each sublayer only
    adds to the residual stream), so the stack ends with a ``nn.LayerNorm``; norm-last layers
    already end with a layer norm, so by default they get none (``self.norm`` is ``None``),
    as in the original paper and ``nn.TransformerEncoder(norm=None)``. ``final_norm=True`` or
    ``False`` overrides this (``nn.Transformer`` always adds one, whatever the placement).
    """

    def __init__(self, layer, n_layers, max_len, scale_input, final_norm):
        super().__init__()
        if not isinstance(layer, nn.Module) or not hasattr(layer, "d_model"):
            raise TypeError(f"expected a layer module with a d_model attribute, got {type(layer).__name__}")
        check_positive_int("n_layers", n_layers)
        self.d_model = layer.d_model
        self.n_layers = n_layers
        self.pe = PositionalEncoding(max_len, self.d_model, scale_input=scale_input)
        if final_norm is None:
            final_norm = getattr(layer, "norm_first", True)
        self.norm = nn.LayerNorm(self.d_model) if final_norm else None
        self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(n_layers)])

    def _finish(self, x):
        return x if self.norm is None else self.norm(x)  # (N, L, d_model)


class EncoderTransf(_LayerStack):
    """The Transformer's encoder: positional encoding, then a stack of encoder layers.

    Args:
        encoder_layer: an ``EncoderLayer``; the stack holds ``n_layers`` independent deep copies.
        n_layers: number of layers.
        max_len: the longest sequence the positional encoding covers.
        scale_input: whether the positional encoding scales its input by ``√d_model``
            (see ``PositionalEncoding``; keep ``True`` for projected features, ``False`` for
            token embeddings).
        final_norm: ``None`` (default) adds a final ``nn.LayerNorm`` iff the layers are
            norm-first; ``True``/``False`` forces it. ``self.norm`` is the norm or ``None``.

    ``forward(query, mask=None)``: ``query`` ``(N, L, d_model)``, ``mask`` ``(N, 1, L)``
    keep-mask; returns ``(N, L, d_model)``.
    """

    def __init__(self, encoder_layer, n_layers=1, max_len=100, scale_input=True, final_norm=None):
        super().__init__(encoder_layer, n_layers, max_len, scale_input, final_norm)

    def forward(self, query, mask=None):
        x = self.pe(query)  # (N, L, d_model)
        for layer in self.layers:
            x = layer(x, mask)  # (N, L, d_model)
        return self._finish(x)


class DecoderTransf(_LayerStack):
    """The Transformer's decoder: positional encoding, then a stack of decoder layers.

    Arguments as ``EncoderTransf``, with a ``DecoderLayer``. Call ``init_keys(states)`` with the
    encoder's output ``(N, L_source, d_model)`` first; every layer's cross-attention attends to it.

    ``forward(query, source_mask=None, target_mask=None)``: ``query`` ``(N, L_target, d_model)``,
    ``source_mask`` ``(N, 1, L_source)``, ``target_mask`` ``(1, L_target, L_target)``;
    returns ``(N, L_target, d_model)``.

    With ``memory`` (the encoder's states) the cross-attentions read it instead; with ``cache``
    (a ``KVCache`` that has recorded these tokens), ``query`` holds only the new target tokens.
    """

    def __init__(self, decoder_layer, n_layers=1, max_len=100, scale_input=True, final_norm=None):
        super().__init__(decoder_layer, n_layers, max_len, scale_input, final_norm)

    def init_keys(self, states):
        """Give every layer's cross-attention the encoder states ``(N, L_source, d_model)``."""
        for layer in self.layers:
            layer.init_keys(states)

    def forward(self, query, source_mask=None, target_mask=None, memory=None, cache=None):
        start = 0 if cache is None else cache.length - query.shape[1]  # the new tokens follow the cached ones
        x = self.pe(query, start=start)  # (N, L_target, d_model)
        for i, layer in enumerate(self.layers):
            caches = (None, None) if cache is None else (cache.layers[i], cache.cross[i])
            x = layer(x, source_mask, target_mask, memory, *caches)  # (N, L_target, d_model)
        return self._finish(x)


class EncoderDecoderTransf(GreedySeq2Seq):
    """The encoder-decoder Transformer for sequences of feature vectors (e.g. square corners).

    Each sequence ``X`` ``(N, input_len + target_len, n_features)`` holds the source (its first
    ``input_len`` elements) followed by the target. Features are projected to ``d_model`` by
    ``proj`` on the way in and back to ``n_features`` by ``linear`` on the way out.

    * training mode: teacher forcing. The decoder reads the target shifted right by one, i.e.
      ``X[:, input_len-1:-1]`` (the last source element, then all but the last target element),
      under the causal mask ``trg_masks``, and predicts every target element at once;
    * eval mode: greedy decoding (``predict``) from the source alone; ``X`` may then also be
      just the source ``(N, input_len, n_features)``.

    Buffers:
        trg_masks: ``subsequent_mask(target_len)`` ``(1, target_len, target_len)``, bool,
            ``True`` = may attend; a buffer, so it follows the model to its device.

    ``forward(X, source_mask=None)`` returns ``(N, target_len, n_features)``; ``source_mask``
    is a ``(N, 1, input_len)`` keep-mask.
    """

    def __init__(self, encoder, decoder, input_len, target_len, n_features):
        super().__init__()
        if encoder.d_model != decoder.d_model:
            raise ValueError(
                f"encoder and decoder need the same d_model, got {encoder.d_model} and {decoder.d_model}"
            )
        for name, value, stack in (("input_len", input_len, encoder), ("target_len", target_len, decoder)):
            check_positive_int(name, value)
            if value > stack.pe.max_len:
                raise ValueError(f"{name} {value} exceeds the positional encoding's max_len {stack.pe.max_len}")
        self.encoder = encoder
        self.decoder = decoder
        self.input_len = input_len
        self.target_len = target_len
        self.n_features = n_features
        self.register_buffer("trg_masks", subsequent_mask(target_len), persistent=False)  # (1, L_t, L_t)
        self.proj = nn.Linear(n_features, encoder.d_model)
        self.linear = nn.Linear(encoder.d_model, n_features)

    def encode(self, source_seq, source_mask=None):
        """Encode ``source_seq`` ``(N, input_len, n_features)`` and hand the states to the decoder.

        Returns the encoder states ``(N, input_len, d_model)``.
        """
        source_proj = self.proj(source_seq)  # (N, L_s, d_model)
        states = self.encoder(source_proj, source_mask)  # (N, L_s, d_model)
        self.decoder.init_keys(states)
        return states

    def decode(self, shifted_target_seq, source_mask=None, target_mask=None):
        """Decode ``(N, L, n_features)`` against the encoded source; returns ``(N, L, n_features)``.

        ``target_mask`` ``(1, L, L)``: pass ``trg_masks`` (or a slice); ``None`` means no mask.
        """
        target_proj = self.proj(shifted_target_seq)  # (N, L, d_model)
        outputs = self.decoder(target_proj, source_mask=source_mask, target_mask=target_mask)  # (N, L, d_model)
        return self.linear(outputs)  # (N, L, n_features)
