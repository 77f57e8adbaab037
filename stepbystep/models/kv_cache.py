"""The KV cache: keys and values kept from one generation step to the next.

When a decoder-only model writes one token at a time, the keys and values of the tokens it has
already read do not change: causal attention never lets an old token see a new one. So each
attention layer can keep them (the *cache*) and, for a new token, project only that token's
query, key and value, append the key and value to the cache, and compute one row of attention.
Without the cache every step runs the whole sequence through the model again. The decoder of an
encoder-decoder (chapters 07-08) keeps its self-attention's keys and values the same way
(``cached_decoder_layer``); its cross-attention reads the encoder's states, projected once.

One new token makes tiny tensors: a step's cost is then mostly Python (module calls, attribute
lookups), not arithmetic. So ``cached_layer`` computes a layer with ``torch.nn.functional`` on
the parameters the cache gathered at the first step (``LayerTensors``), and without gradients
it projects queries, keys and values with one stacked matrix.
"""
import functools
import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_positive_int
from .masks import subsequent_mask
from .scaled_dot_product import masked_softmax

__all__ = ["KVCache", "cached_decoder_layer", "cached_layer", "cached_mask", "cached_self_attention"]


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
        self.length = 0
        self.padded = False
        self.own_ids = False
        self._batch = None  # (N, device) of the first tokens: every step must bring N rows
        self._keep = None  # (N, t) bool, kept only once some token is padding: until then all are real
        self._tensors = [None] * n_layers  # each layer's LayerTensors, gathered at its first step

    @property
    def keep(self):
        """``(N, t)`` bool, ``True`` for the real tokens; ``None`` while the cache is empty."""
        if self._keep is not None or self._batch is None:
            return self._keep
        n, device = self._batch
        return torch.ones(n, self.length, dtype=torch.bool, device=device)  # (N, t): no padding yet

    @property
    def n_real(self):
        """``(N,)`` how many real (not padding) tokens each row holds; ``None`` when empty."""
        keep = self.keep
        return None if keep is None else keep.sum(dim=1)

    def add_tokens(self, keep, padded=None):
        """Start a step: record which new tokens are real, ``keep`` ``(N, L_new)``.

        Returns whether the cache (with them) holds any padding; ``padded`` says whether the
        new tokens do, when the caller knows. Every layer then calls ``append``. While no token
        is padding the cache only counts them; the first padding makes it keep ``keep``.
        """
        if self._batch is not None and self._batch[0] != keep.shape[0]:
            raise ValueError(f"the cache holds {self._batch[0]} sequences, the new tokens "
                             f"{keep.shape[0]}: use one cache per batch")
        padded = not bool(keep.all()) if padded is None else padded
        if padded or self._keep is not None:
            earlier = self.keep
            self._keep = keep if earlier is None else torch.cat([earlier, keep], dim=1)  # (N, t)
        self._batch = (keep.shape[0], keep.device)
        self.length += keep.shape[1]
        self.padded = self.padded or padded
        return self.padded

    def layer_tensors(self, index, layer):
        """``LayerTensors.of(layer)``, gathered at entry ``index``'s first step and reused (gathered
        again for another layer or when gradients were switched on or off since)."""
        tensors = self._tensors[index]
        if tensors is None or tensors.layer is not layer or tensors.grad != torch.is_grad_enabled():
            tensors = self._tensors[index] = LayerTensors.of(layer)
        return tensors

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


