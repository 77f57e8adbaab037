"""Stacks of encoder and decoder layers, and the encoder-decoder Transformer for sequences of
feature vectors (the square corners) built from them, on ``GreedySeq2Seq``: teacher forcing in
training, greedy decoding in eval."""
import copy

import torch
from torch import nn

from ...checks import check_positive_int, check_sequences
from ...devices import model_dtype
from ..attention.masks import subsequent_mask
from ..blocks.decode_loop import decode_steps
from ..positions.sinusoidal import PositionalEncoding

__all__ = ["greedy_sequence", "GreedySeq2Seq", "EncoderTransf", "DecoderTransf", "EncoderDecoderTransf"]


def greedy_sequence(decode, first, target_len):
    """Greedy decoding of feature vectors ``(N, target_len, F)`` from ``first`` ``(N, 1, F)``: each
    prediction (the last of ``decode(inputs so far)``) is fed back as the next input."""
    steps = decode_steps(lambda inputs, new: decode(inputs)[:, -1], first, target_len,
                         choose=lambda prediction: prediction.detach())  # fed back without a graph
    return torch.stack([prediction for _, prediction in steps], dim=1)  # (N, target_len, F)


class GreedySeq2Seq(nn.Module):
    """Base of the square-corner encoder-decoders: a subclass sets ``input_len``, ``target_len``,
    ``n_features`` and ``encode(source_seq, source_mask)``, which returns the encoded source;
    ``decode_causal`` decodes under the causal mask (by default ``decode(inputs, source_mask,
    target_mask)`` under ``trg_masks``, the book's two steps, ``encode`` having kept the encoded
    source). This adds teacher forcing in training and greedy decoding (``predict``) in eval, both
    starting from ``first_input``."""

    def keep_stacks(self, encoder, decoder, input_len, target_len, n_features):
        """Keep the encoder, the decoder and the sizes, each length within its stack's positional
        encoding (if it has one), and the causal keep-mask ``trg_masks`` ``(1, target_len, target_len)``."""
        if decoder.d_model != encoder.d_model:
            raise ValueError(f"decoder must have the encoder's d_model={encoder.d_model}, got {decoder.d_model}")
        for name, value, stack in (("input_len", input_len, encoder), ("target_len", target_len, decoder)):
            check_positive_int(name, value)
            pe = getattr(stack, "pe", None)
            if pe is not None and value > pe.max_len:
                raise ValueError(f"{name} must be at most the positional encoding's max_len={pe.max_len}, got {value}")
        self.encoder, self.decoder = encoder, decoder
        self.input_len, self.target_len, self.n_features = input_len, target_len, n_features
        self.register_buffer("trg_masks", subsequent_mask(target_len), persistent=False)  # (1, L_t, L_t)

    def first_input(self, source_seq):
        """What the decoder reads first, ``(N, 1, F)``: the last source element."""
        return source_seq[:, -1:]

    def decode_causal(self, inputs, memory, source_mask=None):
        """The decoder's outputs ``(N, L, F)`` for ``inputs`` ``(N, L, F)``, each reading the inputs up to its own."""
        length = inputs.shape[1]
        return self.decode(inputs, source_mask, self.trg_masks[:, :length, :length])

    def _greedy(self, source_seq, memory, source_mask=None):
        return greedy_sequence(lambda inputs: self.decode_causal(inputs, memory, source_mask),
                               self.first_input(source_seq), self.target_len)  # (N, target_len, F)

    def predict(self, source_seq, source_mask=None):
        """Greedy prediction ``(N, target_len, n_features)`` from ``source_seq``; the mode is left as is."""
        check_sequences(source_seq, (self.input_len,), self.n_features, "source_seq", model_dtype(self))
        return self._greedy(source_seq, self.encode(source_seq, source_mask), source_mask)

    def forward(self, X, source_mask=None):
        """``X`` ``(N, input_len + target_len, F)`` (or just the source in eval mode) ->
        ``(N, target_len, F)``; ``source_mask`` is a ``(N, 1, input_len)`` keep-mask."""
        full = self.input_len + self.target_len
        check_sequences(X, (full,) if self.training else (full, self.input_len), self.n_features,
                        dtype=model_dtype(self))
        source_seq = X[:, : self.input_len]  # (N, input_len, F)
        memory = self.encode(source_seq, source_mask)  # (N, input_len, d_model)
        if self.training:  # teacher forcing: the first input, then the target but its last element
            shifted_target_seq = torch.cat([self.first_input(source_seq), X[:, self.input_len : -1]], dim=1)
            return self.decode_causal(shifted_target_seq, memory, source_mask)  # (N, target_len, F)
        return self._greedy(source_seq, memory, source_mask)  # (N, target_len, F)


