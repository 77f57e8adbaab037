"""The KV cache: keys and values kept from one generation step to the next.

When a decoder-only model writes one token at a time, the keys and values of the tokens it has
already read do not change: causal attention never lets an old token see a new one. So each
attention layer can keep them (the *cache*) and, for a new token, project only that token's
query, key and value, append the key and value to the cache, and compute one row of attention.
Without the cache every step runs the whole sequence through the model again.
"""
import math

import torch
import torch.nn.functional as F

from ..checks import check_positive_int
from .masks import subsequent_mask
from .scaled_dot_product import masked_softmax

__all__ = ["KVCache", "cached_mask", "cached_self_attention"]


class KVCache:
    """What a decoder-only model keeps between generation steps.

    Attributes:
        keys, values: one entry per attention layer, ``(N, n_heads, t, d_k)`` each once that
            layer has run (``None`` before), ``t`` = how many tokens the cache holds.
        keep: ``(N, t)`` bool, ``True`` for the real tokens, ``False`` for padding; the keys of
            padding are never attended to.
        padded: whether any of the ``t`` tokens is padding (if not, no mask is needed).
        length: ``t``, the number of tokens (padding included) seen so far.
        own_ids: ``False`` (default) while the next ids come from outside; ``generate`` sets it
            once the prompt is in, when every new id is one the model chose itself (an
            arg-max or a draw over its vocabulary), so the model skips checking their range.

    Build an empty one with ``model.new_cache()`` (or ``KVCache(n_layers)``) and pass it to
    the model's ``forward(ids, cache=cache)`` at every step: the model records the new tokens
    (``add_tokens``) and every layer appends their keys and values (``append``).
    """

    def __init__(self, n_layers):
        check_positive_int("n_layers", n_layers)
        self.keys = [None] * n_layers
        self.values = [None] * n_layers
        self.keep = None
        self.padded = False
        self.own_ids = False

    @property
    def length(self):
        return 0 if self.keep is None else self.keep.shape[1]

    @property
    def n_real(self):
        """``(N,)`` how many real (not padding) tokens each row holds; ``None`` when empty."""
        return None if self.keep is None else self.keep.sum(dim=1)

    def add_tokens(self, keep, padded=None):
        """Start a step: record which new tokens are real, ``keep`` ``(N, L_new)``.

        Returns whether the cache (with them) holds any padding; ``padded`` says whether the
        new tokens do, when the caller knows. Every layer then calls ``append``.
        """
        if self.keep is not None and self.keep.shape[0] != keep.shape[0]:
            raise ValueError(f"the cache holds {self.keep.shape[0]} sequences, the new tokens "
                             f"{keep.shape[0]}: use one cache per batch")
        self.keep = keep if self.keep is None else torch.cat([self.keep, keep], dim=1)  # (N, t)
        self.padded = self.padded or (not bool(keep.all()) if padded is None else padded)
        return self.padded

    def append(self, layer, keys, values):
        """Add ``layer``'s new keys and values ``(N, h, L_new, d_k)``; returns all of them so far."""
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = keys, values
        else:
            self.keys[layer] = torch.cat([self.keys[layer], keys], dim=2)  # (N, h, t, d_k)
            self.values[layer] = torch.cat([self.values[layer], values], dim=2)  # (N, h, t, d_k)
        return self.keys[layer], self.values[layer]

    def __repr__(self):
        return f"KVCache({len(self.keys)} layers, {self.length} tokens)"


def cached_mask(keep, n_new, total=None):
    """The keep-mask of the last ``n_new`` of ``total`` tokens: causal, no padding keys.

    ``keep`` ``(N, t)`` marks the real tokens (the cache's and the new ones), or is ``None``
    when none is padding (then ``total`` gives ``t``). New token ``i`` sits at index
    ``t - n_new + i``: it may read every earlier token and itself, never a later one, never
    padding. Returns ``(N or 1, n_new, t)``, or ``None`` when nothing needs masking: one new
    token and no padding (every cached token is in its past).
    """
    total = keep.shape[1] if keep is not None else total
    if n_new == 1:
        return None if keep is None else keep.unsqueeze(1)  # (N, 1, t)
    device = None if keep is None else keep.device
    causal = subsequent_mask(total, device=device)[:, total - n_new:]  # (1, n_new, t)
    return causal if keep is None else causal & keep.unsqueeze(1)  # (N or 1, n_new, t)


def cached_self_attention(attention, x, cache, layer, mask, bias=None, positions=None):
    """One self-attention step with a cache, using ``attention``'s own projections.

    ``attention`` is a ``MultiHeadedAttention``; ``x`` ``(N, L_new, d_model)`` the new tokens'
    inputs (already normalised, as the sublayer sees them); ``cache`` a ``KVCache`` and
    ``layer`` this layer's index in it; ``mask`` ``(N or 1, L_new, t)`` from ``cached_mask``,
    or ``None`` when every cached token may be read.

    Position schemes inside the attention (chapter 10): ``positions`` ``(L_new,)`` or
    ``(N, L_new)`` are the new tokens' positions; with a rotary embedding (RoPE) their queries
    and keys are rotated there, and the cache keeps the rotated keys (a key's rotation depends
    on its own position only, so it never changes). ``bias`` ``(1 or N, h, L_new, t)`` is added
    to the new rows' scores (ALiBi: ``-slope × distance`` from each new token to every cached
    one).

    Only the new tokens are projected: their queries, keys and values. The keys and values go
    into the cache; the queries attend to every cached key (``L_new`` rows of attention,
    one row when generating). Returns ``(N, L_new, d_model)``, what ``attention(x, mask)``
    would give for these rows after ``init_keys`` on the whole sequence. Written out (scores,
    masked softmax, weighted values); when there is no mask and ``attention`` uses the fused
    path (``store_alphas=False``), ``F.scaled_dot_product_attention`` computes the same, with
    ``bias`` as its additive mask.
    """
    query = attention.rotate(attention.make_chunks(attention.linear_query(x)), positions)  # (N, h, L_new, d_k)
    new_keys = attention.rotate(attention.make_chunks(attention.linear_key(x)), positions)  # (N, h, L_new, d_k)
    new_values = attention.make_chunks(attention.linear_value(x))  # (N, h, L_new, d_k)
    keys, values = cache.append(layer, new_keys, new_values)  # (N, h, t, d_k) each
    if bias is not None:
        bias = bias.to(query.dtype)  # (1 or N, h, L_new, t)
    if mask is None and not attention.store_alphas:  # nothing to mask: PyTorch's fused kernel, same result
        dropout_p = attention.dropout.p if attention.training else 0.0
        context = F.scaled_dot_product_attention(query, keys, values, attn_mask=bias,
                                                 dropout_p=dropout_p)  # (N, h, L_new, d_k)
        return attention.output_function(context)  # (N, L_new, d_model)
    scores = query @ keys.transpose(-2, -1) / math.sqrt(attention.d_k)  # (N, h, L_new, t)
    if bias is not None:
        scores = scores + bias  # (N, h, L_new, t)
    mask = None if mask is None else mask.unsqueeze(1)  # (N or 1, 1, L_new, t): one mask for every head
    weights = masked_softmax(scores, mask)  # (N, h, L_new, t)
    context = attention.dropout(weights) @ values  # (N, h, L_new, d_k)
    return attention.output_function(context)  # (N, L_new, d_model)
