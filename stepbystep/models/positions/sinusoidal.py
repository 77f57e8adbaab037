"""Sinusoidal positional encoding: telling an order-blind model where each element sits."""
import math

import torch
from torch import nn

from ...checks import check_non_negative_int, check_positive_int, check_vectors

__all__ = ["PositionalEncoding", "sinusoidal_table"]


def sinusoidal_table(max_len, d_model):
    """The sinusoidal table ``(max_len, d_model)`` of "Attention Is All You Need".
    Pair ``(2i, 2i + 1)`` holds ``(sin(t·ω_i), cos(t·ω_i))``, ``ω_i = 10000^(-2i / d_model)``
    (an odd ``d_model`` ends with a lone sine). Computed in float32 step by step as the book
    does, so it equals the book's table bit for bit, and seeded trainings its numbers."""
    max_len = int(check_positive_int("max_len", max_len))
    d_model = int(check_positive_int("d_model", d_model))
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
    even_dims = torch.arange(0, d_model, 2, dtype=torch.float32)  # (ceil(d/2),)
    angular_speed = torch.exp(even_dims * (-math.log(10000.0) / d_model))  # (ceil(d/2),)
    angles = position * angular_speed  # (max_len, ceil(d/2))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # odd d_model: one cosine fewer
    return table


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal encoding of each position to a batch of sequences.

    ``scale_input``: multiply ``x`` by ``√d_model`` first, as the paper (which gives no reason)
    and the book do; it brings embeddings that start small (std ``1/√d_model``) to the
    encoding's size. ``False`` for ``nn.Embedding`` outputs, which scaling would make drown
    the encoding. ``pe`` ``(1, max_len, d_model)``: the table, a buffer rebuilt rather than
    saved (``stepbystep.book.load_book_state_dict`` loads the book's state dicts, which store it).
    ``forward(x, start=0)``: ``x`` ``(N, L, d_model)`` plus rows ``start .. start + L - 1`` (``start``
    > 0: tokens that follow ``start`` earlier ones, as a decoder's with a cache)."""

    def __init__(self, max_len, d_model, scale_input=True):
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        self.scale_input = bool(scale_input)
        table = sinusoidal_table(max_len, d_model)  # (max_len, d_model)
        self.register_buffer("pe", table.unsqueeze(0), persistent=False)  # (1, max_len, d_model)

    def forward(self, x, start=0):
        check_vectors("x", x, self.d_model)
        check_non_negative_int("start", start)
        length = x.shape[1]
        if start + length > self.max_len:
            raise ValueError(f"sequence length {start + length} exceeds the positional encoding's max_len "
                             f"{self.max_len}; build it with a larger max_len")
        if self.scale_input:
            x = x * math.sqrt(self.d_model)  # (N, L, d_model)
        return x + self.pe[:, start:start + length].to(x.dtype)  # (N, L, d_model)

    def extra_repr(self):
        return f"max_len={self.max_len}, d_model={self.d_model}, scale_input={self.scale_input}"
