"""A decoder-only Transformer (chapter 09): one causal stack reads the prompt and writes the answer
as one stream of tokens, each predicted from the ones before it (the GPT family)."""
import torch
import torch.nn.functional as F
from torch import nn

from ...checks import check_choice, check_instance, check_int_range, check_positive_int, check_positive_number
from ...data.special_tokens import IGNORE_INDEX
from ...devices import evaluating
from ..blocks.ids import check_ids
from ..blocks.kv_cache import KVCache
from ..blocks.layers import EncoderLayer
from ..feed_forward import MLPS
from ..metrics import sequence_cross_entropy
from ..norms import NORMS, make_norm
from ..positions.alibi import alibi_bias_at, alibi_slopes
from ..positions.learned import LearnedPositionalEmbedding
from ..positions.rotary import ROTARY_PAIRINGS, RotaryEmbedding
from ..positions.sinusoidal import PositionalEncoding

__all__ = ["DecoderOnlyLayer", "DecoderOnlyTransformer", "IGNORE_INDEX", "POSITION_SCHEMES", "completion_loss"]

POSITION_SCHEMES = ("sinusoidal", "learned", "alibi", "rope", "none")


class DecoderOnlyLayer(EncoderLayer):
    """A decoder-only layer: an ``EncoderLayer`` (no encoder to read) under a causal mask, whose
    attention may rotate its queries and keys (``rotary``, RoPE). Chapter 12's options
    (``n_kv_heads``, ``bias``, ``mlp``, ``norm``, ``norm_eps``) build today's block."""

    def __init__(self, n_heads, d_model, ff_units, dropout=0.1, norm_first=True, store_alphas=True, rotary=None,
                 **options):
        super().__init__(n_heads, d_model, ff_units, dropout, norm_first=norm_first, store_alphas=store_alphas, **options)
        self.self_attn_heads.set_rotary(rotary)


