"""Rotary position embeddings (chapter 10; Su et al. 2021): each pair of dimensions ``(2i, 2i + 1)``
of a query or key turns by ``position · θ_i``, ``θ_i = base^(-2i / d_head)``, so a score sees the
offset between two tokens, never where they sit. Hugging Face's Llama pairs dimension ``i`` with
``i + d_head / 2`` instead (``rotate_half``): the same rotations on permuted dimensions (chapter 12)."""
import torch
from torch import nn

from ...checks import check_choice, check_instance, check_positions, check_positive_int, check_positive_number

__all__ = ["ROTARY_PAIRINGS", "RotaryEmbedding", "check_rotary", "rotary_frequencies", "rotate_halves", "rotate_pairs"]

ROTARY_PAIRINGS = ("interleaved", "rotate_half")


def rotary_frequencies(d_head, base=10000.0):
    """The angular speeds ``θ_i = base^(-2i / d_head)``: ``(d_head // 2,)``, float64; pair 0 the fastest."""
    check_positive_int("d_head", d_head)
    check_positive_number("base", base)
    exponents = torch.arange(0, d_head - 1, 2, dtype=torch.float64) / d_head  # (d_head // 2,)
    return base ** -exponents  # (d_head // 2,) float64


def rotate_pairs(x, cos, sin):
    """Each pair ``(a, b) = (x[..., 2i], x[..., 2i + 1])`` turned to ``(a cos - b sin, a sin + b cos)``:
    ``x`` ``(..., d)``, ``d`` even; ``cos``, ``sin`` ``(..., d // 2)``, broadcastable to the pairs."""
    a, b = x[..., 0::2], x[..., 1::2]  # (..., d // 2) each
    rotated = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., d // 2, 2)
    return rotated.flatten(-2)  # (..., d): the pairs interleaved again


