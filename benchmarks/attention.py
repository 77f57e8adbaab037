"""NarrowMultiHeadAttention (teaching path and fused path) against nn.MultiheadAttention.

Forward plus backward of self-attention in training mode, at several sizes. Dropout is 0 so
the teaching path does no extra work for it and all three compute the same function; PyTorch's
module is asked for no weights (``need_weights=False``), which lets it use its fused kernel.
"""
import torch
from torch import nn

from stepbystep.devices import default_device
from stepbystep.models import NarrowMultiHeadAttention

from .timing import compare, ratio_row

FUSED_GOAL = 1.0
SIZES = [  # (batch, length, d_model, heads)
    (64, 16, 32, 4),
    (32, 64, 64, 4),
    (16, 128, 128, 8),
    (8, 256, 256, 8),
]
QUICK_SIZES = [(2, 16, 32, 4)]


def _step(module, x, is_ours):
    if is_ours:
        out = module(x)  # self-attention
    else:
        out, _ = module(x, x, x, need_weights=False)
    out.sum().backward()


def run(quick=False):
    device = default_device()
    rows = []
    for batch, length, d_model, heads in QUICK_SIZES if quick else SIZES:
        torch.manual_seed(0)
        x = torch.randn(batch, length, d_model, device=device)
        teaching = NarrowMultiHeadAttention(heads, d_model, dropout=0.0).to(device)
        fused = NarrowMultiHeadAttention(heads, d_model, dropout=0.0, store_alphas=False).to(device)
        theirs = nn.MultiheadAttention(d_model, heads, dropout=0.0, batch_first=True).to(device)
        contenders = {
            "fused path": lambda: _step(fused, x, True),
            "teaching path": lambda: _step(teaching, x, True),
            "nn.MultiheadAttention": lambda: _step(theirs, x, False),
        }
        medians = compare(contenders, repeats=1 if quick else 15, warmup=1 if quick else 3)
        label = f"N={batch}, L={length}, d_model={d_model}, heads={heads}"
        rows.append(ratio_row(label, medians, "fused path", "nn.MultiheadAttention", goal=FUSED_GOAL))
        rows.append(ratio_row(label, medians, "teaching path", "nn.MultiheadAttention"))
    return rows