class DecoderOnlyTransformer(nn.Module):
    """A decoder-only Transformer over token ids: ids ``(N, L)`` in, next-token logits ``(N, L, V)`` out.

    Token embedding, positions (``position_scheme``), ``n_layers`` ``DecoderOnlyLayer``, a final
    ``LayerNorm`` (norm-first layers only) and the output layer ``head``.

    Args:
        vocab_size: number of token ids (specials included).
        d_model, n_heads, ff_units, n_layers, dropout, norm_first: the layers', as ``EncoderLayer``.
        max_len: the longest stream the model reads.
        pad_id: never attended to, and not counted in positions, so a prompt padded on the left
            gets the positions it has alone; ``None``: no padding.
        tie_weights: the output layer reuses the embedding matrix (Press and Wolf 2017); the
            logits then start with a standard deviation of ``√d_model``: pass a small ``embedding_std``.
        embedding_std: draw the embedding from ``N(0, embedding_std²)`` (never scaled by ``√d_model``).
        store_alphas: keep every layer's attention weights (teaching path); ``False``: fused kernel.
        position_scheme: one of ``POSITION_SCHEMES`` (chapter 10): ``"sinusoidal"`` or ``"learned"``
            tables added to the embeddings (``self.pe``); ``"alibi"`` (``-slope × distance`` on the
            scores, ``self.alibi_slopes``) or ``"rope"`` (queries and keys rotated, ``self.rotary``
            with ``rope_base``) inside the attention; ``"none"``: only the causal mask.

    Today's block (chapter 12), the defaults giving the 2017 block above:
        n_kv_heads: key and value heads, dividing ``n_heads`` (grouped-query; 1: multi-query).
        norm: ``"layernorm"`` or ``"rmsnorm"``, every norm with ``norm_eps``.
        mlp: ``"relu"``, ``"gelu"``, ``"gelu_tanh"`` (GPT-2) or ``"swiglu"`` (Llama), ``ff_units`` wide.
        bias: biases in the attention, the feed-forward network and LayerNorms; ``head_bias``: in the output layer.
        rope_pairing: ``"interleaved"`` (RoFormer's) or ``"rotate_half"`` (Hugging Face's Llama).
    ``DecoderConfig`` gathers them, with GPT-2's and Llama's settings.

    ``forward(ids, cache=None)``: with a ``KVCache`` (``new_cache()``), ``ids`` are only the new tokens.
    """

    def __init__(self, vocab_size, d_model=64, n_heads=4, ff_units=128, n_layers=2, dropout=0.1, max_len=64,
                 pad_id=0, norm_first=True, tie_weights=True, embedding_std=None, store_alphas=False,
                 position_scheme="sinusoidal", rope_base=10000.0, *, n_kv_heads=None, norm="layernorm", norm_eps=1e-5,
                 mlp="relu", bias=True, head_bias=True, rope_pairing="interleaved"):
        super().__init__()
        check_choice("position_scheme", position_scheme, POSITION_SCHEMES)
        check_choice("norm", norm, NORMS)
        check_choice("mlp", mlp, MLPS)
        check_choice("rope_pairing", rope_pairing, ROTARY_PAIRINGS)
        check_instance("head_bias", head_bias, bool, "True or False")
        check_positive_number("rope_base", rope_base)
        for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("n_layers", n_layers),
                            ("max_len", max_len)):
            check_positive_int(name, value)
        if pad_id is not None:
            check_int_range("pad_id", pad_id, 0, vocab_size - 1)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.n_layers = n_layers
        self.max_len = max_len
        self.position_scheme = position_scheme
        self.pad_id = pad_id
        self.norm_first = bool(norm_first)
        self.tie_weights = bool(tie_weights)
        self.embed = nn.Embedding(vocab_size, d_model)
        if embedding_std is not None:
            check_positive_number("embedding_std", embedding_std)
            nn.init.normal_(self.embed.weight, std=embedding_std)
        self.pe = None  # what is added to the embeddings, if anything
        self.rotary = None
        if position_scheme == "sinusoidal":
            self.pe = PositionalEncoding(max_len, d_model, scale_input=False)
        elif position_scheme == "learned":
            self.pe = LearnedPositionalEmbedding(max_len, d_model)
        elif position_scheme == "alibi":
            self.register_buffer("alibi_slopes", alibi_slopes(n_heads), persistent=False)  # (n_heads,)
        elif position_scheme == "rope":
            if d_model % n_heads == 0 and (d_model // n_heads) % 2 != 0:
                raise ValueError(f"position_scheme 'rope' needs an even d_model // n_heads (the dimensions go in "
                                 f"pairs), got d_model={d_model} and n_heads={n_heads}")
            self.rotary = RotaryEmbedding(d_model // n_heads, base=rope_base, max_len=max_len, pairing=rope_pairing) \
                if d_model % n_heads == 0 else None  # (an indivisible d_model is refused by the layers)
        self.layers = nn.ModuleList([
            self.make_layer(n_heads, d_model, ff_units, dropout, norm_first, store_alphas, n_kv_heads=n_kv_heads,
                            bias=bias, mlp=mlp, norm=norm, norm_eps=norm_eps)
            for _ in range(n_layers)
        ])
        self.norm = make_norm(norm, d_model, norm_eps, bias) if self.norm_first else None
        self.head = nn.Linear(d_model, vocab_size, bias=head_bias)  # the output layer
        if self.tie_weights:
            self.head.weight = self.embed.weight  # one (V, d_model) matrix, two uses

    def make_layer(self, n_heads, d_model, ff_units, dropout, norm_first, store_alphas, **options):
        """One layer of the stack, a ``DecoderOnlyLayer`` with chapter 12's ``options`` (``n_kv_heads``,
        ``bias``, ``mlp``, ``norm``, ``norm_eps``); a subclass may build another kind."""
        return DecoderOnlyLayer(n_heads, d_model, ff_units, dropout, norm_first=norm_first, store_alphas=store_alphas,
                                rotary=self.rotary, **options)

    def new_cache(self, capacity=None):
        """An empty ``KVCache`` for this model's layers (``capacity``: preallocated tokens, no gradients)."""
        return KVCache(self.n_layers, capacity=capacity)

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
        if self.position_scheme != "alibi":
            return None
        return alibi_bias_at(self.alibi_slopes, query_positions, key_positions)

    def logits(self, states):
        """The output layer: states ``(N, L, d_model)`` -> logits ``(N, L, V)``."""
        return self.head(states)

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
            x = layer(x, mask, bias=bias, positions=positions, cache=None if fresh else layer_cache, rotation=rotation)
        if self.norm is not None:
            x = self.norm(x)
        return self.logits(x)  # (N, L, V)

    def attention_weights(self, ids, layer_idx=-1):
        """Layer ``layer_idx``'s self-attention weights for ``ids`` ``(N, L)``: ``(N, h, L, L)``, rows
        summing to 1; one teaching-path run in eval mode without gradients, settings restored."""
        attention = self.layers[layer_idx].self_attn_heads
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
                f"tie_weights={self.tie_weights}, position_scheme={self.position_scheme!r}")


def completion_loss(logits, targets, label_smoothing=0.0):
    """Mean cross-entropy of logits ``(N, L, V)`` over the targets ``(N, L)`` that are not
    ``IGNORE_INDEX`` (padding and, completion-only, the prompt); ``label_smoothing`` as ``F.cross_entropy``'s."""
    return sequence_cross_entropy(logits, targets, ignore_index=IGNORE_INDEX, label_smoothing=label_smoothing)
