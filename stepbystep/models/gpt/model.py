"""A decoder-only Transformer (chapter 09): one causal stack reads the prompt and writes the answer
as one stream of tokens, each predicted from the ones before it (the GPT family)."""
import torch
import torch.nn.functional as F
from torch import nn

from ...checks import check_ids, check_instance
from ...data.special_tokens import IGNORE_INDEX
from ...devices import evaluating
from ..attention.latent import LatentAttention
from ..attention.narrow import keeping_weights
from ..blocks.kv_cache import KVCache
from ..blocks.layers import EncoderLayer
from ..blocks.window_cache import WindowedKVCache
from ..metrics import sequence_cross_entropy
from ..mixture_of_experts import load_balancing_loss
from ..norms import make_norm
from ..positions.alibi import alibi_bias_at, alibi_slopes
from ..positions.learned import LearnedPositionalEmbedding
from ..positions.rotary import RotaryEmbedding
from ..positions.sinusoidal import PositionalEncoding
from .config import POSITION_SCHEMES, DecoderConfig

__all__ = ["DecoderOnlyLayer", "DecoderOnlyTransformer", "IGNORE_INDEX", "POSITION_SCHEMES", "completion_loss"]


class DecoderOnlyLayer(EncoderLayer):
    """A decoder-only layer: an ``EncoderLayer`` (no encoder to read) under a causal mask, whose
    attention may rotate its queries and keys (``rotary``, RoPE); ``options``: ``_Layer``'s."""

    def __init__(self, n_heads, d_model, ff_units, dropout=0.1, norm_first=True, store_alphas=True, rotary=None,
                 **options):
        super().__init__(n_heads, d_model, ff_units, dropout, norm_first=norm_first, store_alphas=store_alphas, **options)
        self.self_attn_heads.set_rotary(rotary)


