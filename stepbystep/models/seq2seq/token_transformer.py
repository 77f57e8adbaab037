"""The Transformer for token ids: embeddings in, the course's encoder and decoder, logits out."""
import torch
from torch import nn

from ...checks import check_ids, check_instance, check_int_range, check_positive_int, check_positive_number
from ..attention.masks import padding_mask, subsequent_mask
from ..blocks.kv_cache import KVCache
from ..blocks.layers import DecoderLayer, EncoderLayer
from .stacks import DecoderTransf, EncoderTransf

__all__ = ["TokenTransformer"]


class TokenTransformer(nn.Module):
    """An encoder-decoder Transformer over token ids (chapters 07-08): the course's stacks between
    two embeddings and an output layer (``head``, one logit per target token).

    ``src_vocab_size``, ``tgt_vocab_size`` count the specials; the layers' settings are
    ``EncoderLayer``'s; ``max_len``: the longest source and decoder input. ``pad_id`` is masked in
    the source and the target (``None``: no padding masks, chapter 07 shows what they are for).
    ``scale_embeddings``: by ``√d_model``, as the paper does; off, since with ``nn.Embedding``'s
    unit variance it drowns the positions (chapter 07). ``embedding_std``: ``N(0, std²)`` embeddings.

    ``forward(source_ids (N, L_s), target_in (N, L_t))`` -> logits ``(N, L_t, tgt_vocab_size)``;
    ``encode`` -> ``(memory, source_mask)``; ``decode(target_in, memory, source_mask, cache=None)``.
    The attention weights of the last call are each layer's ``alphas`` ``(N, h, L_q, L_k)``."""

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=64, n_heads=4, ff_units=128, n_layers=2,
                 dropout=0.1, max_len=64, pad_id=0, norm_first=True, scale_embeddings=False, embedding_std=None):
        super().__init__()
        for name, value in (("src_vocab_size", src_vocab_size), ("tgt_vocab_size", tgt_vocab_size),
                            ("max_len", max_len)):
            check_positive_int(name, value)
        if pad_id is not None:
            check_int_range("pad_id", pad_id, 0, src_vocab_size - 1)  # an id of the source vocabulary, or None
        self.src_vocab_size, self.tgt_vocab_size, self.d_model = src_vocab_size, tgt_vocab_size, d_model
        self.max_len, self.pad_id = max_len, pad_id
        self.scale_embeddings = bool(scale_embeddings)
        self.src_embed = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model)
        if embedding_std is not None:
            check_positive_number("embedding_std", embedding_std)
            nn.init.normal_(self.src_embed.weight, std=embedding_std)
            nn.init.normal_(self.tgt_embed.weight, std=embedding_std)
        encoder_layer = EncoderLayer(n_heads, d_model, ff_units, dropout, norm_first=norm_first)
        decoder_layer = DecoderLayer(n_heads, d_model, ff_units, dropout, norm_first=norm_first)
        self.encoder = EncoderTransf(encoder_layer, n_layers, max_len, scale_input=self.scale_embeddings)
        self.decoder = DecoderTransf(decoder_layer, n_layers, max_len, scale_input=self.scale_embeddings)
        self.head = nn.Linear(d_model, tgt_vocab_size)  # the output layer: one logit per target token

    def source_mask(self, source_ids):
        """Keep-mask ``(N, 1, L_s)``: ``False`` at padding; ``None`` when ``pad_id`` is None."""
        return None if self.pad_id is None else padding_mask(source_ids, self.pad_id)  # (N, 1, L_s)

    def target_mask(self, target_in):
        """Keep-mask ``(N, L_t, L_t)``: causal AND not padding (``(1, L_t, L_t)`` without ``pad_id``)."""
        causal = subsequent_mask(target_in.shape[1], device=target_in.device)  # (1, L_t, L_t)
        return causal if self.pad_id is None else causal & padding_mask(target_in, self.pad_id)  # (N, L_t, L_t)

    def encode(self, source_ids):
        """The encoder's states, one per source token: ``(N, L_s)`` ids -> ``memory`` ``(N, L_s, d_model)``."""
        check_ids("source_ids", source_ids, self.src_vocab_size, self.max_len)
        embedded = self.src_embed(source_ids)  # (N, L_s, d_model)
        return self.encoder(embedded, self.source_mask(source_ids))  # (N, L_s, d_model)

    def new_cache(self):
        """An empty ``KVCache`` for ``decode(..., cache=cache)``: one entry per decoder layer."""
        return KVCache(self.decoder.n_layers, cross=True)

    def decode(self, target_in, memory, source_mask=None, cache=None):
        """Logits ``(N, L_t, tgt_vocab_size)`` for every position of ``target_in`` ``(N, L_t)``.
        With ``cache`` (``new_cache()``, one per decoding of one batch), ``target_in`` holds only
        the tokens after those the cache has seen: their keys and values join the cache, and the
        cross-attention projects ``memory`` once, at the first step."""
        if cache is not None:
            check_instance("cache", cache, KVCache, "a KVCache from model.new_cache()")
        check_ids("target_in", target_in, self.tgt_vocab_size, self.max_len, 0 if cache is None else cache.length)
        if memory.shape[0] != target_in.shape[0]:
            raise ValueError(f"memory must hold one sequence per row of target_in ({target_in.shape[0]}), "
                             f"got {memory.shape[0]}")
        embedded = self.tgt_embed(target_in)  # (N, L_t, d_model)
        if cache is None:
            target_mask = self.target_mask(target_in)  # (N or 1, L_t, L_t)
        else:
            cache.add_tokens(target_in, self.pad_id)  # (N, L_t)
            target_mask = cache.mask(target_in.shape[1])  # (N or 1, L_t, t), or None: every key
        states = self.decoder(embedded, source_mask, target_mask, memory, cache)  # (N, L_t, d_model)
        return self.head(states)  # (N, L_t, tgt_vocab_size)

    def forward(self, source_ids, target_in):
        memory = self.encode(source_ids)  # (N, L_s, d_model)
        return self.decode(target_in, memory, self.source_mask(source_ids))  # (N, L_t, tgt_vocab_size)

    def extra_repr(self):
        return f"pad_id={self.pad_id}, max_len={self.max_len}, scale_embeddings={self.scale_embeddings}"
