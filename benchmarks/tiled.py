"""Chapter 14's tiled attention (a Python loop over tiles) against the fused kernel.

Forward only, no gradients, one head-batch at a few lengths: ``tiled_attention`` in blocks of
64 and 128, and the course's written-out ``attend``, each against
``F.scaled_dot_product_attention``. No goal: the Python tiles are expected to be slower than a
compiled kernel; the ratios show by how much, and how the block size changes it.
"""
import torch
import torch.nn.functional as F

from stepbystep.devices import default_device
from stepbystep.models import attend, tiled_attention

from .timing import compare, ratio_row

SIZES = [(1, 4, 1024, 64), (1, 4, 4096, 64)]  # (batch, heads, length, head size)
QUICK_SIZES = [(1, 1, 64, 16)]


def run(quick=False):
    device = default_device()
    rows = []
    for batch, heads, length, d in QUICK_SIZES if quick else SIZES:
        generator = torch.Generator(device=device).manual_seed(0)
        q, k, v = (torch.randn(batch, heads, length, d, generator=generator, device=device) for _ in range(3))
        contenders = {
            "fused": lambda: F.scaled_dot_product_attention(q, k, v),
            "tiled, blocks of 64": lambda: tiled_attention(q, k, v, block_q=64, block_k=64),
            "tiled, blocks of 128": lambda: tiled_attention(q, k, v, block_q=128, block_k=128),
            "attend (written out)": lambda: attend(q, k, v),
        }
        with torch.no_grad():
            medians = compare(contenders, repeats=1 if quick else 7, warmup=1)
        label = f"N={batch}, H={heads}, L={length}, d={d}"
        for name in list(contenders)[1:]:
            rows.append(ratio_row(label, medians, name, "fused"))
    return rows
