"""Learned positions (chapter 10): a trainable row per position added to the embeddings, as in BERT
and GPT-2. A row learns only from sequences long enough to reach it; past the table, there is none."""
import torch
from torch import nn

from ...checks import check_positions, check_positive_int, check_positive_number, check_vectors

__all__ = ["LearnedPositionalEmbedding"]


class LearnedPositionalEmbedding(nn.Module):
    """A trainable table ``weight`` ``(max_len, d_model)``, rows from ``N(0, std²)`` (BERT: 0.02).
    ``forward(x, positions=None)``: ``x`` ``(N, L, d_model)`` plus the rows at ``positions``
    (``None``: ``0 .. L-1``; ``(L,)`` or ``(N, L)``); a position past the table is a ``ValueError``."""

    def __init__(self, max_len, d_model, std=0.02):
        super().__init__()
        check_positive_int("max_len", max_len)
        check_positive_int("d_model", d_model)
        check_positive_number("std", std)
        self.max_len, self.d_model = max_len, d_model
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * std)  # (max_len, d_model)

    @property
    def table(self):
        """The rows as they are now, ``(max_len, d_model)``, detached (for plots)."""
        return self.weight.detach()

    def forward(self, x, positions=None):
        check_vectors("x", x, self.d_model)
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)  # (L,)
        check_positions(positions, x.shape[1], self.max_len)
        return x + self.rows(positions).to(x.dtype)  # (N, L, d_model)

    def rows(self, positions):
        """The table's rows at ``positions`` ``(L,)`` or ``(N, L)``, unchecked (the model's every step):
        ``(L or N, L, d_model)``."""
        return self.weight[positions]

    def extra_repr(self):
        return f"max_len={self.max_len}, d_model={self.d_model}"
