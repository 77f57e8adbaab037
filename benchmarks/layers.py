"""Our EncoderLayer and DecoderLayer against nn.TransformerEncoderLayer / nn.TransformerDecoderLayer.

Forward plus backward in training mode (dropout 0.1 in both), both norm placements, with the
causal mask in the decoder. Ours runs its fused attention path (``store_alphas=False``), the
fair match for PyTorch's layers, which never keep attention weights either.
"""
import torch
from torch import nn

from stepbystep.devices import default_device
from stepbystep.models import DecoderLayer, EncoderLayer, subsequent_mask, to_torch_attn_mask

from .timing import compare, ratio_row

SIZE = (32, 64, 128, 8, 512)  # batch, length, d_model, heads, ff_units
QUICK_SIZE = (2, 8, 16, 2, 32)


def run(quick=False):
    batch, length, d_model, heads, ff_units = QUICK_SIZE if quick else SIZE
    device = default_device()
    torch.manual_seed(0)
    x = torch.randn(batch, length, d_model, device=device)
    memory = torch.randn(batch, length, d_model, device=device)
    ours_mask = subsequent_mask(length, device=device)  # (1, L, L), True = may attend
    their_mask = to_torch_attn_mask(ours_mask)  # (L, L), True = blocked
    rows = []
    for norm_first in (True, False):
        placement = "norm-first" if norm_first else "norm-last"
        our_encoder = EncoderLayer(heads, d_model, ff_units, 0.1, norm_first, store_alphas=False).to(device)
        their_encoder = nn.TransformerEncoderLayer(
            d_model, heads, ff_units, 0.1, batch_first=True, norm_first=norm_first).to(device)
        our_decoder = DecoderLayer(heads, d_model, ff_units, 0.1, norm_first, store_alphas=False).to(device)
        their_decoder = nn.TransformerDecoderLayer(
            d_model, heads, ff_units, 0.1, batch_first=True, norm_first=norm_first).to(device)

        def ours_decode():
            our_decoder(x, target_mask=ours_mask, memory=memory).sum().backward()

        encoder_medians = compare({
            "EncoderLayer": lambda: our_encoder(x).sum().backward(),
            "nn.TransformerEncoderLayer": lambda: their_encoder(x).sum().backward(),
        }, repeats=1 if quick else 15, warmup=1 if quick else 3)
        decoder_medians = compare({
            "DecoderLayer": ours_decode,
            "nn.TransformerDecoderLayer": lambda: their_decoder(x, memory, tgt_mask=their_mask).sum().backward(),
        }, repeats=1 if quick else 15, warmup=1 if quick else 3)
        label = f"{placement}, N={batch}, L={length}, d_model={d_model}, heads={heads}, ff={ff_units}"
        rows.append(ratio_row(label, encoder_medians, "EncoderLayer", "nn.TransformerEncoderLayer"))
        rows.append(ratio_row(label, decoder_medians, "DecoderLayer", "nn.TransformerDecoderLayer"))
    return rows
