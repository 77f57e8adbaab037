"""Normalisation layers (chapter 12): LayerNorm centres and scales each vector; RMSNorm (Zhang and
Sennrich 2019) only rescales it by its root mean square, the norm every Llama-family model uses."""
import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_choice, check_positive_int, check_positive_number

__all__ = ["NORMS", "RMSNorm", "make_norm"]

NORMS = ("layernorm", "rmsnorm")


class RMSNorm(nn.Module):
    """``x / √(mean(x²) + eps) · weight`` over the last dimension; no mean removed, no bias.

    ``weight`` ``(d_model,)`` starts at ones. The statistics are taken in float32 or wider whatever
    the input's dtype (as Llama does), then cast back to the input's dtype before the gain (the product
    takes the wider of the two dtypes). ``(..., d_model)`` in and out.
    """

    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_number("eps", eps)
        self.d_model, self.eps = d_model, float(eps)
        self.weight = nn.Parameter(torch.ones(d_model))  # (d_model,)

    def forward(self, x):
        if x.dtype == self.weight.dtype == torch.float32:  # one fused kernel, equal up to rounding
            return F.rms_norm(x, (self.d_model,), self.weight, self.eps)  # (..., d_model)
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))  # (..., d_model): at least float32
        normed = F.rms_norm(x32, (self.d_model,), eps=self.eps)  # (..., d_model): x / √(mean(x²) + eps)
        return self.weight * normed.to(x.dtype)  # (..., d_model)

    def extra_repr(self):
        return f"{self.d_model}, eps={self.eps:g}"


def make_norm(norm, d_model, eps=1e-5, bias=True):
    """A ``"layernorm"`` (``nn.LayerNorm``, with a bias or not) or an ``"rmsnorm"`` over ``d_model``."""
    check_choice("norm", norm, NORMS)
    if norm == "rmsnorm":
        return RMSNorm(d_model, eps=eps)
    return nn.LayerNorm(d_model, eps=eps, bias=bias)