class AttentionTensors(NamedTuple):
    """What a cached attention step reads from a ``MultiHeadedAttention``: its module (for
    ``n_heads``, ``d_k``, ``store_alphas``, ``training`` and dropout), the ``(weight, bias)``
    of its four projections and its rotary embedding (or ``None``).

    ``qkv``: without gradients (generation), the query, key and value projections stacked into
    one ``(3 d_model, d_model)`` weight and one bias, so that a step projects once instead of
    three times; ``None`` when gradients are on (each step must reach the parameters).
    """

    module: nn.Module
    query: tuple
    key: tuple
    value: tuple
    out: tuple
    rotary: object
    qkv: tuple

    @classmethod
    def of(cls, attention):
        linears = (attention.linear_query, attention.linear_key, attention.linear_value, attention.linear_out)
        query, key, value, out = ((linear.weight, linear.bias) for linear in linears)
        qkv = None
        if not torch.is_grad_enabled():
            qkv = tuple(torch.cat(parts) for parts in zip(query, key, value))  # (3 d_model, d_model), (3 d_model,)
        return cls(attention, query, key, value, out, attention.rotary, qkv)


class LayerTensors(NamedTuple):
    """What a cached step reads from a ``DecoderOnlyLayer``, looked up once per cache.

    A module's parameters and submodules are found through ``nn.Module.__getattr__``, a
    Python call each: a layer step reads two dozen of them, which at one token per step costs
    as much as its arithmetic. The cache gathers them at a layer's first step and reuses them
    for as long as the grad mode stays the same (``grad``). A cache belongs to one model and
    one generation: its keys and values were computed with the weights as they were.

    Norms are ``(normalized_shape, weight, bias, eps)``, linears ``(weight, bias)``;
    ``dropout`` the probabilities of the attention wrapper, the hidden layer and the
    feed-forward wrapper; ``norm_first`` the wrappers' placement.
    """

    layer: nn.Module
    attention: AttentionTensors
    attend_norm: tuple
    feed_norm: tuple
    hidden: tuple
    out: tuple
    dropout: tuple
    norm_first: bool
    grad: bool

    @classmethod
    def of(cls, layer):
        attend, feed = layer.sublayers
        first, _, drop, last = layer.ffn  # feed_forward's Linear, ReLU, Dropout, Linear
        norms = [(norm.normalized_shape, norm.weight, norm.bias, norm.eps) for norm in (attend.norm, feed.norm)]
        return cls(layer, AttentionTensors.of(layer.self_attn_heads), *norms, (first.weight, first.bias),
                   (last.weight, last.bias), (attend.drop.p, drop.p, feed.drop.p), attend.norm_first,
                   torch.is_grad_enabled())


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
    return _attend(AttentionTensors.of(attention), x, cache, layer, mask, bias, positions)


def _attend(tensors, x, cache, layer, mask, bias, positions):
    """``cached_self_attention`` on gathered ``AttentionTensors``."""
    attention, rotary = tensors.module, tensors.rotary
    n, length, heads, d_k = x.shape[0], x.shape[1], attention.n_heads, attention.d_k

    def chunks(projection):  # (N, L_new, d_model) -> (N, h, L_new, d_k), as make_chunks
        return F.linear(x, *projection).view(n, length, heads, d_k).transpose(1, 2)

    if tensors.qkv is not None:  # one projection for the three: (N, L_new, 3 d_model) -> 3 x (N, h, L_new, d_k)
        stacked = F.linear(x, *tensors.qkv).view(n, length, 3, heads, d_k)  # (N, L_new, 3, h, d_k)
        query, new_keys, new_values = stacked.permute(2, 0, 3, 1, 4).unbind(0)  # (N, h, L_new, d_k) each
    else:
        query, new_keys, new_values = chunks(tensors.query), chunks(tensors.key), chunks(tensors.value)
    if rotary is not None:
        query, new_keys = rotary(query, positions), rotary(new_keys, positions)  # (N, h, L_new, d_k)
    keys, values = cache.append(layer, new_keys, new_values)  # (N, h, t, d_k) each
    if bias is not None:
        bias = bias.to(query.dtype)  # (1 or N, h, L_new, t)
    dropout_p = attention.dropout.p if attention.training else 0.0
    if mask is None and not attention.store_alphas:  # nothing to mask: PyTorch's fused kernel, same result
        context = F.scaled_dot_product_attention(query, keys, values, attn_mask=bias,
                                                 dropout_p=dropout_p)  # (N, h, L_new, d_k)
    else:
        scores = query @ keys.transpose(-2, -1) / math.sqrt(d_k)  # (N, h, L_new, t)
        if bias is not None:
            scores = scores + bias  # (N, h, L_new, t)
        mask = None if mask is None else mask.unsqueeze(1)  # (N or 1, 1, L_new, t): one mask for every head
        weights = _dropout(masked_softmax(scores, mask), dropout_p)  # (N, h, L_new, t)
        context = weights @ values  # (N, h, L_new, d_k)
    merged = context.transpose(1, 2).reshape(n, length, heads * d_k)  # (N, L_new, d_model): the heads side by side
    return F.linear(merged, *tensors.out)  # (N, L_new, d_model)


