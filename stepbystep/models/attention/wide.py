"""Wide attention (chapter 02, the book's chapter 9): one head, and several full-size heads side by
side (``WideMultiHeadAttention``, the book's ``MultiHeadAttention``), in the book's two steps
``init_keys(keys)`` then ``forward(query, mask)``."""
import torch
from torch import nn

from ...checks import check_positive_int, check_vectors
from .masks import keep_mask
from .scaled_dot_product import attend, scores

__all__ = ["Attention", "WideMultiHeadAttention"]


class Attention(nn.Module):
    """One attention head: ``attend`` on learned projections.

    ``hidden_dim``: ``d_k``; ``input_dim``: the inputs' size (``None``: ``hidden_dim``);
    ``proj_values``: project the values (``False``, the book's: the keys themselves are the
    values). ``alphas`` ``(N, L_q, L_k)``: the weights of the last forward, always kept
    (``store_alphas`` is ``True``, read-only).
    ``forward(query, mask=None)``: ``(N, L_q, input_dim)`` -> ``(N, L_q, d_v)``, ``mask``
    ``(1 or N, 1 or L_q, L_k)``."""

    def __init__(self, hidden_dim, input_dim=None, proj_values=False):
        super().__init__()
        check_positive_int("hidden_dim", hidden_dim)
        if input_dim is not None:
            check_positive_int("input_dim", input_dim)
        self.d_k, self.proj_values = hidden_dim, bool(proj_values)
        self.input_dim = hidden_dim if input_dim is None else input_dim
        self.linear_query = nn.Linear(self.input_dim, hidden_dim)
        self.linear_key = nn.Linear(self.input_dim, hidden_dim)
        self.linear_value = nn.Linear(self.input_dim, hidden_dim)
        self.alphas = self.proj_keys = self.values = None

    @property
    def store_alphas(self):
        """Always ``True``: the wide heads keep their weights (no fused path)."""
        return True

    def __getstate__(self):
        state = super().__getstate__()  # the keys may carry a graph: copies start without them
        state["proj_keys"] = state["values"] = None
        return state

    def _check_query(self, query):
        """``query`` ``(N, L_q, input_dim)``, after ``init_keys`` with as many sequences."""
        check_vectors("query", query, self.input_dim)
        if self.proj_keys is None:
            raise RuntimeError("no keys to attend to: call init_keys(keys) before attending")
        if self.proj_keys.shape[0] != query.shape[0]:
            raise ValueError(f"query must have the keys' batch size {self.proj_keys.shape[0]}, got {query.shape[0]}; "
                             "call init_keys(keys) with this batch")

    def init_keys(self, keys):
        """Store ``keys`` ``(N, L_k, input_dim)``, their projection and the values."""
        check_vectors("keys", keys, self.input_dim)
        self.proj_keys = self.linear_key(keys)  # (N, L_k, d_k)
        self.values = self.linear_value(keys) if self.proj_values else keys  # (N, L_k, d_v)

    def score_function(self, query):
        """Scaled dot products of the projected query with the projected keys: ``(N, L_q, L_k)``."""
        self._check_query(query)
        return scores(self.linear_query(query), self.proj_keys)  # (N, L_q, L_k)

    def forward(self, query, mask=None):
        self._check_query(query)
        if mask is not None:
            mask = keep_mask(mask, query.shape[0], query.shape[1], self.proj_keys.shape[1])
        context, alphas = attend(self.linear_query(query), self.proj_keys, self.values, mask)  # (N, L_q, d_v)
        self.alphas = alphas.detach()  # (N, L_q, L_k)
        return context

    def extra_repr(self):
        return f"d_k={self.d_k}, input_dim={self.input_dim}, proj_values={self.proj_values}"


class WideMultiHeadAttention(nn.Module):
    """Wide multi-head attention: ``n_heads`` full-size ``Attention`` heads, then ``linear_out``
    (the narrow heads of ``NarrowMultiHeadAttention`` each read a slice of ``d_model``).

    The contexts ``(N, L_q, n_heads · d_model)`` are mixed back to ``d_model``, so parameters grow
    with the heads. ``alphas``: ``(n_heads, N, L_q, L_k)``, heads first, as in the book, always
    kept (``store_alphas`` is ``True``, read-only).
    ``forward(query, mask=None)``: ``(N, L_q, input_dim)`` -> ``(N, L_q, d_model)``."""

    def __init__(self, n_heads, d_model, input_dim=None, proj_values=True):
        super().__init__()
        check_positive_int("n_heads", n_heads)
        check_positive_int("d_model", d_model)
        if not proj_values and input_dim not in (None, d_model):
            raise ValueError(f"input_dim must be None or d_model={d_model} without proj_values (each head's "
                             f"context then has input_dim features, and linear_out expects d_model), got "
                             f"input_dim={input_dim}: pass proj_values=True or input_dim={d_model}")
        self.n_heads, self.d_model = n_heads, d_model
        self.linear_out = nn.Linear(n_heads * d_model, d_model)
        self.attn_heads = nn.ModuleList([Attention(d_model, input_dim, proj_values) for _ in range(n_heads)])

    def init_keys(self, key):
        """Give every head the keys ``(N, L_k, input_dim)``."""
        for attn in self.attn_heads:
            attn.init_keys(key)

    store_alphas = Attention.store_alphas  # the same read-only property: always True

    @property
    def alphas(self):
        if any(attn.alphas is None for attn in self.attn_heads):
            return None
        return torch.stack([attn.alphas for attn in self.attn_heads], dim=0)  # (h, N, L_q, L_k)

    def output_function(self, contexts):
        """Concatenate the heads' contexts ``[(N, L_q, d_model)] * h`` and apply ``linear_out``."""
        concatenated = torch.cat(contexts, dim=-1)  # (N, L_q, h * d_model)
        return self.linear_out(concatenated)  # (N, L_q, d_model)

    def forward(self, query, mask=None):
        contexts = [attn(query, mask=mask) for attn in self.attn_heads]  # [(N, L_q, d_model)] * h
        return self.output_function(contexts)  # (N, L_q, d_model)

    def extra_repr(self):
        return f"n_heads={self.n_heads}, d_model={self.d_model}"

