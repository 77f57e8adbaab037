"""Narrow multi-headed attention: d_model split into n_heads chunks of size d_k.

``NarrowMultiHeadAttention`` is another name for ``MultiHeadedAttention`` (the same class): the
book's name differs by two letters from the wide ``MultiHeadAttention`` (alias
``WideMultiHeadAttention``), which takes the same positional arguments ``(n_heads, d_model)``
but keeps its weights in the opposite layout.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

from .masks import check_mask
from .scaled_dot_product import masked_softmax

__all__ = ["MultiHeadedAttention", "NarrowMultiHeadAttention"]


class MultiHeadedAttention(nn.Module):
    """Multi-headed attention where each head sees a ``d_k = d_model // n_heads`` chunk.

    Also available as ``NarrowMultiHeadAttention`` (the same class). Do not confuse it with the
    wide ``MultiHeadAttention`` (alias ``WideMultiHeadAttention``): same positional arguments
    ``(n_heads, d_model)``, but there every head is full-size and ``alphas`` is
    ``(n_heads, N, L_q, L_k)``, heads first; here ``alphas`` is ``(N, n_heads, L_q, L_k)``,
    batch first.

    The four projections are ``(d_model, d_model)`` whatever the number of heads: one
    projection computes every head at once and ``make_chunks`` splits its output.

    Use it in two steps, as the book does: ``init_keys(key)`` projects the keys (and values,
    from the same tensor), then ``forward(query, mask)`` attends to them. For self-attention
    pass the same tensor to both.

    Args:
        n_heads: number of heads; must divide ``d_model``.
        d_model: size of each element's vector.
        dropout: dropout probability applied to the attention weights (training only).
        store_alphas: ``True`` (the teaching path) computes the weights step by step and keeps
            them in ``self.alphas`` ``(N, n_heads, L_q, L_k)``, taken before dropout so each
            row sums to 1 (or is all zeros when every key is masked). ``False`` calls the fused
            ``F.scaled_dot_product_attention`` instead, which never materialises the weights:
            ``self.alphas`` stays ``None``. Both paths compute the same outputs in eval mode,
            including all-masked rows, whose context is zero.

    Shapes: ``key`` ``(N, L_k, d_model)``, ``query`` ``(N, L_q, d_model)``, ``mask``
    ``(1 or N, 1 or L_q, L_k)`` bool with ``True`` = may attend; output ``(N, L_q, d_model)``.
    """

    def __init__(self, n_heads, d_model, dropout=0.1, store_alphas=True):
        super().__init__()
        for name, value in (("n_heads", n_heads), ("d_model", d_model)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if d_model % n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={d_model} and n_heads={n_heads}"
            )
        self.n_heads = n_heads
        self.d_model = d_model
        self.d_k = d_model // n_heads
        self.store_alphas = store_alphas
        # creation order as in the book, so seeded constructions give the book's numbers
        self.linear_query = nn.Linear(d_model, d_model)
        self.linear_key = nn.Linear(d_model, d_model)
        self.linear_value = nn.Linear(d_model, d_model)
        self.linear_out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(p=dropout)
        self.alphas = None
        self.proj_key = None
        self.proj_value = None

    def __getstate__(self):
        # the projected keys are transient (and, when they carry a graph, cannot be
        # deep-copied): copies and pickles start without them, as after construction
        state = super().__getstate__()
        state["proj_key"] = state["proj_value"] = None
        return state

    def _check_input(self, name, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a tensor (N, L, {self.d_model}), got {type(x).__name__}")
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"{name} must have shape (N, L, {self.d_model}), got {tuple(x.shape)}")

    def make_chunks(self, x):
        """Split the last dimension into heads: ``(N, L, d_model)`` -> ``(N, n_heads, L, d_k)``."""
        batch_size, seq_len = x.shape[0], x.shape[1]
        x = x.view(batch_size, seq_len, self.n_heads, self.d_k)  # (N, L, h, d_k)
        return x.transpose(1, 2)  # (N, h, L, d_k)

    def init_keys(self, key):
        """Project ``key`` ``(N, L_k, d_model)`` into chunked keys and values ``(N, h, L_k, d_k)``."""
        self._check_input("key", key)
        self.proj_key = self.make_chunks(self.linear_key(key))  # (N, h, L_k, d_k)
        self.proj_value = self.make_chunks(self.linear_value(key))  # (N, h, L_k, d_k)

    def _check_keys(self, query):
        if self.proj_key is None:
            raise RuntimeError("no keys to attend to: call init_keys(key) before attending")
        if self.proj_key.shape[0] != query.shape[0]:
            raise ValueError(
                f"query batch size {query.shape[0]} does not match the keys' batch size "
                f"{self.proj_key.shape[0]}; call init_keys(key) with this batch"
            )

    def _project_query(self, query):
        return self.make_chunks(self.linear_query(query))  # (N, h, L_q, d_k)

    def score_function(self, query):
        """Scaled dot products of the query ``(N, L_q, d_model)`` with the keys: ``(N, h, L_q, L_k)``."""
        self._check_keys(query)
        proj_query = self._project_query(query)  # (N, h, L_q, d_k)
        dot_products = proj_query @ self.proj_key.transpose(-2, -1)  # (N, h, L_q, L_k)
        return dot_products / math.sqrt(self.d_k)  # (N, h, L_q, L_k)

    def attn(self, query, mask=None):
        """The teaching path: scores, masked softmax, dropout, weighted sum of values.

        ``mask`` is ``(1 or N, 1, 1 or L_q, L_k)`` (a head dimension already added).
        Stores ``self.alphas`` ``(N, h, L_q, L_k)`` before dropout; returns the context
        ``(N, h, L_q, d_k)``.
        """
        scores = self.score_function(query)  # (N, h, L_q, L_k)
        alphas = masked_softmax(scores, mask)  # (N, h, L_q, L_k)
        self.alphas = alphas.detach()
        alphas = self.dropout(alphas)
        return alphas @ self.proj_value  # (N, h, L_q, d_k)

    def fused_attn(self, query, mask=None):
        """The fused path with ``F.scaled_dot_product_attention``; keeps no weights.

        Rows whose keys are all masked would come out NaN (or as a uniform average) from
        the fused kernel; they attend everywhere in the kernel and are zeroed afterwards,
        which is what the teaching path gives them. Returns ``(N, h, L_q, d_k)``.
        """
        self._check_keys(query)
        proj_query = self._project_query(query)  # (N, h, L_q, d_k)
        dropout_p = self.dropout.p if self.training else 0.0
        has_key = None
        if mask is not None:
            has_key = mask.any(dim=-1, keepdim=True)  # (1 or N, 1, 1 or L_q, 1)
            mask = mask | ~has_key  # all-masked rows attend everywhere (finite)
        context = F.scaled_dot_product_attention(
            proj_query, self.proj_key, self.proj_value, attn_mask=mask, dropout_p=dropout_p
        )  # (N, h, L_q, d_k)
        if has_key is not None:
            context = context.masked_fill(~has_key, 0.0)  # (N, h, L_q, d_k)
        self.alphas = None
        return context

    def output_function(self, contexts):
        """Merge the heads ``(N, h, L_q, d_k)`` -> ``(N, L_q, d_model)``, then ``linear_out``."""
        batch_size, seq_len = contexts.shape[0], contexts.shape[2]
        merged = contexts.transpose(1, 2).contiguous()  # (N, L_q, h, d_k)
        merged = merged.view(batch_size, seq_len, self.d_model)  # (N, L_q, d_model)
        return self.linear_out(merged)  # (N, L_q, d_model)

    def forward(self, query, mask=None):
        """Attend from ``query`` ``(N, L_q, d_model)`` to the keys set by ``init_keys``.

        Returns ``(N, L_q, d_model)``.
        """
        self._check_input("query", query)
        self._check_keys(query)
        if mask is not None:
            check_mask(mask, query.shape[0], query.shape[1], self.proj_key.shape[2])
            mask = mask.bool().unsqueeze(1)  # (1 or N, 1, 1 or L_q, L_k): one mask for every head
        if self.store_alphas:
            context = self.attn(query, mask)  # (N, h, L_q, d_k)
        else:
            context = self.fused_attn(query, mask)  # (N, h, L_q, d_k)
        return self.output_function(context)  # (N, L_q, d_model)

    def extra_repr(self):
        return f"n_heads={self.n_heads}, d_model={self.d_model}, d_k={self.d_k}, store_alphas={self.store_alphas}"


# The book's name differs from the wide ``MultiHeadAttention`` by two letters; this one says what
# it is. The same class, not a subclass: isinstance checks and state dicts are shared.
NarrowMultiHeadAttention = MultiHeadedAttention
