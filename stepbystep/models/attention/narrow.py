"""Narrow multi-head attention (chapter 03): d_model split into n_heads heads of d_k = d_model // n_heads."""
import torch
import torch.nn.functional as F
from torch import nn

from ...checks import check_float_dtype, check_instance, check_positive_int
from ..positions.rotary import RotaryEmbedding
from .masks import keep_mask
from .scaled_dot_product import attend

__all__ = ["MultiHeadedAttention", "NarrowMultiHeadAttention"]


class MultiHeadedAttention(nn.Module):
    """Multi-head attention whose heads each read a ``d_k = d_model // n_heads`` slice.

    Also ``NarrowMultiHeadAttention``; not the wide ``MultiHeadAttention`` (``WideMultiHeadAttention``):
    here ``alphas`` are batch first, ``(N, h, L_q, L_k)``.

    Args:
        n_heads: number of heads; must divide ``d_model``.
        d_model: size of each element's vector.
        dropout: dropout on the attention weights (training only).
        store_alphas: ``True`` computes the weights step by step (``attend``) and keeps them in
            ``self.alphas`` ``(N, h, L_q, L_k)``, before dropout; ``False`` calls the fused
            ``F.scaled_dot_product_attention`` (same outputs, ``alphas`` stays ``None``).
        rotary: ``None`` or a ``RotaryEmbedding`` over ``d_k`` that rotates queries and keys (RoPE).
        n_kv_heads: grouped-query attention (Ainslie et al. 2023): only ``n_kv_heads`` heads of keys
            and values, each read by ``n_heads // n_kv_heads`` query heads in a row; ``1`` is
            multi-query attention (Shazeer 2019). ``None`` (or ``n_heads``): one per query head.
        bias: the four projections have biases (GPT-2) or not (Llama).

    ``forward(query, mask=None, key=None, bias=None, positions=None, cache=None, rotation=None)``:
    ``query`` ``(N, L_q, d_model)``; ``key`` ``(N, L_k, d_model)`` to attend to (``None``: the keys
    set by ``init_keys``, the book's two-step use); ``mask`` ``(1 or N, 1 or L_q, L_k)`` bool (or 0/1),
    ``True`` = may attend, on every path (a float or 2-D mask is refused: see ``keep_mask``);
    ``bias`` ``(h or N, h, L_q, L_k)`` added to the scores (ALiBi);
    ``positions`` ``(L,)`` or ``(N, L)`` where rotary turns the queries and the new keys, or
    ``rotation``, their ``(cos, sin)`` from ``rotary.at(positions)``, looked up once for every layer;
    ``cache`` a ``LayerCache`` (KV cache): the new keys and values ``(N, n_kv_heads, L, d_k)`` join the
    earlier ones, which ``mask`` and ``bias`` then cover; ``mask_name``, ``key_name``: what errors call
    them (a layer passes its own arguments' names). Returns ``(N, L_q, d_model)``.
    """

    def __init__(self, n_heads, d_model, dropout=0.1, store_alphas=True, rotary=None, n_kv_heads=None, bias=True):
        super().__init__()
        check_positive_int("n_heads", n_heads)
        check_positive_int("d_model", d_model)
        if d_model % n_heads != 0:
            raise ValueError(f"d_model must be divisible by n_heads, got d_model={d_model} and n_heads={n_heads}")
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        check_positive_int("n_kv_heads", n_kv_heads)
        if n_heads % n_kv_heads != 0:
            raise ValueError(f"n_kv_heads must divide n_heads (each key head serves a whole group of query "
                             f"heads), got n_heads={n_heads} and n_kv_heads={n_kv_heads}")
        check_instance("bias", bias, bool, "True or False")
        self.n_heads, self.d_model, self.d_k = n_heads, d_model, d_model // n_heads
        self.n_kv_heads, self.groups = n_kv_heads, n_heads // n_kv_heads
        self.store_alphas = store_alphas
        # creation order as in the book, so seeded constructions give the book's numbers
        self.linear_query = nn.Linear(d_model, d_model, bias=bias)
        self.linear_key = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.linear_value = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.linear_out = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(p=dropout)
        self.alphas = self.proj_key = self.proj_value = None
        self.rotary = None
        self.set_rotary(rotary)

    def set_rotary(self, rotary):
        """Rotate queries and keys with ``rotary`` (a ``RotaryEmbedding`` over ``d_k``), or not (``None``)."""
        if rotary is not None:
            check_instance("rotary", rotary, RotaryEmbedding, "a RotaryEmbedding or None")
            if rotary.d_head != self.d_k:
                raise ValueError(f"rotary must rotate vectors of d_k={self.d_k} (d_model // n_heads), "
                                 f"got a RotaryEmbedding of d_head={rotary.d_head}")
        self.rotary = rotary

    def make_chunks(self, x):
        """Split into heads: ``(N, L, h · d_k)`` -> ``(N, h, L, d_k)`` (``h``: query or key heads)."""
        return x.view(x.shape[0], x.shape[1], -1, self.d_k).transpose(1, 2)

    def expand_kv(self, x):
        """Keys or values ``(N, n_kv_heads, L, d_k)`` -> ``(N, h, L, d_k)``: each key head repeated
        for the ``groups`` query heads that read it (query head ``j`` reads key head ``j // groups``)."""
        return x if self.groups == 1 else x.repeat_interleave(self.groups, dim=1)

    def output_function(self, contexts):
        """Merge the heads ``(N, h, L_q, d_k)`` -> ``(N, L_q, d_model)``, then ``linear_out``."""
        return self.linear_out(contexts.transpose(1, 2).flatten(2))

    def rotate(self, x, positions=None, rotation=None):
        """Queries or keys ``(N, h, L, d_k)`` rotated by ``rotation`` or at ``positions`` (RoPE), or as they are."""
        if self.rotary is None:
            return x
        if rotation is not None:
            return self.rotary.rotate_with(x, rotation)
        if positions is None:
            positions = torch.arange(x.shape[-2], device=x.device)  # (L,)
        return self.rotary.rotate(x, positions)  # the model keeps positions in range: no per-call checks

    def project_keys(self, key, positions=None, rotation=None):
        """Keys (rotated) and values of ``key`` ``(N, L_k, d_model)``: ``(N, n_kv_heads, L_k, d_k)`` each."""
        return (self.rotate(self.make_chunks(self.linear_key(key)), positions, rotation),
                self.make_chunks(self.linear_value(key)))

    def init_keys(self, key, positions=None):
        """The book's first step: project ``key`` ``(N, L_k, d_model)`` for the next ``forward`` calls."""
        self.check_input("key", key)
        self.proj_key, self.proj_value = self.project_keys(key, positions)  # (N, n_kv_heads, L_k, d_k) each

    def score_function(self, query, positions=None):
        """Scaled scores of ``query`` ``(N, L_q, d_model)`` against the ``init_keys`` keys: ``(N, h, L_q, L_k)``."""
        q = self.rotate(self.make_chunks(self.linear_query(query)), positions)  # (N, h, L_q, d_k)
        return q @ self.expand_kv(self.proj_key).transpose(-2, -1) / self.d_k ** 0.5

    def forward(self, query, mask=None, key=None, bias=None, positions=None, cache=None, rotation=None,
                mask_name="mask", key_name="key"):
        if key is None and cache is None:
            self._check_book_call(query)
        else:
            self._check_key_call(query, key, key_name)
        q = self.rotate(self.make_chunks(self.linear_query(query)), positions, rotation)  # (N, h, L_q, d_k)
        if cache is not None and cache.static and cache.keys is not None:
            k, v = cache.keys, cache.values  # cross-attention: the encoder's states, projected once
        elif key is not None:
            k, v = self.project_keys(key, positions, rotation)  # (N, n_kv_heads, L_k, d_k) each
            if cache is not None:
                k, v = cache.extend(k, v)  # (N, n_kv_heads, t, d_k): the earlier tokens' too
        else:
            k, v = self.proj_key, self.proj_value  # (N, n_kv_heads, L_k, d_k): from init_keys
        if mask is not None:  # one rule on every path: bool (or 0/1) keep-mask (1 or N, 1 or L_q, L_k)
            mask = keep_mask(mask, q.shape[0], q.shape[2], k.shape[2], mask_name).unsqueeze(1)  # (1 or N, 1, 1 or L_q, L_k)
        if bias is not None:
            self._check_bias(bias, q.shape[0], q.shape[2], k.shape[2])
            bias = bias.to(q.dtype)  # (h or N, h, L_q, L_k)
        if self.store_alphas:
            k, v = self.expand_kv(k), self.expand_kv(v)  # (N, h, t, d_k): a key head per query head
            context, alphas = attend(q, k, v, mask, bias, self.dropout)  # (N, h, L_q, d_k), (N, h, L_q, L_k)
            self.alphas = alphas.detach()
        else:  # the fused kernel: the same numbers, no weights kept
            has_key = None
            if mask is not None:
                has_key = mask.any(dim=-1, keepdim=True)  # rows with a key to read
                mask = mask | ~has_key  # all-masked rows read everything here, zeroed below
            if bias is not None:
                mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
            gqa = {}
            if self.groups > 1 and q.device.type == "mps":  # MPS's kernel may fail on shared heads with a mask
                k, v = self.expand_kv(k), self.expand_kv(v)  # (N, h, t, d_k)
            elif self.groups > 1:
                gqa = {"enable_gqa": True}  # the kernel reads the shared heads (copying them or not)
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                     dropout_p=self.dropout.p if self.training else 0.0, **gqa)
            if has_key is not None:
                context = context.masked_fill(~has_key, 0.0)  # (N, h, L_q, d_k)
            self.alphas = None
        return self.output_function(context)  # (N, L_q, d_model)

    def check_input(self, name, x):
        """Raise a clear error unless ``x`` is ``(N, L, d_model)``, ``L >= 1``, of the weights' dtype."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a tensor (N, L, {self.d_model}), got {type(x).__name__}")
        shape = x.shape
        if len(shape) != 3 or shape[2] != self.d_model or shape[1] == 0:
            raise ValueError(f"{name} must have shape (N, L, {self.d_model}) with L >= 1, got {tuple(shape)}")
        dtype = self.linear_query.weight.dtype  # read at each call: a reassigned weight counts
        if x.dtype != dtype:  # the rule itself (autocast's exemption) only off the common path
            check_float_dtype(name, x, dtype)

    def _check_book_call(self, query):
        if self.proj_key is None:
            raise RuntimeError("no keys to attend to: call init_keys(key) before attending")
        self.check_input("query", query)
        if self.proj_key.shape[0] != query.shape[0]:
            raise ValueError(f"query batch size {query.shape[0]} does not match the keys' batch size "
                             f"{self.proj_key.shape[0]}; call init_keys(key) with this batch")

    def _check_key_call(self, query, key, key_name):
        self.check_input("query", query)
        if key is not None and key is not query:  # self-attention: one tensor, checked once
            self.check_input(key_name, key)
            if key.shape[0] != query.shape[0]:
                raise ValueError(f"{key_name} must hold one sequence per row of query ({query.shape[0]}), "
                                 f"got shape {tuple(key.shape)}")

    def _check_bias(self, bias, n, l_q, l_k):
        if not isinstance(bias, torch.Tensor) or not bias.is_floating_point():
            raise TypeError("bias must be a float tensor (h, L_q, L_k) or (1 or N, h, L_q, L_k), got "
                            f"{bias.dtype if isinstance(bias, torch.Tensor) else type(bias).__name__}")
        if bias.shape[-3:] != (self.n_heads, l_q, l_k) or bias.dim() not in (3, 4) or \
                (bias.dim() == 4 and bias.shape[0] not in (1, n)):
            raise ValueError(f"bias must have shape ({self.n_heads}, {l_q}, {l_k}) or (1 or {n}, {self.n_heads}, "
                             f"{l_q}, {l_k}), got {tuple(bias.shape)}")

    def __getstate__(self):
        state = super().__getstate__()  # the book's projected keys may carry a graph: copies start without them
        state["proj_key"] = state["proj_value"] = None
        return state

    def extra_repr(self):
        kv = "" if self.groups == 1 else f", n_kv_heads={self.n_kv_heads}"
        return f"n_heads={self.n_heads}{kv}, d_model={self.d_model}, d_k={self.d_k}, store_alphas={self.store_alphas}"


NarrowMultiHeadAttention = MultiHeadedAttention
