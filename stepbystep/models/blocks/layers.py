"""The sublayer wrapper and the Transformer's encoder and decoder layers (chapters 04-05), which the
encoder-decoder stacks and the decoder-only model share."""
from torch import nn

from ...checks import check_positive_int
from ..attention.masks import keep_mask
from ..attention.narrow import NarrowMultiHeadAttention
from ..feed_forward import make_feed_forward
from ..mixture_of_experts import MixtureOfExperts
from ..norms import make_norm

__all__ = ["SubLayerWrapper", "EncoderLayer", "DecoderLayer", "feed_forward"]


def feed_forward(d_model, ff_units, dropout):
    """The position-wise feed-forward network ``(N, L, d_model) -> (N, L, d_model)``, in PyTorch's
    order (Linear, ReLU, Dropout, Linear), so ``copy_to_torch`` copies it."""
    return make_feed_forward("relu", d_model, ff_units, dropout)


class SubLayerWrapper(nn.Module):
    """A residual connection, a norm (``make_norm``'s ``norm``, ``norm_eps``, ``bias``) and dropout
    around one sublayer: norm-first (the book's) ``x + drop(sublayer(norm(x)))``, or norm-last (the
    paper's) ``norm(x + drop(sublayer(x)))``. ``norm_output`` (chapter 17) normalises the sublayer's
    output instead, ``x + drop(out_norm(sublayer(x)))`` (OLMo 2), with ``norm_first`` its input too (Gemma).

    ``forward(x, sublayer)``: ``(N, L, d_model)`` in and out; ``sublayer``: any function of one such
    tensor (a layer passes its attention as a lambda, as the Annotated Transformer does)."""

    def __init__(self, d_model, dropout, norm_first=True, norm="layernorm", norm_eps=1e-5, bias=True,
                 norm_output=False):
        super().__init__()
        self.norm_first, self.norm_output = bool(norm_first), bool(norm_output)
        self.norm = make_norm(norm, d_model, norm_eps, bias) if norm_first or not norm_output else None
        self.out_norm = make_norm(norm, d_model, norm_eps, bias) if norm_output else None
        self.drop = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        out = sublayer(self.norm(x) if self.norm_first else x)  # (N, L, d_model)
        if self.out_norm is not None:
            out = self.out_norm(out)  # (N, L, d_model)
        out = x + (self.drop(out) if self.training else out)  # eval: no call to an identity (each generated token)
        return out if self.norm_first or self.norm is None else self.norm(out)

    def extra_repr(self):
        return f"norm_first={self.norm_first}" + (", norm_output=True" if self.norm_output else "")


class _Layer(nn.Module):
    """Attention sublayers (``self_attn_heads``, then ``cross_attn_heads`` for a decoder; one module
    each, the book's names), a feed-forward network ``ffn`` and one wrapper each, created in the
    book's order. Chapter 12's options: ``n_kv_heads``, ``bias`` (projections, network, LayerNorm),
    ``mlp`` (``make_feed_forward``; kept as ``mlp_kind``), ``norm``, ``norm_eps`` (``make_norm``).
    Chapter 17's: ``qk_norm`` (``NarrowMultiHeadAttention``), ``norm_output`` (``SubLayerWrapper``),
    ``self_attention`` (a module used instead, e.g. ``LatentAttention``, under the same call) and
    ``n_experts`` (a ``MixtureOfExperts`` of ``mlp`` networks, ``expert_ff_units`` or ``ff_units``
    wide, with ``experts_per_token`` and ``norm_topk_prob``).

    One check rule for both layers: ``query`` before the first norm, every error under the caller's
    names. The encoder's ``mask`` is its attention's, checked there; the decoder checks ``memory``
    and its two masks itself (its attentions would say ``key`` and ``mask``) but on a cached step."""

    def __init__(self, n_heads, d_model, ff_units, dropout, norm_first, store_alphas, cross, n_kv_heads=None,
                 bias=True, mlp="relu", norm="layernorm", norm_eps=1e-5, qk_norm=None, norm_output=False,
                 self_attention=None, n_experts=None, experts_per_token=2, expert_ff_units=None, norm_topk_prob=True):
        super().__init__()
        for name, value in (("n_heads", n_heads), ("d_model", d_model), ("ff_units", ff_units)):
            check_positive_int(name, value)
        self.n_heads, self.d_model, self.ff_units = n_heads, d_model, ff_units
        self.norm_first, self.mlp_kind = bool(norm_first), mlp
        attention = dict(dropout=dropout, store_alphas=store_alphas, n_kv_heads=n_kv_heads, bias=bias, qk_norm=qk_norm,
                         norm_eps=norm_eps)
        self.self_attn_heads = (NarrowMultiHeadAttention(n_heads, d_model, **attention) if self_attention is None
                                else self_attention)
        if cross:
            self.cross_attn_heads = NarrowMultiHeadAttention(n_heads, d_model, **attention)
        if n_experts is None:
            self.ffn = make_feed_forward(mlp, d_model, ff_units, dropout, bias)
        else:
            self.ffn = MixtureOfExperts(d_model, expert_ff_units or ff_units, n_experts, experts_per_token, mlp, dropout,
                                        bias, norm_topk_prob)
        self.sublayers = nn.ModuleList([SubLayerWrapper(d_model, dropout, norm_first, norm, norm_eps, bias, norm_output)
                                        for _ in range(2 + cross)])


