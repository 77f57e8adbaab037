"""The bridge to PyTorch's ``nn.Transformer`` (chapter 06): a seq2seq wrapper and a weight copier.

The boolean masks of PyTorch's modules mean "blocked" where ours mean "may attend", and their
padding mask is a separate ``key_padding_mask`` ``(N, L)``."""
import torch
import torch.nn.functional as F
from torch import nn

from ...checks import check_instance
from ..attention.masks import keep_mask, subsequent_mask, to_key_padding_mask, to_torch_attn_mask
from ..attention.narrow import NarrowMultiHeadAttention
from ..blocks.layers import DecoderLayer, EncoderLayer
from ..positions.sinusoidal import PositionalEncoding
from .stacks import DecoderTransf, EncoderDecoderTransf, EncoderTransf, GreedySeq2Seq

__all__ = ["TransformerModel", "copy_to_torch"]


class TransformerModel(GreedySeq2Seq):
    """The book's wrapper around PyTorch's ``nn.Transformer`` for sequences of feature vectors.

    ``preprocess`` projects each element to ``d_model`` (``proj``), adds the positional encoding
    (``pe``) and, as the book does, normalises (``norm``); ``linear`` projects back. With
    ``input_norm=False`` it is ``EncoderDecoderTransf``'s twin (``copy_to_torch``). Created in the
    book's order; a ``batch_first=False`` transformer gets ``(L, N, d_model)``, as in the book.

    ``causal_blocked_mask`` ``(target_len, target_len)``: PyTorch's causal mask, ``True`` = blocked.
    ``source_mask``, our ``(N, 1, input_len)`` keep-mask, masks the encoder's and the decoder's keys.
    ``forward(X, source_mask=None)`` and ``predict`` as ``EncoderDecoderTransf``'s (``GreedySeq2Seq``)."""

    def __init__(self, transformer, input_len, target_len, n_features, scale_input=True, input_norm=True):
        super().__init__()
        check_instance("transformer", transformer, nn.Transformer, "an nn.Transformer")
        check_instance("input_norm", input_norm, bool, "True or False")
        d_model = transformer.d_model
        self.transf = transformer
        self.input_len, self.target_len, self.n_features = input_len, target_len, n_features
        causal = to_torch_attn_mask(subsequent_mask(target_len))  # (L_t, L_t), True = blocked
        self.register_buffer("causal_blocked_mask", causal, persistent=False)
        self.proj = nn.Linear(n_features, d_model)
        self.linear = nn.Linear(d_model, n_features)
        self.pe = PositionalEncoding(max(input_len, target_len), d_model, scale_input=scale_input)
        self.norm = nn.LayerNorm(d_model) if input_norm else None

    @property
    def input_norm(self):
        """Whether ``preprocess`` ends with the book's ``LayerNorm`` (``norm``)."""
        return self.norm is not None

    def preprocess(self, seq):
        """Project ``(N, L, n_features)`` to ``d_model``, add the positional encoding and (by default) normalise."""
        encoded = self.pe(self.proj(seq))  # (N, L, d_model)
        return encoded if self.norm is None else self.norm(encoded)

    @staticmethod
    def _key_padding(source_mask, n, length):
        """Our keep-mask ``(N or 1, 1, L_s)`` -> PyTorch's ``key_padding_mask`` ``(N, L_s)``."""
        if source_mask is None:
            return None
        return to_key_padding_mask(keep_mask(source_mask, n, 1, length, "source_mask")).expand(n, length)  # (N, L_s), True = pad

    def _swap(self, x):
        """``(N, L, D)`` <-> ``(L, N, D)`` for an ``nn.Transformer`` built sequence-first; else ``x``."""
        return x if self.transf.batch_first else x.transpose(0, 1)

    def encode(self, source_seq, source_mask=None):
        """Encode ``source_seq`` ``(N, input_len, n_features)``; returns the memory ``(N, input_len, d_model)``."""
        padding = self._key_padding(source_mask, *source_seq.shape[:2])  # (N, L_s) or None
        memory = self.transf.encoder(self._swap(self.preprocess(source_seq)), src_key_padding_mask=padding)
        return self._swap(memory)  # (N, L_s, d_model)

    def decode(self, shifted_target_seq, memory, source_mask=None):
        """Decode ``(N, L, n_features)`` against ``memory`` under ``causal_blocked_mask[:L, :L]``."""
        length = shifted_target_seq.shape[1]
        padding = self._key_padding(source_mask, *memory.shape[:2])  # (N, L_s) or None
        outputs = self.transf.decoder(self._swap(self.preprocess(shifted_target_seq)), self._swap(memory),
                                      tgt_mask=self.causal_blocked_mask[:length, :length],  # (L, L), True = blocked
                                      memory_key_padding_mask=padding)  # (N, L, d_model), or (L, N, d_model)
        return self.linear(self._swap(outputs))  # (N, L, n_features)

    def decode_causal(self, inputs, memory, source_mask=None):
        return self.decode(inputs, memory, source_mask)  # decode applies the causal mask itself


def _same(what, ours, theirs):
    """Raise a ``ValueError`` naming ``what`` unless our module's value equals PyTorch's."""
    if ours != theirs:
        raise ValueError(f"{what} differs: ours has {ours}, PyTorch's has {theirs}")


def _copy_param(src, dst, what):
    if dst is None:
        raise ValueError(f"{what}: PyTorch's module has no such parameter (built with bias=False?)")
    dst.copy_(src)


def _copy_linear(ours, theirs, what):
    _same(f"{what} weight shape", tuple(ours.weight.shape), tuple(theirs.weight.shape))
    _copy_param(ours.weight, theirs.weight, f"{what}.weight")
    _copy_param(ours.bias, theirs.bias, f"{what}.bias")


