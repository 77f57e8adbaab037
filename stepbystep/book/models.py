"""The book's models under the book's names (Godoy, *Deep Learning with PyTorch Step-by-Step*,
chapters 9-11), behind one door.

The course's classes keep the book's class and parameter names and its creation orders, so the
book's code, its seeded numbers and its state dicts work with them unchanged (the book's stored
``pe`` table is accepted by ``PositionalEncoding``). Nothing here is new: these are the same
classes, under the names the book's code imports. The course also calls the two attention
classes by what they are: ``NarrowMultiHeadAttention`` (``MultiHeadedAttention``) and
``WideMultiHeadAttention`` (``MultiHeadAttention``).
"""
from ..models import (
    Attention,
    DecoderLayer,
    DecoderPe,
    DecoderSelfAttn,
    DecoderTransf,
    EncoderDecoderSelfAttn,
    EncoderDecoderTransf,
    EncoderLayer,
    EncoderPe,
    EncoderSelfAttn,
    EncoderTransf,
    MultiHeadAttention,
    MultiHeadedAttention,
    PatchEmbed,
    PositionalEncoding,
    SubLayerWrapper,
    TransformerModel,
    ViT,
)

__all__ = [
    "Attention",
    "MultiHeadAttention",
    "EncoderSelfAttn",
    "DecoderSelfAttn",
    "EncoderPe",
    "DecoderPe",
    "EncoderDecoderSelfAttn",
    "PositionalEncoding",
    "MultiHeadedAttention",
    "SubLayerWrapper",
    "EncoderLayer",
    "DecoderLayer",
    "EncoderTransf",
    "DecoderTransf",
    "EncoderDecoderTransf",
    "TransformerModel",
    "PatchEmbed",
    "ViT",
]
