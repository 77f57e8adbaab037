"""A decoder-only Transformer (the GPT family): one causal stack that reads and writes one stream.

An encoder-decoder (chapters 05-08) reads a source with its encoder and writes a target with
its decoder, whose cross-attention reads the encoder's states. A decoder-only model has no
source apart from the stream itself: the prompt and the answer are one sequence of tokens,
and the model predicts every next token from the ones before it (Radford et al. 2018, 2019).
"""
import functools

import torch
from torch import nn

from ..data.special_tokens import IGNORE_INDEX
from ..devices import evaluating
from .kv_cache import KVCache, cached_mask, cached_self_attention
from .layers import EncoderLayer
from .masks import subsequent_mask
from .metrics import sequence_cross_entropy
from .positional_encoding import PositionalEncoding

__all__ = ["DecoderOnlyLayer", "DecoderOnlyTransformer", "IGNORE_INDEX", "completion_loss"]


class DecoderOnlyLayer(EncoderLayer):
    """One layer of a decoder-only model: causal self-attention, then a feed-forward network.

    Built like ``EncoderLayer`` (``MultiHeadedAttention`` and ``feed_forward``, each in a
    ``SubLayerWrapper``): the two sublayers are the same, only the mask differs. It is not a
    ``DecoderLayer``: that one has a cross-attention sublayer that reads an encoder's states,
    and a decoder-only model has no encoder, nothing to attend to but the stream itself. What
    makes it a *decoder* is the causal mask its caller passes: every position reads only itself
    and the positions before it.

    ``forward(x, mask=None, cache=None, layer=0)``: ``x`` ``(N, L, d_model)``; ``mask`` the
    keep-mask ``(N or 1, L, L)`` (causal and, where there is padding, no padding keys). With a
    ``KVCache``, ``x`` holds only the new tokens and ``mask`` is ``(N or 1, L, t)`` over every
    token the cache holds, or ``None`` when all of them may be read (``cached_mask``); the
    self-attention reads and extends the cache's entry ``layer``.
    Returns ``(N, L, d_model)``.
    """

    def forward(self, x, mask=None, cache=None, layer=0):
        if cache is None:
            return super().forward(x, mask)  # (N, L, d_model)
        step = functools.partial(cached_self_attention, self.self_attn_heads, cache=cache, layer=layer, mask=mask)
        att = self.sublayers[0](x, sublayer=step)  # (N, L, d_model)
        return self.sublayers[1](att, sublayer=self.ffn)  # (N, L, d_model)