def _copy_norm(ours, theirs, what):
    _same(f"{what} size", ours.normalized_shape, theirs.normalized_shape)
    _same(f"{what} eps", ours.eps, theirs.eps)
    if theirs.weight is None:
        raise ValueError(f"{what}: PyTorch's LayerNorm has no affine parameters")
    _copy_param(ours.weight, theirs.weight, f"{what}.weight")
    _copy_param(ours.bias, theirs.bias, f"{what}.bias")


def _copy_mha(ours, theirs):
    _same("d_model (embed_dim)", ours.d_model, theirs.embed_dim)
    _same("n_heads (num_heads)", ours.n_heads, theirs.num_heads)
    if theirs.in_proj_weight is None:
        raise ValueError("PyTorch's MultiheadAttention has separate kdim/vdim projections; expected one in_proj_weight")
    if theirs.bias_k is not None or theirs.add_zero_attn:
        raise ValueError("PyTorch's MultiheadAttention adds bias_k/bias_v or zero attention, which ours has not")
    q, k, v = ours.linear_query, ours.linear_key, ours.linear_value
    _copy_param(torch.cat([q.weight, k.weight, v.weight]), theirs.in_proj_weight, "in_proj_weight")  # (3d, d)
    _copy_param(torch.cat([q.bias, k.bias, v.bias]), theirs.in_proj_bias, "in_proj_bias")  # (3d,)
    _copy_linear(ours.linear_out, theirs.out_proj, "out_proj")


def _copy_layer(ours, theirs):
    """An encoder or decoder layer: the attentions, the feed-forward network, the wrappers' norms in order."""
    _same("norm_first", ours.norm_first, theirs.norm_first)
    _same("ff_units (dim_feedforward)", ours.ff_units, theirs.linear1.out_features)
    activation = theirs.activation
    relu = activation is F.relu or isinstance(activation, nn.ReLU)
    _same("activation", "relu", "relu" if relu else getattr(activation, "__name__", type(activation).__name__))
    _copy_mha(ours.self_attn_heads, theirs.self_attn)
    if hasattr(ours, "cross_attn_heads"):
        _copy_mha(ours.cross_attn_heads, theirs.multihead_attn)
    _copy_linear(ours.ffn[0], theirs.linear1, "linear1")
    _copy_linear(ours.ffn[3], theirs.linear2, "linear2")
    for i, wrapper in enumerate(ours.sublayers, start=1):
        _copy_norm(wrapper.norm, getattr(theirs, f"norm{i}"), f"norm{i}")


def _copy_stack(ours, theirs):
    stack = "decoder" if isinstance(theirs, nn.TransformerDecoder) else "encoder"
    _same(f"number of {stack} layers", len(ours.layers), len(theirs.layers))
    _same("final norm", "none" if ours.norm is None else "one", "none" if theirs.norm is None else "one")
    for our_layer, their_layer in zip(ours.layers, theirs.layers):
        _copy_layer(our_layer, their_layer)
    if ours.norm is not None:
        _copy_norm(ours.norm, theirs.norm, "final norm")


def _copy_model(ours, theirs):
    if theirs.norm is not None:
        raise ValueError("the TransformerModel normalises its encoded inputs (the book's input LayerNorm), "
                         "which EncoderDecoderTransf does not; build it with input_norm=False")
    for what in ("input_len", "target_len", "n_features"):
        _same(what, getattr(ours, what), getattr(theirs, what))
    for stack in (ours.encoder, ours.decoder):
        _same("positional encoding scale_input", stack.pe.scale_input, theirs.pe.scale_input)
    _copy_stack(ours.encoder, theirs.transf.encoder)
    _copy_stack(ours.decoder, theirs.transf.decoder)
    _copy_linear(ours.proj, theirs.proj, "proj")
    _copy_linear(ours.linear, theirs.linear, "linear")


# (our type, PyTorch's type, copier); checked in order, so subclasses still match
_PAIRS = [
    (NarrowMultiHeadAttention, nn.MultiheadAttention, _copy_mha),
    (EncoderLayer, nn.TransformerEncoderLayer, _copy_layer),
    (DecoderLayer, nn.TransformerDecoderLayer, _copy_layer),
    (EncoderTransf, nn.TransformerEncoder, _copy_stack),
    (DecoderTransf, nn.TransformerDecoder, _copy_stack),
    (EncoderDecoderTransf, TransformerModel, _copy_model),
]


def copy_to_torch(ours, theirs):
    """Copy our module's weights into its PyTorch counterpart (see ``_PAIRS``), in place; returns ``theirs``.

    Afterwards, in eval mode, both compute the same outputs for the same masks in each
    convention; our stacks add the positional encoding, PyTorch's do not (``ours(x)`` equals
    ``theirs(ours.pe(x))``). ``EncoderDecoderTransf`` needs ``final_norm=True`` and the
    ``TransformerModel`` ``input_norm=False``. Raises ``TypeError`` for a wrong pair, ``ValueError``
    when sizes, heads, feed-forward units, norms, layers or activation differ."""
    for our_type, their_type, copier in _PAIRS:
        if isinstance(ours, our_type):
            if not isinstance(theirs, their_type):
                raise TypeError(f"copy_to_torch copies a {type(ours).__name__} into a {their_type.__name__}, "
                                f"got a {type(theirs).__name__}")
            with torch.no_grad():
                copier(ours, theirs)
            return theirs
    known = ", ".join(t.__name__ for t, _, _ in _PAIRS)
    raise TypeError(f"copy_to_torch copies one of {known}; got a {type(ours).__name__} (into a {type(theirs).__name__})")