def rotate_halves(x, cos, sin):
    """``rotate_pairs`` for the pairs ``(x[..., i], x[..., i + d // 2])`` (Hugging Face's ``rotate_half``):
    ``x`` ``(..., d)``; ``cos`` ``(..., d)`` the cosines twice, ``[cos θ, cos θ]``, ``sin`` the sines
    with the first half negated, ``[-sin θ, sin θ]`` (``RotaryEmbedding`` keeps both tables)."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * sin  # roll: (a, b) -> (b, a)


class RotaryEmbedding(nn.Module):
    """Rotates queries or keys ``(..., L, d_head)`` pair by pair at their positions (RoPE); no
    parameters, so one serves every layer. ``cos``, ``sin`` ``(max_len, d_head // 2)``: the table,
    built up front (``use_angles`` rebuilds them from given angles) and not saved; a position past
    it is a ``ValueError``. ``pairing``: ``"interleaved"`` (RoFormer's and the course's pairs
    ``(2i, 2i + 1)``) or ``"rotate_half"`` (Hugging Face's Llama: ``(i, i + d_head / 2)``); pair
    ``i`` turns at ``θ_i`` either way.
    ``forward(x, positions=None)``: ``positions`` ``(L,)`` or ``(N, L)`` (``None``: ``0 .. L-1``)."""

    def __init__(self, d_head, base=10000.0, max_len=512, pairing="interleaved"):
        super().__init__()
        check_choice("pairing", pairing, ROTARY_PAIRINGS)
        check_positive_int("d_head", d_head)
        if d_head % 2 != 0:
            raise ValueError(f"d_head must be an even int (the dimensions go in pairs), got {d_head}")
        check_positive_number("base", base)
        check_positive_int("max_len", max_len)
        self.d_head, self.base, self.max_len, self.pairing = d_head, float(base), max_len, pairing
        if pairing == "interleaved":
            self._rotate, self._tables = rotate_pairs, ("cos", "sin")
        else:  # rotate_halves' tables, one lookup each per call
            self._rotate, self._tables = rotate_halves, ("cos_halves", "sin_halves")  # (max_len, d_head) each
        self.use_angles(self.angles(torch.arange(max_len)))  # float64 angles, float32 tables

    def use_angles(self, angles):
        """Builds the tables from ``angles`` ``(max_len, d_head // 2)``, ``positions · θ``: the course's own
        in float64, or another implementation's (``transformers`` rounds them to float32, chapter 12).
        The tables keep their dtype and device (float32 on the CPU at first)."""
        check_instance("angles", angles, torch.Tensor, f"a tensor ({self.max_len}, {self.d_head // 2})")
        if angles.shape != (self.max_len, self.d_head // 2):
            raise ValueError(f"angles must have shape ({self.max_len}, {self.d_head // 2}) (max_len, d_head // 2), "
                             f"got {tuple(angles.shape)}")
        like = getattr(self, "cos", torch.empty(0, dtype=torch.float32))
        self.register_buffer("cos", angles.cos().to(like), persistent=False)  # (max_len, d_head // 2)
        self.register_buffer("sin", angles.sin().to(like), persistent=False)  # (max_len, d_head // 2)
        if self.pairing == "rotate_half":
            self.register_buffer("cos_halves", torch.cat([self.cos, self.cos], dim=-1), persistent=False)
            self.register_buffer("sin_halves", torch.cat([-self.sin, self.sin], dim=-1), persistent=False)

    def angles(self, positions):
        """The rotation angles ``positions · θ`` ``(..., d_head // 2)``, in float64 for plots and checks."""
        positions = torch.as_tensor(positions, dtype=torch.float64)
        return positions.unsqueeze(-1) * rotary_frequencies(self.d_head, self.base)

    def forward(self, x, positions=None):
        check_instance("x", x, torch.Tensor, "a tensor (N, n_heads, L, d_head)")
        if x.dim() < 2 or x.shape[-1] != self.d_head:
            raise ValueError(f"x must have shape (..., L, {self.d_head}), got {tuple(x.shape)}")
        if positions is None:
            positions = torch.arange(x.shape[-2], device=x.device)  # (L,)
        check_positions(positions, x.shape[-2], self.max_len)
        return self.rotate(x, positions)

    def at(self, positions):
        """The cosines and sines at ``positions`` ``(L,)`` or ``(N, L)``, unchecked, for ``rotate_with``:
        ``(L, d/2 or d)`` or ``(N, 1, L, d/2 or d)`` (one row for every head)."""
        cos, sin = (getattr(self, table)[positions] for table in self._tables)  # (L or N, L, d/2 or d)
        if positions.dim() == 2:
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # (N, 1, L, d/2 or d): the same for every head
        return cos, sin

    def after(self, start, length, device=None):
        """``at`` the positions ``start .. start + length - 1`` (after ``start`` cached tokens), checked."""
        if start + length > self.max_len:
            raise ValueError(f"the cache holds {start} tokens and {length} more would pass the rotary table's "
                             f"max_len={self.max_len} positions")
        return self.at(torch.arange(start, start + length, device=device))  # (L, d/2 or d) each

    def rotate_with(self, x, rotation):
        """``x`` ``(N, h, L, d_head)`` turned by ``rotation``, the ``(cos, sin)`` of ``at``, in ``x``'s dtype."""
        cos, sin = rotation
        if cos.dtype != x.dtype:  # e.g. bfloat16 queries and keys under autocast: the cache keeps that dtype
            cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        return self._rotate(x, cos, sin)

    def rotate(self, x, positions):
        """``forward`` unchecked: ``x`` ``(..., L, d_head)`` turned at ``positions`` ``(L,)`` or ``(N, L)``."""
        cos, sin = self.at(positions)
        if positions.dim() == 2 and x.dim() < 4:
            cos, sin = cos.squeeze(1), sin.squeeze(1)  # (N, L, d/2 or d): no heads to broadcast over
        return self.rotate_with(x, (cos, sin))

    def extra_repr(self):
        pairing = "" if self.pairing == "interleaved" else f", pairing={self.pairing!r}"
        return f"d_head={self.d_head}, base={self.base:g}, max_len={self.max_len}{pairing}"


def check_rotary(rotary, d_head, size):
    """``rotary`` itself if it is ``None`` or a ``RotaryEmbedding`` over vectors of ``d_head``, else a
    clear error; ``size`` names that size in the caller's terms (e.g. ``"d_k (d_model // n_heads)"``)."""
    if rotary is not None:
        check_instance("rotary", rotary, RotaryEmbedding, "a RotaryEmbedding or None")
        if rotary.d_head != d_head:
            raise ValueError(f"rotary must rotate vectors of {size}={d_head}, got a RotaryEmbedding of "
                             f"d_head={rotary.d_head}")
    return rotary