class _LayerStack(nn.Module):
    """Positional encoding, ``n_layers`` deep copies of a layer and an optional final norm:
    ``final_norm=None`` adds a ``nn.LayerNorm`` iff the layers are norm-first (their output is an
    un-normalised residual stream; norm-last layers already end with a norm), as the paper does."""

    def __init__(self, layer, n_layers, max_len, scale_input, final_norm):
        super().__init__()
        if not isinstance(layer, nn.Module) or not hasattr(layer, "d_model"):
            raise TypeError(f"expected a layer module with a d_model attribute, got {type(layer).__name__}")
        check_positive_int("n_layers", n_layers)
        self.d_model, self.n_layers = layer.d_model, n_layers
        self.pe = PositionalEncoding(max_len, self.d_model, scale_input=scale_input)
        if final_norm is None:
            final_norm = getattr(layer, "norm_first", True)
        self.norm = nn.LayerNorm(self.d_model) if final_norm else None
        self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(n_layers)])


class EncoderTransf(_LayerStack):
    """The Transformer's encoder: positional encoding (``scale_input``: of ``√d_model``, for projected
    features, not token embeddings), then ``n_layers`` copies of ``encoder_layer``.
    ``forward(query, mask=None)``: ``(N, L, d_model)`` in and out, ``mask`` ``(N, 1, L)``."""

    def __init__(self, encoder_layer, n_layers=1, max_len=100, scale_input=True, final_norm=None):
        super().__init__(encoder_layer, n_layers, max_len, scale_input, final_norm)

    def forward(self, query, mask=None):
        x = self.pe(query)  # (N, L, d_model)
        for layer in self.layers:
            x = layer(x, mask)  # (N, L, d_model)
        return x if self.norm is None else self.norm(x)  # (N, L, d_model)


class DecoderTransf(_LayerStack):
    """The Transformer's decoder: positional encoding, then ``n_layers`` copies of ``decoder_layer``.
    ``forward(query, source_mask=None, target_mask=None, memory=None, cache=None)``: ``query``
    ``(N, L_t, d_model)`` in and out; the cross-attentions read ``memory`` ``(N, L_s, d_model)``;
    with a ``KVCache`` that holds them, ``query`` is only the new tokens."""

    def __init__(self, decoder_layer, n_layers=1, max_len=100, scale_input=True, final_norm=None):
        super().__init__(decoder_layer, n_layers, max_len, scale_input, final_norm)

    def forward(self, query, source_mask=None, target_mask=None, memory=None, cache=None):
        start = 0 if cache is None else cache.length - query.shape[1]  # the new tokens follow the cached ones
        x = self.pe(query, start=start)  # (N, L_target, d_model)
        for i, layer in enumerate(self.layers):
            caches = (None, None) if cache is None else (cache.layers[i], cache.cross[i])
            x = layer(x, source_mask, target_mask, memory, *caches)  # (N, L_target, d_model)
        return x if self.norm is None else self.norm(x)  # (N, L, d_model)


class EncoderDecoderTransf(GreedySeq2Seq):
    """The encoder-decoder Transformer for sequences of feature vectors (the square corners):
    ``forward(X, source_mask=None)``, ``X`` ``(N, input_len + target_len, n_features)`` the source then
    the target, returns ``(N, target_len, n_features)``; ``proj`` and ``linear`` project the features
    to ``d_model`` and back. Training: teacher forcing under ``trg_masks`` (the causal keep-mask);
    eval: greedy decoding from the source (``predict``)."""

    def __init__(self, encoder, decoder, input_len, target_len, n_features):
        super().__init__()
        self.keep_stacks(encoder, decoder, input_len, target_len, n_features)
        self.proj = nn.Linear(n_features, encoder.d_model)
        self.linear = nn.Linear(encoder.d_model, n_features)
        self.memory = None  # the encoded source of the last encode, (N, input_len, d_model)

    def encode(self, source_seq, source_mask=None):
        """The encoder's states ``(N, input_len, d_model)`` for ``source_seq`` ``(N, input_len, n_features)``,
        kept as ``memory`` for ``decode``."""
        self.memory = self.encoder(self.proj(source_seq), source_mask)  # (N, L_s, d_model)
        return self.memory

    def decode(self, shifted_target_seq, source_mask=None, target_mask=None):
        """Decode ``(N, L, n_features)`` against ``memory`` under ``target_mask`` ``(1, L, L)``."""
        outputs = self.decoder(self.proj(shifted_target_seq), source_mask, target_mask, self.memory)  # (N, L, d_model)
        return self.linear(outputs)  # (N, L, n_features)

    def __getstate__(self):
        state = super().__getstate__()  # the kept states may carry a graph: copies start without them
        state["memory"] = None
        return state