def cached_layer(layer, x, cache, index, mask=None, bias=None, positions=None):
    """A ``DecoderOnlyLayer`` on the new tokens with a cache: ``(N, L_new, d_model)`` in and out.

    What the layer computes through its modules (a ``SubLayerWrapper`` around
    ``cached_self_attention``, then one around the feed-forward network), written with
    ``torch.nn.functional`` on the layer's parameters as the cache gathered them
    (``LayerTensors``): at one new token per step the arithmetic is tiny, and the layer's
    module calls and lookups (wrappers, norms, projections, dropouts) would cost more than it
    does. ``index`` is the layer's entry in ``cache``; ``mask``, ``bias`` and ``positions`` are
    as in ``cached_self_attention``. Dropout follows ``layer.training``, as the modules' would.
    """
    tensors = cache.layer_tensors(index, layer)
    training = layer.training
    attend_p, hidden_p, feed_p = tensors.dropout if training else (0.0, 0.0, 0.0)
    norm_first = tensors.norm_first
    inner = F.layer_norm(x, *tensors.attend_norm) if norm_first else x  # (N, L_new, d_model)
    x = x + _dropout(_attend(tensors.attention, inner, cache, index, mask, bias, positions), attend_p)
    if not norm_first:
        x = F.layer_norm(x, *tensors.attend_norm)
    inner = F.layer_norm(x, *tensors.feed_norm) if norm_first else x  # (N, L_new, d_model)
    hidden = _dropout(F.relu(F.linear(inner, *tensors.hidden)), hidden_p)  # (N, L_new, ff_units)
    x = x + _dropout(F.linear(hidden, *tensors.out), feed_p)  # (N, L_new, d_model)
    return x if norm_first else F.layer_norm(x, *tensors.feed_norm)


def cached_decoder_layer(layer, x, cache, index, source_mask=None, mask=None):
    """An encoder-decoder ``DecoderLayer`` on the new target tokens with a cache.

    ``x`` ``(N, L_new, d_model)`` in and out. The layer's own wrappers run as in its
    ``forward``: the self-attention is ``cached_self_attention`` (the new tokens' keys and
    values join the cache at entry ``index``; ``mask`` as from ``cached_mask``), the
    cross-attention reads the encoder states its ``init_keys`` projected once, and the
    feed-forward network sees only the new rows. Decoding batches of texts is arithmetic on
    large tensors, so plain module calls cost little here.
    """
    attend, cross, feed = layer.sublayers
    self_attention = functools.partial(cached_self_attention, layer.self_attn_heads, cache=cache, layer=index,
                                       mask=mask)
    x = attend(x, sublayer=self_attention)  # (N, L_new, d_model)
    x = cross(x, sublayer=layer.cross_attn_heads, mask=source_mask)  # (N, L_new, d_model)
    return feed(x, sublayer=layer.ffn)  # (N, L_new, d_model)


def _dropout(x, p):
    """Dropout in training mode (``p`` is 0 in eval mode: ``x`` as it is, no call)."""
    return F.dropout(x, p, training=True) if p > 0 else x