class DecoderOnlyTransformer(nn.Module):
    """A decoder-only Transformer over token ids: ids in, next-token logits out.

    Token embedding plus sinusoidal positional encoding, ``n_layers`` ``DecoderOnlyLayer``
    (norm-first by default), a final ``LayerNorm`` (norm-first layers leave the residual
    stream un-normalised; norm-last layers end with a norm and get none) and an output layer
    giving one logit per vocabulary entry at every position.

    Args:
        vocab_size: number of token ids (special tokens included).
        d_model, n_heads, ff_units, n_layers, dropout, norm_first: the layers' sizes, as in
            ``EncoderLayer``.
        max_len: the longest stream the model reads (its positional encoding's length).
        pad_id: the padding id. Padding is never attended to, and each row's positions count
            its real tokens only, so a prompt padded on the left gets the same positions as on
            its own (``generate`` relies on it). ``None``: no padding, positions ``0..L-1``.
        tie_weights: the output layer uses the token embedding's matrix as its weight (Press
            and Wolf 2017, "Using the Output Embedding to Improve Language Models"): ``V x
            d_model`` parameters fewer. A logit is then the dot product of the final state with
            a token's embedding; with ``nn.Embedding``'s standard deviation of 1 and a final norm
            of unit variance, the logits would start with a standard deviation of ``√d_model``
            (8 for 64): pass a smaller ``embedding_std`` with tied weights.
        embedding_std: draw the embedding from ``N(0, embedding_std²)`` instead of PyTorch's
            ``N(0, 1)`` (as ``TokenTransformer``). Whatever the size, the embedding is never
            multiplied by ``√d_model``: the sinusoidal positions (values in [-1, 1]) would drown.
            Smaller embeddings make the positions relatively louder.
        store_alphas: ``True`` keeps every layer's attention weights in
            ``layers[i].self_attn_heads.alphas`` (the teaching path); ``False`` (default) uses
            the fused kernel. Both compute the same outputs.

    ``forward(ids, cache=None)``: ``ids`` ``(N, L)`` integer ids -> logits ``(N, L, V)``;
    position ``i``'s logits predict token ``i + 1`` from tokens ``0..i`` (causal). With a
    ``KVCache`` (``new_cache()``), ``ids`` are only the new tokens; the cache holds the earlier
    ones and gets these appended.
    """

    def __init__(self, vocab_size, d_model=64, n_heads=4, ff_units=128, n_layers=2, dropout=0.1, max_len=64,
                 pad_id=0, norm_first=True, tie_weights=True, embedding_std=None, store_alphas=False):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("n_layers", n_layers),
                            ("max_len", max_len)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if pad_id is not None and not (isinstance(pad_id, int) and not isinstance(pad_id, bool)
                                       and 0 <= pad_id < vocab_size):
            raise ValueError(f"pad_id must be None or an id in 0..{vocab_size - 1}, got {pad_id!r}")
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.n_layers = n_layers
        self.max_len = max_len
        self.pad_id = pad_id
        self.norm_first = bool(norm_first)
        self.tie_weights = bool(tie_weights)
        self.embed = nn.Embedding(vocab_size, d_model)
        if embedding_std is not None:
            if isinstance(embedding_std, bool) or not isinstance(embedding_std, (int, float)) or not embedding_std > 0:
                raise ValueError(f"embedding_std must be None or a positive number, got {embedding_std!r}")
            nn.init.normal_(self.embed.weight, std=embedding_std)
        self.pe = PositionalEncoding(max_len, d_model, scale_input=False)
        self.layers = nn.ModuleList([
            DecoderOnlyLayer(n_heads, d_model, ff_units, dropout, norm_first=norm_first, store_alphas=store_alphas)
            for _ in range(n_layers)
        ])
        self.norm = nn.LayerNorm(d_model) if self.norm_first else None
        self.output = nn.Linear(d_model, vocab_size)
        if self.tie_weights:
            self.output.weight = self.embed.weight  # one (V, d_model) matrix, two uses

    def new_cache(self):
        """An empty ``KVCache`` for this model's layers."""
        return KVCache(self.n_layers)

    def _check_ids(self, ids, cache):
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache (model.new_cache()) or None, got {type(cache).__name__}")
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"ids must be a tensor of token ids (N, L), got {type(ids).__name__}")
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            raise TypeError(f"ids must hold integer token ids (e.g. torch.long), got dtype {ids.dtype}")
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ValueError(f"ids must have shape (N, L) with L >= 1, got {tuple(ids.shape)}")
        seen = 0 if cache is None else cache.length
        if seen + ids.shape[1] > self.max_len:
            held = "" if cache is None else f" after the {seen} tokens in the cache"
            raise ValueError(f"{ids.shape[1]} tokens{held} make a stream of {seen + ids.shape[1]}, "
                             f"more than the model's max_len={self.max_len}")
        low, high = (int(value) for value in torch.aminmax(ids))
        if low < 0 or high >= self.vocab_size:
            raise ValueError(f"ids hold values from {low} to {high}; this model has ids 0..{self.vocab_size - 1}")

    def _keep(self, ids):
        """``(N, L)`` bool, ``True`` for the real tokens, and whether any token is padding."""
        if self.pad_id is None:
            return torch.ones_like(ids, dtype=torch.bool), False
        keep = ids != self.pad_id  # (N, L)
        return keep, not bool(keep.all())

    def embed_tokens(self, ids, keep, earlier=0):
        """Token embedding plus the encoding of each token's position, ``(N, L, d_model)``.

        A token's position is the number of real tokens before it in its row: ``earlier``
        (an int, or ``(N,)`` counts from a cache) plus those among ``ids`` before it. Padding
        does not move the positions. ``keep`` ``(N, L)`` marks the real tokens; ``None`` means
        there is no padding, so the positions are simply ``earlier .. earlier + L - 1``.
        """
        embedded = self.embed(ids)  # (N, L, d_model)
        if keep is None and isinstance(earlier, int):
            return embedded + self.pe.pe[:, earlier:earlier + ids.shape[1]].to(embedded.dtype)  # (N, L, d_model)
        if keep is None:
            keep = torch.ones_like(ids, dtype=torch.bool)
        positions = keep.long().cumsum(dim=1) - 1  # (N, L): real tokens before, this one excluded
        if isinstance(earlier, torch.Tensor):
            earlier = earlier.unsqueeze(1)  # (N, 1)
        positions = (positions + earlier).clamp(min=0)  # leading padding: position 0, never read
        return embedded + self.pe.pe[0, positions].to(embedded.dtype)  # (N, L, d_model)

    def logits(self, states):
        """The output layer: states ``(N, L, d_model)`` -> logits ``(N, L, V)``."""
        return self.output(states)

    def forward(self, ids, cache=None):
        self._check_ids(ids, cache)
        keep, padded = self._keep(ids)  # (N, L), bool
        length = ids.shape[1]
        if cache is None:
            x = self.embed_tokens(ids, keep if padded else None)  # (N, L, d_model)
            mask = subsequent_mask(length, device=ids.device)  # (1, L, L)
            if padded:
                mask = mask & keep.unsqueeze(1)  # (N, L, L): no padding keys
            for layer in self.layers:
                x = layer(x, mask)  # (N, L, d_model)
        else:
            earlier = cache.n_real if cache.padded else cache.length  # (N,) counts, or one int
            padded = cache.add_tokens(keep, padded)  # now: any padding in the whole stream?
            x = self.embed_tokens(ids, keep if padded else None, earlier)  # (N, L, d_model)
            mask = cached_mask(cache.keep if padded else None, length, cache.length)  # (N or 1, L, t) or None
            for index, layer in enumerate(self.layers):
                x = layer(x, mask, cache=cache, layer=index)  # (N, L, d_model)
        if self.norm is not None:
            x = self.norm(x)
        return self.logits(x)  # (N, L, V)

    def attention_weights(self, ids, layer=-1):
        """The self-attention weights of one layer for ``ids`` ``(N, L)``: ``(N, n_heads, L, L)``.

        Runs the model once on the teaching path (``store_alphas``) in eval mode, without
        gradients, and restores both afterwards. Row ``i`` is how much position ``i`` (which
        predicts token ``i + 1``) reads each earlier token; rows sum to 1.
        """
        attention = self.layers[layer].self_attn_heads
        stored = attention.store_alphas
        attention.store_alphas = True
        try:
            with evaluating(self):
                self(ids)
            return attention.alphas
        finally:
            attention.store_alphas = stored

    def extra_repr(self):
        return (f"vocab_size={self.vocab_size}, max_len={self.max_len}, pad_id={self.pad_id}, "
                f"tie_weights={self.tie_weights}")


def completion_loss(logits, targets, label_smoothing=0.0):
    """Mean cross-entropy over the targets that count: logits ``(N, L, V)``, targets ``(N, L)``.

    Targets equal to ``IGNORE_INDEX`` (-100) add nothing: padding, and, for a completion-only
    loss, every position whose next token belongs to the prompt. ``label_smoothing`` is
    ``F.cross_entropy``'s (Szegedy et al. 2016): the target gets ``1 - ε + ε/V`` of the
    probability, every other token ``ε/V``.
    """
    return sequence_cross_entropy(logits, targets, pad_id=IGNORE_INDEX, label_smoothing=label_smoothing)
