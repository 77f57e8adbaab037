"""Feed-forward networks (chapter 12): the 2017 block's ``Linear, ReLU, Linear`` (GPT-2: GELU in its
tanh form), and the gated SwiGLU of Shazeer 2020 that Llama uses, with Llama's rule for its width."""
import torch.nn.functional as F
from torch import nn

from ..checks import check_choice, check_instance, check_positive_int, check_positive_number

__all__ = ["MLPS", "SwiGLU", "llama_hidden_size", "make_feed_forward"]

MLPS = ("relu", "gelu", "gelu_tanh", "swiglu")


def llama_hidden_size(d_model, multiple_of=256, ffn_dim_multiplier=None):
    """Llama's SwiGLU width: two thirds of ``4 · d_model`` (three matrices then hold as many numbers
    as a ``4 · d_model`` network's two), times ``ffn_dim_multiplier`` if given, rounded up to a
    multiple of ``multiple_of``. Llama 2 7B: ``(4096, 256)`` -> 11008; Llama 3 8B:
    ``(4096, 1024, 1.3)`` -> 14336."""
    check_positive_int("d_model", d_model)
    check_positive_int("multiple_of", multiple_of)
    hidden = int(2 * 4 * d_model / 3)
    if ffn_dim_multiplier is not None:
        check_positive_number("ffn_dim_multiplier", ffn_dim_multiplier)
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * -(-hidden // multiple_of)  # rounded up


class SwiGLU(nn.Module):
    """``down(SiLU(gate(x)) ⊙ up(x))``: a gate decides, feature by feature, how much of ``up`` passes.

    ``gate`` and ``up`` ``d_model -> hidden``, ``down`` ``hidden -> d_model``; ``bias`` on all three
    or none (Llama: none). ``(N, L, d_model)`` in and out.
    """

    def __init__(self, d_model, hidden, dropout=0.0, bias=False):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("hidden", hidden)
        check_instance("bias", bias, bool, "True or False")
        self.d_model, self.hidden = d_model, hidden
        self.gate = nn.Linear(d_model, hidden, bias=bias)
        self.up = nn.Linear(d_model, hidden, bias=bias)
        self.down = nn.Linear(hidden, d_model, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        h = F.silu(self.gate(x)) * self.up(x)  # (N, L, hidden): SiLU(a) = a · sigmoid(a)
        return self.down(self.drop(h) if self.training else h)  # (N, L, d_model)

    def extra_repr(self):
        return f"d_model={self.d_model}, hidden={self.hidden}"


def make_feed_forward(mlp, d_model, ff_units, dropout=0.0, bias=True):
    """The feed-forward network ``mlp`` (one of ``MLPS``) of width ``ff_units``: ``"relu"``,
    ``"gelu"`` (exact) and ``"gelu_tanh"`` (GPT-2's) are ``Sequential(Linear, act, Dropout, Linear)``,
    the course's order; ``"swiglu"`` a ``SwiGLU``."""
    check_choice("mlp", mlp, MLPS)
    if mlp == "swiglu":
        return SwiGLU(d_model, ff_units, dropout, bias)
    activation = {"relu": nn.ReLU(), "gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh")}[mlp]
    return nn.Sequential(nn.Linear(d_model, ff_units, bias=bias), activation, nn.Dropout(dropout),
                         nn.Linear(ff_units, d_model, bias=bias))
