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

from ..checks import check_positive_int
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
        rotary: ``None``, or a ``RotaryEmbedding`` (RoPE, Su et al. 2021, "RoFormer") that
            rotates the projected keys (in ``init_keys``) and queries (in ``forward``) at their
            positions before the scores; the values are never rotated.

    Position information inside the attention (chapter 10):

    - ``bias``: an additive score bias, ``(h, L_q, L_k)`` or ``(1 or N, h, L_q, L_k)``, added to
      the scaled scores before the softmax, as ALiBi does (Press, Smith and Lewis 2022, "Train
      Short, Test Long"). The fused path passes it to ``F.scaled_dot_product_attention`` as its
      float additive mask, with ``-inf`` where ``mask`` forbids a key.
    - ``positions``: with ``rotary``, the positions of the queries (``forward``) or of the keys
      (``init_keys``), ``(L,)`` or ``(N, L)`` integers; ``None`` means ``0 .. L-1``.

    Shapes: ``key`` ``(N, L_k, d_model)``, ``query`` ``(N, L_q, d_model)``, ``mask``
    ``(1 or N, 1 or L_q, L_k)`` bool with ``True`` = may attend; output ``(N, L_q, d_model)``.
    """

    def __init__(self, n_heads, d_model, dropout=0.1, store_alphas=True, rotary=None):
        super().__init__()
        check_positive_int("n_heads", n_heads)
        check_positive_int("d_model", d_model)
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
        self.rotary = None
        if rotary is not None:
            self.set_rotary(rotary)

    def set_rotary(self, rotary):
        """Use ``rotary`` (a ``RotaryEmbedding`` over ``d_k``, or ``None``) for queries and keys."""
        from .rotary import RotaryEmbedding  # here: rotary.py needs nothing from this module

        if rotary is not None:
            if not isinstance(rotary, RotaryEmbedding):
                raise TypeError(f"rotary must be a RotaryEmbedding or None, got {type(rotary).__name__}")
            if rotary.d_head != self.d_k:
                raise ValueError(f"rotary must rotate vectors of d_k={self.d_k} (d_model // n_heads), "
                                 f"got a RotaryEmbedding of d_head={rotary.d_head}")
        self.rotary = rotary

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

    def rotate(self, x, positions=None):
        """Projected queries or keys ``(N, h, L, d_k)`` rotated at ``positions`` (RoPE), or as they
        are when there is no ``rotary``."""
        return x if self.rotary is None else self.rotary(x, positions)  # (N, h, L, d_k)

    def init_keys(self, key, positions=None):
        """Project ``key`` ``(N, L_k, d_model)`` into chunked keys and values ``(N, h, L_k, d_k)``.

        With ``rotary``, the keys are rotated at ``positions`` (``(L_k,)`` or ``(N, L_k)``;
        ``None``: ``0 .. L_k-1``).
        """
        self._check_input("key", key)
        self.proj_key = self.rotate(self.make_chunks(self.linear_key(key)), positions)  # (N, h, L_k, d_k)
        self.proj_value = self.make_chunks(self.linear_value(key))  # (N, h, L_k, d_k)

    def _check_keys(self, query):
        if self.proj_key is None:
            raise RuntimeError("no keys to attend to: call init_keys(key) before attending")
        if self.proj_key.shape[0] != query.shape[0]:
            raise ValueError(
                f"query batch size {query.shape[0]} does not match the keys' batch size "
                f"{self.proj_key.shape[0]}; call init_keys(key) with this batch"
            )

    def _project_query(self, query, positions=None):
        return self.rotate(self.make_chunks(self.linear_query(query)), positions)  # (N, h, L_q, d_k)

    def score_function(self, query, positions=None):
        """Scaled dot products of the query ``(N, L_q, d_model)`` with the keys: ``(N, h, L_q, L_k)``.

        With ``rotary``, the projected queries are rotated at ``positions`` first.
        """
        self._check_keys(query)
        proj_query = self._project_query(query, positions)  # (N, h, L_q, d_k)
        dot_products = proj_query @ self.proj_key.transpose(-2, -1)  # (N, h, L_q, L_k)
        return dot_products / math.sqrt(self.d_k)  # (N, h, L_q, L_k)

    def attn(self, query, mask=None, bias=None, positions=None):
        """The teaching path: scores, plus ``bias``, masked softmax, dropout, weighted sum of values.

        ``mask`` is ``(1 or N, 1, 1 or L_q, L_k)`` (a head dimension already added); ``bias``
        ``None`` or ``(1 or N, h, L_q, L_k)`` added to the scaled scores (ALiBi); ``positions``
        the queries' positions for ``rotary``. Stores ``self.alphas`` ``(N, h, L_q, L_k)`` before
        dropout; returns the context ``(N, h, L_q, d_k)``.
        """
        scores = self.score_function(query, positions)  # (N, h, L_q, L_k)
        if bias is not None:
            scores = scores + bias.to(scores.dtype)  # (N, h, L_q, L_k): e.g. -slope x distance
        alphas = masked_softmax(scores, mask)  # (N, h, L_q, L_k)
        self.alphas = alphas.detach()
        alphas = self.dropout(alphas)
        return alphas @ self.proj_value  # (N, h, L_q, d_k)

    def fused_attn(self, query, mask=None, bias=None, positions=None):
        """The fused path with ``F.scaled_dot_product_attention``; keeps no weights.

        Rows whose keys are all masked would come out NaN (or as a uniform average) from
        the fused kernel; they attend everywhere in the kernel and are zeroed afterwards,
        which is what the teaching path gives them. A ``bias`` goes in as the kernel's float
        additive mask: the bias where a key may be read, ``-inf`` where ``mask`` forbids it.
        Returns ``(N, h, L_q, d_k)``.
        """
        self._check_keys(query)
        proj_query = self._project_query(query, positions)  # (N, h, L_q, d_k)
        dropout_p = self.dropout.p if self.training else 0.0
        has_key = None
        if mask is not None:
            has_key = mask.any(dim=-1, keepdim=True)  # (1 or N, 1, 1 or L_q, 1)
            mask = mask | ~has_key  # all-masked rows attend everywhere (finite)
        if bias is not None:  # one float mask: the bias where allowed, -inf where not
            bias = bias.to(proj_query.dtype)  # (1 or N, h, L_q, L_k)
            mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
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

    def _check_bias(self, bias, n, l_q, l_k):
        if not isinstance(bias, torch.Tensor) or not bias.is_floating_point():
            raise TypeError(f"bias must be a float tensor (h, L_q, L_k) or (1 or N, h, L_q, L_k), "
                            f"got {type(bias).__name__ if not isinstance(bias, torch.Tensor) else bias.dtype}")
        shape = tuple(bias.shape)
        if bias.dim() == 3:
            bias = bias.unsqueeze(0)  # (1, h, L_q, L_k)
        if bias.dim() != 4 or bias.shape[0] not in (1, n) or bias.shape[1:] != (self.n_heads, l_q, l_k):
            raise ValueError(f"bias must have shape ({self.n_heads}, {l_q}, {l_k}) or (1 or {n}, {self.n_heads}, "
                             f"{l_q}, {l_k}), got {shape}")
        return bias

    def forward(self, query, mask=None, bias=None, positions=None):
        """Attend from ``query`` ``(N, L_q, d_model)`` to the keys set by ``init_keys``.

        ``bias``: an additive score bias (ALiBi), ``(h, L_q, L_k)`` or ``(1 or N, h, L_q, L_k)``;
        ``positions``: the queries' positions for ``rotary``. Returns ``(N, L_q, d_model)``.
        """
        self._check_input("query", query)
        self._check_keys(query)
        n, l_q, l_k = query.shape[0], query.shape[1], self.proj_key.shape[2]
        if mask is not None:
            check_mask(mask, n, l_q, l_k)
            mask = mask.bool().unsqueeze(1)  # (1 or N, 1, 1 or L_q, L_k): one mask for every head
        if bias is not None:
            bias = self._check_bias(bias, n, l_q, l_k)  # (1 or N, h, L_q, L_k)
        if self.store_alphas:
            context = self.attn(query, mask, bias, positions)  # (N, h, L_q, d_k)
        else:
            context = self.fused_attn(query, mask, bias, positions)  # (N, h, L_q, d_k)
        return self.output_function(context)  # (N, L_q, d_model)

    def extra_repr(self):
        return f"n_heads={self.n_heads}, d_model={self.d_model}, d_k={self.d_k}, store_alphas={self.store_alphas}"


# The book's name differs from the wide ``MultiHeadAttention`` by two letters; this one says what
# it is. The same class, not a subclass: isinstance checks and state dicts are shared.
NarrowMultiHeadAttention = MultiHeadedAttention