class DecoderOnlyTransformer(nn.Module):
    """A decoder-only Transformer over token ids: ids ``(N, L)`` in, next-token logits ``(N, L, V)`` out.
    Token embedding, positions (``position_scheme``), ``n_layers`` ``DecoderOnlyLayer``, a final norm
    (norm-first layers only) and the output layer ``head``.

    ``DecoderOnlyTransformer(vocab_size, **settings)`` or ``DecoderOnlyTransformer(config)``: the
    settings are ``DecoderConfig``'s fields, with its defaults, kept in ``config``.
    ``forward(ids, cache=None)``: with a ``KVCache`` (``new_cache()``), ``ids`` are only the new tokens."""

    def __init__(self, vocab_size, **settings):
        super().__init__()
        is_config = isinstance(vocab_size, DecoderConfig)
        c = self.config = vocab_size.replace(**settings) if is_config else DecoderConfig(vocab_size, **settings)
        self.vocab_size, self.d_model, self.n_layers, self.max_len = c.vocab_size, c.d_model, c.n_layers, c.max_len
        self.position_scheme, self.pad_id = c.position_scheme, c.pad_id
        self.norm_first, self.tie_weights = bool(c.norm_first), bool(c.tie_weights)
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        if c.embedding_std is not None:
            nn.init.normal_(self.embed.weight, std=c.embedding_std)
        self.pe = None  # what is added to the embeddings, if anything
        self.rotary = None
        if c.position_scheme == "sinusoidal":
            self.pe = PositionalEncoding(c.max_len, c.d_model, scale_input=False)
        elif c.position_scheme == "learned":
            self.pe = LearnedPositionalEmbedding(c.max_len, c.d_model)
        elif c.position_scheme == "alibi":
            self.register_buffer("alibi_slopes", alibi_slopes(c.n_heads), persistent=False)  # (n_heads,)
        elif c.position_scheme == "rope" and c.kv_latent_dim is not None:  # only the decoupled part turns
            self.rotary = RotaryEmbedding(c.latent_sizes()["rope_head_dim"], c.rope_base, c.max_len, c.rope_pairing)
        elif c.position_scheme == "rope" and c.d_model % c.n_heads == 0:  # (an indivisible d_model: the layers refuse it)
            self.rotary = RotaryEmbedding(c.d_model // c.n_heads, c.rope_base, c.max_len, c.rope_pairing)
        self.layers = nn.ModuleList([self.make_layer(c) for _ in range(c.n_layers)])
        final_norm = self.norm_first or c.norm_output  # else the last layer's norm ends the stream
        self.norm = make_norm(c.norm, c.d_model, c.norm_eps, c.bias) if final_norm else None
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=c.head_bias)  # the output layer
        if self.tie_weights:
            self.head.weight = self.embed.weight  # one (V, d_model) matrix, two uses

    def make_layer(self, c):
        """One layer of the stack for the settings ``c``: a ``DecoderOnlyLayer``; a subclass may build another kind."""
        latent = None
        if c.kv_latent_dim is not None:
            latent = LatentAttention(c.n_heads, c.d_model, **c.latent_sizes(), dropout=c.dropout,
                                     store_alphas=c.store_alphas, bias=c.bias)
        return DecoderOnlyLayer(c.n_heads, c.d_model, c.ff_units, c.dropout, c.norm_first, c.store_alphas, self.rotary,
                                n_kv_heads=c.n_kv_heads, bias=c.bias, mlp=c.mlp, norm=c.norm, norm_eps=c.norm_eps,
                                qk_norm=c.qk_norm, norm_output=c.norm_output, self_attention=latent,
                                n_experts=c.n_experts, experts_per_token=c.experts_per_token,
                                expert_ff_units=c.expert_ff_units, norm_topk_prob=c.norm_topk_prob)

    def aux_loss(self, pooled=False):
        """The load-balancing loss of the last forward pass (with ``n_experts``), a scalar with its
        gradient: the layers' losses summed, or ``pooled`` as ``transformers`` does (``load_balancing_loss``)."""
        return load_balancing_loss(self, pooled)

    def new_cache(self, capacity=None):
        """An empty ``KVCache`` for this model's layers (``capacity``: preallocated tokens, no gradients);
        with a ``sliding_window``, a ``WindowedKVCache``."""
        if self.config.sliding_window is None:
            return KVCache(self.n_layers, capacity=capacity)
        return WindowedKVCache(self.n_layers, self.config.sliding_window, self.config.attention_sinks, capacity)

    def embed_tokens(self, ids, positions):
        """Token embeddings plus the table rows at ``positions`` ``(N, L)`` (sinusoidal, learned): ``(N, L, d_model)``."""
        x = self.embed(ids)  # (N, L, d_model)
        if isinstance(self.pe, LearnedPositionalEmbedding):
            return x + self.pe.rows(positions).to(x.dtype)  # (N, L, d_model): positions come from the cache
        if self.pe is not None:
            return x + F.embedding(positions, self.pe.pe[0]).to(x.dtype)  # (N, L, d_model): the rows at positions
        return x

    def attention_bias(self, query_positions, key_positions):
        """ALiBi's ``-slope × distance`` the attention adds, ``(h or N, h, L_q, L_k)``; ``None`` for other schemes."""
        alibi = self.position_scheme == "alibi"
        return alibi_bias_at(self.alibi_slopes, query_positions, key_positions) if alibi else None

    def forward(self, ids, cache=None):
        if cache is not None:
            check_instance("cache", cache, KVCache, "a KVCache from model.new_cache()")
        check_ids("ids", ids, self.vocab_size, self.max_len, 0 if cache is None else cache.length)
        fresh = cache is None
        cache = self.new_cache() if fresh else cache  # without one, the whole stream is new: one code path
        positions = cache.add_tokens(ids, self.pad_id)  # (N, L): real tokens before each, padding not counted
        mask = cache.mask(ids.shape[1])  # (N or 1, L, t): causal, no padding keys; None: every key
        bias = self.attention_bias(positions, cache.positions)  # None, or ALiBi's (N, h, L, t)
        x = self.embed_tokens(ids, positions)  # (N, L, d_model)
        rotation = None if self.rotary is None else self.rotary.at(positions)  # RoPE's (cos, sin), once
        for layer, layer_cache in zip(self.layers, cache.layers):
            x = layer(x, mask, bias=bias, rotation=rotation, cache=None if fresh else layer_cache)
        if self.norm is not None:
            x = self.norm(x)
        return self.head(x)  # (N, L, V)

    def attention_weights(self, ids, layer_idx=-1):
        """Layer ``layer_idx``'s self-attention weights for ``ids`` ``(N, L)``: ``(N, h, L, L)``, from one
        forward pass in eval mode through the written-out attention (``keeping_weights``), both restored."""
        attention = self.layers[layer_idx].self_attn_heads
        with keeping_weights(attention), evaluating(self):
            self(ids)
        return attention.alphas

    def extra_repr(self):
        return (f"vocab_size={self.vocab_size}, max_len={self.max_len}, pad_id={self.pad_id}, "
                f"tie_weights={self.tie_weights}, position_scheme={self.position_scheme!r}"
                + ("" if self.config.sliding_window is None else
                   f", sliding_window={self.config.sliding_window}, attention_sinks={self.config.attention_sinks}"))


def completion_loss(logits, targets, label_smoothing=0.0):
    """Mean cross-entropy of logits ``(N, L, V)`` over the targets ``(N, L)`` that are not
    ``IGNORE_INDEX`` (padding and, completion-only, the prompt); ``label_smoothing`` as ``F.cross_entropy``'s."""
    return sequence_cross_entropy(logits, targets, ignore_index=IGNORE_INDEX, label_smoothing=label_smoothing)