class EncoderLayer(_Layer):
    """One encoder layer: self-attention, then a feed-forward network, each wrapped. ``dropout`` acts
    on the weights, the network and the wrappers; ``norm_first``: ``SubLayerWrapper``'s;
    ``store_alphas``: ``NarrowMultiHeadAttention``'s; ``options``: ``_Layer``'s.

    ``forward(query, mask=None, bias=None, rotation=None, cache=None)``: ``(N, L, d_model)`` in and
    out; ``mask`` a bool keep-mask ``(1 or N, 1 or L, L)`` (PyTorch's masks: ``from_additive_mask``,
    ``from_torch_attn_mask``); the rest goes to the self-attention."""

    def __init__(self, n_heads, d_model, ff_units, dropout=0.1, norm_first=True, store_alphas=True, **options):
        super().__init__(n_heads, d_model, ff_units, dropout, norm_first, store_alphas, cross=False, **options)

    def forward(self, query, mask=None, bias=None, rotation=None, cache=None):
        self.self_attn_heads.check_input("query", query)
        x = self.sublayers[0](query, lambda y: self.self_attn_heads(y, mask=mask, bias=bias, rotation=rotation,
                                                                     cache=cache))  # (N, L, d_model)
        return self.sublayers[1](x, self.ffn)  # (N, L, d_model)


class DecoderLayer(_Layer):
    """One decoder layer: masked self-attention, cross-attention to the encoder's states, then a
    feed-forward network, each wrapped; ``EncoderLayer``'s arguments.

    ``forward(query, source_mask=None, target_mask=None, memory=None, cache=None, cross_cache=None)``:
    ``query`` ``(N, L_t, d_model)`` in and out; ``memory`` the encoder's states ``(N, L_s, d_model)``
    (``None`` will do with a ``cross_cache`` that holds them); ``source_mask`` ``(1 or N, 1, L_s)``;
    ``target_mask`` ``(1 or N, L_t, L_t)``; ``cache``, ``cross_cache``: the attentions' ``LayerCache``."""

    def __init__(self, n_heads, d_model, ff_units, dropout=0.1, norm_first=True, store_alphas=True):
        super().__init__(n_heads, d_model, ff_units, dropout, norm_first, store_alphas, cross=True)

    def forward(self, query, source_mask=None, target_mask=None, memory=None, cache=None, cross_cache=None):
        self._check_inputs(query, source_mask, target_mask, memory, cache, cross_cache)
        x = self.sublayers[0](query, lambda y: self.self_attn_heads(y, mask=target_mask, cache=cache))  # (N, L_t, d_model)
        x = self.sublayers[1](x, lambda y: self.cross_attn_heads(y, memory, source_mask, cache=cross_cache))
        return self.sublayers[2](x, self.ffn)  # (N, L_t, d_model)

    def _check_inputs(self, query, source_mask, target_mask, memory, cache, cross_cache):
        self.self_attn_heads.check_input("query", query)
        if cache is not None or cross_cache is not None:
            return
        if memory is None:
            raise ValueError("memory must be the encoder's states (N, L_s, d_model) for the cross-attention, got None")
        n, length = query.shape[:2]
        self.cross_attn_heads.check_input("memory", memory)
        if memory.shape[0] != n:
            raise ValueError(f"memory must hold one sequence per row of query ({n}), got shape {tuple(memory.shape)}")
        if source_mask is not None:
            keep_mask(source_mask, n, length, memory.shape[1], "source_mask")
        if target_mask is not None:
            keep_mask(target_mask, n, length, length, "target_mask")
