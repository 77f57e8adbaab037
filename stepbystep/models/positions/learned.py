"""Learned positions: a trainable table with one vector per position, as in GPT-2 and BERT.

Instead of the fixed sinusoidal table of Vaswani et al. (2017), BERT (Devlin et al. 2019,
"BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding") and GPT-2
(Radford et al. 2019, "Language Models are Unsupervised Multitask Learners") learn a table with
one row per position, ``max_len × d_model`` parameters, added to the token embeddings. A row
learns only from the sequences long enough to reach it: a position past the rows that training
reached has a vector nobody trained, and a position past the table has no vector at all.
"""
import torch
from torch import nn

from ...checks import check_instance, check_positive_int, check_positive_number, check_tensor

__all__ = ["LearnedPositionalEmbedding", "check_positions"]


def check_positions(positions, length, max_len):
    """Positions ``(L,)`` or ``(N, L)``: integers in ``0 .. max_len - 1``, one per vector.

    The values are read only on the CPU (elsewhere that would wait for the device).
    """
    check_tensor("positions", positions, ndim=(1, 2))
    if positions.is_floating_point() or positions.dtype == torch.bool:
        raise TypeError(f"positions must hold integer positions, got dtype {positions.dtype}")
    if positions.shape[-1] != length:
        raise ValueError(f"positions must have one entry per vector, (L,) or (N, L) with L = {length}, "
                         f"got shape {tuple(positions.shape)}")
    if positions.device.type == "cpu" and positions.numel():
        low, high = int(positions.min()), int(positions.max())
        if low < 0 or high >= max_len:
            raise ValueError(f"positions must be in 0..{max_len - 1} (the table has max_len={max_len} rows: "
                             f"a position past them has no vector), got {high if high >= max_len else low}")


class LearnedPositionalEmbedding(nn.Module):
    """A trainable table of positions added to a batch of embeddings.

    Args:
        max_len: the number of rows, one per position ``0 .. max_len - 1``; a longer sequence
            raises a ``ValueError`` (there is no row to look up).
        d_model: the size of each row.
        std: the rows start from ``N(0, std²)`` (BERT starts from 0.02). A row that no training
            sequence reaches keeps this initial value (with no weight decay).

    Parameters: ``weight`` ``(max_len, d_model)``, ``max_len × d_model`` numbers.

    ``forward(x, positions=None)``: ``x`` ``(N, L, d_model)``; ``positions`` ``None`` (``0 ..
    L-1``), ``(L,)`` or ``(N, L)`` integers. Returns ``x + weight[positions]``, ``(N, L, d_model)``.
    """

    def __init__(self, max_len, d_model, std=0.02):
        super().__init__()
        check_positive_int("max_len", max_len)
        check_positive_int("d_model", d_model)
        check_positive_number("std", std)
        self.max_len = max_len
        self.d_model = d_model
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * std)  # (max_len, d_model)

    @property
    def table(self):
        """The rows as they are now, ``(max_len, d_model)``, detached (for plots)."""
        return self.weight.detach()

    def forward(self, x, positions=None):
        check_instance("x", x, torch.Tensor, f"a tensor (N, L, {self.d_model})")
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (N, L, {self.d_model}), got {tuple(x.shape)}")
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)  # (L,)
        check_positions(positions, x.shape[1], self.max_len)
        return x + self.weight[positions].to(x.dtype)  # (N, L, d_model)

    def extra_repr(self):
        return f"max_len={self.max_len}, d_model={self.d_model}"
