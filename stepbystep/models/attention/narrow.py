"""Narrow multi-head attention (chapter 03): ``d_model`` split into ``n_heads`` heads of
``d_k = d_model // n_heads``; later chapters add a KV cache (09), RoPE and ALiBi (10) and shared
key heads (12). The book's two steps, ``init_keys`` then ``forward(query)``, are
``stepbystep.book.MultiHeadedAttention``."""
from contextlib import contextmanager

import torch
from torch import nn

from ...checks import check_choice, check_instance, check_positive_int
from ..norms import RMSNorm
from ..positions.rotary import check_rotary
from .heads_input import HeadsInput
from .masks import keep_mask
from .scaled_dot_product import attend

__all__ = ["QK_NORMS", "NarrowMultiHeadAttention", "keeping_weights"]

QK_NORMS = ("head", "all")


class NarrowMultiHeadAttention(HeadsInput, nn.Module):
    """Multi-head attention whose heads each read a ``d_k = d_model // n_heads`` slice (the wide
    heads of ``WideMultiHeadAttention`` read all of ``d_model``).

    Args:
        n_heads: number of heads; must divide ``d_model``, the size of each element's vector.
        dropout: dropout on the attention weights (training only).
        store_alphas: keep the last call's weights in ``alphas`` ``(N, h, L_q, L_k)``; ``False``: the
            fused kernel, ``alphas`` ``None`` (the weights rule: ``scaled_dot_product``'s docstring).
        rotary: ``None`` or a ``RotaryEmbedding`` over ``d_k`` that rotates queries and keys (RoPE).
        n_kv_heads: grouped-query attention (Ainslie et al. 2023): ``n_kv_heads`` heads of keys and
            values, each read by ``n_heads // n_kv_heads`` query heads in a row; ``1``: multi-query
            (Shazeer 2019); ``None``: one per query head.
        bias: biases on the four projections (GPT-2) or not (Llama).
        qk_norm: an ``RMSNorm`` (``norm_eps``) on the queries and keys before the rotation, over each
            head's ``d_k`` (``"head"``: Qwen3, Gemma 3) or all heads at once (``"all"``: OLMo 2). It
            bounds the scores, which otherwise grow with the weights (Dehghani et al. 2023).

    ``forward(x, key=None, mask=None, bias=None, rotation=None, cache=None)``: queries from ``x``
    ``(N, L_q, d_model)``, keys and values from ``key`` ``(N, L_k, d_model)`` (``None``: ``x``);
    ``mask`` a keep-mask ``(1 or N, 1 or L_q, L_k)``; ``bias`` ``([1 or N,] h, L_q, L_k)`` added to
    the scores (ALiBi); ``rotation`` RoPE's ``(cos, sin)`` for the new tokens (``None``: after those
    a self-attention cache holds); ``cache`` a ``LayerCache``: the new keys and values join the
    earlier ones, which ``mask`` and ``bias`` cover (a static one keeps the first ``key``'s).
    Returns ``(N, L_q, d_model)``."""

    def __init__(self, n_heads, d_model, dropout=0.1, store_alphas=True, rotary=None, n_kv_heads=None, bias=True,
                 qk_norm=None, norm_eps=1e-6):
        super().__init__()
        check_positive_int("n_heads", n_heads)
        check_positive_int("d_model", d_model)
        if d_model % n_heads != 0:
            raise ValueError(f"d_model must be divisible by n_heads, got d_model={d_model} and n_heads={n_heads}")
        n_kv_heads = n_heads if n_kv_heads is None else check_positive_int("n_kv_heads", n_kv_heads)
        if n_heads % n_kv_heads != 0:
            raise ValueError(f"n_kv_heads must divide n_heads (each key head serves a whole group of query "
                             f"heads), got n_heads={n_heads} and n_kv_heads={n_kv_heads}")
        check_instance("bias", bias, bool, "True or False")
        self.n_heads, self.d_model, self.d_k = n_heads, d_model, d_model // n_heads
        self.n_kv_heads, self.groups = n_kv_heads, n_heads // n_kv_heads  # query heads per key head
        self.store_alphas = store_alphas
        self.linear_query = nn.Linear(d_model, d_model, bias=bias)
        self.linear_key = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.linear_value = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.linear_out = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(p=dropout)
        self.qk_norm = None if qk_norm is None else check_choice("qk_norm", qk_norm, QK_NORMS)
        self.q_norm = self.k_norm = None
        if qk_norm is not None:
            per_head = qk_norm == "head"
            self.q_norm = RMSNorm(self.d_k if per_head else d_model, norm_eps)
            self.k_norm = RMSNorm(self.d_k if per_head else n_kv_heads * self.d_k, norm_eps)
        self.alphas = None
        self.set_rotary(rotary)  # sets self.rotary

    def set_rotary(self, rotary):
        """Rotate queries and keys with ``rotary`` (a ``RotaryEmbedding`` over ``d_k``), or not (``None``)."""
        self.rotary = check_rotary(rotary, self.d_k, "d_k (d_model // n_heads)")

    def make_chunks(self, x):
        """Split into heads: ``(N, L, h · d_k)`` -> ``(N, h, L, d_k)`` (``h``: query or key heads)."""
        return x.view(x.shape[0], x.shape[1], -1, self.d_k).transpose(1, 2)

    def normed_chunks(self, x, norm):
        """``make_chunks`` with QK-norm's ``norm`` (``q_norm`` or ``k_norm``) over all the heads
        before the split, or over each head after it: ``(N, L, h · d_k)`` -> ``(N, h, L, d_k)``."""
        if norm is not None and self.qk_norm == "all":
            x = norm(x)  # (N, L, h · d_k)
        x = self.make_chunks(x)  # (N, h, L, d_k)
        return norm(x) if norm is not None and self.qk_norm == "head" else x

    def output_function(self, contexts):
        """Merge the heads ``(N, h, L_q, d_k)`` -> ``(N, L_q, d_model)``, then ``linear_out``."""
        return self.linear_out(contexts.transpose(1, 2).flatten(2))

    def project_keys(self, key, rotation=None):
        """Keys (turned) and values of ``key`` ``(N, L_k, d_model)``: ``(N, n_kv_heads, L_k, d_k)`` each."""
        keys = self.rotate(self.normed_chunks(self.linear_key(key), self.k_norm), rotation)  # (N, n_kv_heads, L_k, d_k)
        return keys, self.make_chunks(self.linear_value(key))

    def forward(self, x, key=None, mask=None, bias=None, rotation=None, cache=None):
        self._check_inputs(x, key)
        rotation = self.new_rotation(x, rotation, cache) if key is None else rotation  # after the cached tokens
        q = self.rotate(self.normed_chunks(self.linear_query(x), self.q_norm), rotation)  # (N, h, L_q, d_k)
        if cache is not None and cache.static and cache.keys is not None:
            k, v = cache.keys, cache.values  # cross-attention: the encoder's states, projected at the first step
        else:
            k, v = self.project_keys(x if key is None else key, rotation)  # (N, n_kv_heads, L_k, d_k) each
            if cache is not None:
                k, v = cache.extend(k, v)  # (N, n_kv_heads, t, d_k): with earlier tokens'; fills a static cache
        if mask is not None:
            mask = keep_mask(mask, q.shape[0], q.shape[2], k.shape[2])  # (1 or N, 1 or L_q, t)
        if bias is not None:
            bias = self._checked_bias(bias, q.shape[0], q.shape[2], k.shape[2]).to(q.dtype)  # ([1 or N,] h, L_q, t)
        context, alphas = attend(q, k, v, mask, bias, self.dropout, self.store_alphas)  # (N, h, L_q, d_k)
        self.alphas = None if alphas is None else alphas.detach()  # (N, h, L_q, t)
        return self.output_function(context)  # (N, L_q, d_model)

    def _check_inputs(self, x, key):
        self.check_input("x", x)
        if key is not None and key is not x:  # self-attention: one tensor, checked once
            self.check_input("key", key)
            if key.shape[0] != x.shape[0]:
                raise ValueError(f"key must hold one sequence per row of x ({x.shape[0]}), got shape {tuple(key.shape)}")

    def _checked_bias(self, bias, n, l_q, l_k):
        if not isinstance(bias, torch.Tensor) or not bias.is_floating_point():
            raise TypeError("bias must be a float tensor (h, L_q, L_k) or (1 or N, h, L_q, L_k), got "
                            f"{bias.dtype if isinstance(bias, torch.Tensor) else type(bias).__name__}")
        if bias.shape[-3:] != (self.n_heads, l_q, l_k) or bias.dim() not in (3, 4) or \
                (bias.dim() == 4 and bias.shape[0] not in (1, n)):
            raise ValueError(f"bias must have shape ({self.n_heads}, {l_q}, {l_k}) or (1 or {n}, {self.n_heads}, "
                             f"{l_q}, {l_k}), got {tuple(bias.shape)}")
        return bias

    def extra_repr(self):
        kv = "" if self.groups == 1 else f", n_kv_heads={self.n_kv_heads}"
        qk = "" if self.qk_norm is None else f", qk_norm={self.qk_norm!r}"
        return (f"n_heads={self.n_heads}{kv}, d_model={self.d_model}, d_k={self.d_k}{qk}, "
                f"store_alphas={self.store_alphas}")


@contextmanager
def keeping_weights(*attentions):
    """Run the ``with`` block with each attention keeping its weights in ``alphas`` (``store_alphas``
    on: the written-out path), then switch off again those it switched on, even after an error."""
    switched = [attention for attention in attentions if not attention.store_alphas]
    try:
        for attention in switched:
            attention.store_alphas = True
        yield
    finally:
        for attention in switched:
            attention.store_alphas = False
