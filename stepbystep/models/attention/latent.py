"""Multi-head latent attention (chapter 17; DeepSeek-AI, DeepSeek-V2, 2024): keys and values are
rebuilt from one small latent vector per token, so a KV cache need keep only that latent (and one
shared rotated key), not every head's keys and values.

For a token ``x`` ``(d_model,)``:

    c = norm(W_dkv x)                     the latent, ``kv_latent_dim`` numbers: cached
    k_rope = RoPE(W_kr x)                 one rotated key of ``rope_head_dim``, shared by the heads: cached
    [k_nope_i, v_i] = W_ukv,i c           head i's unrotated key and its value, rebuilt from c
    q_i = [q_nope_i, RoPE(q_rope_i)]      from ``W_q x`` (or ``W_uq norm(W_dq x)`` with ``q_latent_dim``)
    head i attends with q_i · [k_nope_i, k_rope] / √(nope_head_dim + rope_head_dim)

Rotary positions stay out of the latent: a rotation between the keys' up-projection and the queries
depends on the position, so that projection could no longer be folded into the queries' (what lets an
inference engine score the latents directly); a small decoupled part carries the rotation instead.
"""
import torch
from torch import nn

from ...checks import check_instance, check_positive_int
from ..norms import RMSNorm
from ..positions.rotary import check_rotary
from .heads_input import HeadsInput
from .masks import keep_mask
from .scaled_dot_product import attend

__all__ = ["LatentAttention"]


class LatentAttention(HeadsInput, nn.Module):
    """Multi-head latent attention, self-attention only, under the same call as
    ``NarrowMultiHeadAttention`` (so a ``DecoderOnlyLayer`` holds either).

    Args:
        n_heads, d_model: query heads and the model's width.
        kv_latent_dim: the latent's size (DeepSeek-V3: 512).
        rope_head_dim: the rotated part of each query and of the shared key (DeepSeek-V3: 64).
        nope_head_dim: the unrotated part of each head's query and key (DeepSeek-V3: 128).
        v_head_dim: each head's value size (DeepSeek-V3: 128).
        q_latent_dim: queries through a latent of this size too (DeepSeek-V3: 1536); ``None``: one
            ``d_model -> n_heads · (nope + rope)`` projection.
        rotary: a ``RotaryEmbedding`` over ``rope_head_dim`` (``set_rotary``).
        dropout, store_alphas: as ``NarrowMultiHeadAttention``'s; ``bias``: on the down-projections
            and the output (DeepSeek's ``attention_bias``). The latents' RMSNorms use DeepSeek's eps, 1e-6.

    ``forward(x, key=None, mask=None, bias=None, rotation=None, cache=None)``: ``x`` ``(N, L, d_model)``;
    ``mask`` a keep-mask ``(1 or N, 1 or L, t)``; ``rotation`` RoPE's ``(cos, sin)`` for the new
    tokens; ``cache`` a ``LayerCache`` that keeps the latents ``(N, 1, t, kv_latent_dim)`` as its keys
    and the shared rotated keys ``(N, 1, t, rope_head_dim)`` as its values. Returns ``(N, L, d_model)``.
    """

    weight_name = "kv_down"  # the inputs must have this projection's dtype

    def __init__(self, n_heads, d_model, kv_latent_dim, rope_head_dim, nope_head_dim, v_head_dim, q_latent_dim=None,
                 dropout=0.1, store_alphas=True, rotary=None, bias=False):
        super().__init__()
        for name, value in (("n_heads", n_heads), ("d_model", d_model), ("kv_latent_dim", kv_latent_dim),
                            ("rope_head_dim", rope_head_dim), ("nope_head_dim", nope_head_dim),
                            ("v_head_dim", v_head_dim)):
            check_positive_int(name, value)
        if rope_head_dim % 2 != 0:
            raise ValueError(f"rope_head_dim must be even (RoPE turns pairs of dimensions), got {rope_head_dim}")
        check_instance("bias", bias, bool, "True or False")
        self.n_heads, self.d_model, self.kv_latent_dim = n_heads, d_model, kv_latent_dim
        self.rope_head_dim, self.nope_head_dim, self.v_head_dim = rope_head_dim, nope_head_dim, v_head_dim
        self.d_k = nope_head_dim + rope_head_dim  # each head's query and key
        self.q_latent_dim, self.store_alphas = q_latent_dim, store_alphas
        if q_latent_dim is None:
            self.linear_query = nn.Linear(d_model, n_heads * self.d_k, bias=False)
        else:
            check_positive_int("q_latent_dim", q_latent_dim)
            self.query_down = nn.Linear(d_model, q_latent_dim, bias=bias)
            self.query_norm = RMSNorm(q_latent_dim, 1e-6)
            self.query_up = nn.Linear(q_latent_dim, n_heads * self.d_k, bias=False)
        self.kv_down = nn.Linear(d_model, kv_latent_dim + rope_head_dim, bias=bias)  # the latent and the shared key
        self.kv_norm = RMSNorm(kv_latent_dim, 1e-6)
        self.kv_up = nn.Linear(kv_latent_dim, n_heads * (nope_head_dim + v_head_dim), bias=False)
        self.linear_out = nn.Linear(n_heads * v_head_dim, d_model, bias=bias)
        self.dropout = nn.Dropout(p=dropout)
        self.alphas = None
        self.set_rotary(rotary)  # sets self.rotary

    def set_rotary(self, rotary):
        """Rotate the queries' and the shared key's ``rope_head_dim`` part with ``rotary``."""
        self.rotary = check_rotary(rotary, self.rope_head_dim, "rope_head_dim")

    def queries(self, x, rotation):
        """Each head's query ``[q_nope, RoPE(q_rope)]``: ``(N, L, d_model)`` -> ``(N, h, L, d_k)``."""
        q = self.linear_query(x) if self.q_latent_dim is None else self.query_up(self.query_norm(self.query_down(x)))
        q = q.view(x.shape[0], x.shape[1], self.n_heads, self.d_k).transpose(1, 2)  # (N, h, L, d_k)
        q_nope, q_rope = q.split([self.nope_head_dim, self.rope_head_dim], dim=-1)
        return torch.cat([q_nope, self.rotate(q_rope, rotation)], dim=-1)  # (N, h, L, d_k)

    def latents(self, x, rotation):
        """What the cache keeps: the normed latents ``(N, 1, L, kv_latent_dim)`` and the shared
        rotated keys ``(N, 1, L, rope_head_dim)``."""
        latent, k_rope = self.kv_down(x).split([self.kv_latent_dim, self.rope_head_dim], dim=-1)  # (N, L, r), (N, L, d_r)
        latent = self.kv_norm(latent).unsqueeze(1)  # (N, 1, L, r)
        return latent, self.rotate(k_rope.unsqueeze(1), rotation)  # (N, 1, L, r), (N, 1, L, d_r)

    def keys_values(self, latent, k_rope):
        """Every head's keys ``(N, h, t, d_k)`` and values ``(N, h, t, v_head_dim)`` rebuilt from the
        latents ``(N, 1, t, r)`` and the shared rotated keys ``(N, 1, t, d_r)``."""
        n, t = latent.shape[0], latent.shape[2]
        kv = self.kv_up(latent.squeeze(1)).view(n, t, self.n_heads, -1).transpose(1, 2)  # (N, h, t, nope + v)
        k_nope, v = kv.split([self.nope_head_dim, self.v_head_dim], dim=-1)  # (N, h, t, nope), (N, h, t, v)
        k = torch.cat([k_nope, k_rope.expand(-1, self.n_heads, -1, -1)], dim=-1)  # (N, h, t, d_k)
        return k, v

    def forward(self, x, key=None, mask=None, bias=None, rotation=None, cache=None):
        self.check_input("x", x)
        if self.rotary is None:
            raise ValueError("latent attention needs rotary positions: give it a RotaryEmbedding (set_rotary)")
        if key is not None or bias is not None:
            raise ValueError("latent attention is self-attention with rotary positions only: key and bias must be None")
        rotation = self.new_rotation(x, rotation, cache)  # after the cached tokens
        q = self.queries(x, rotation)  # (N, h, L, d_k)
        latent, k_rope = self.latents(x, rotation)  # (N, 1, L, r), (N, 1, L, d_r)
        if cache is not None:
            latent, k_rope = cache.extend(latent, k_rope)  # (N, 1, t, r), (N, 1, t, d_r): the earlier tokens' too
        k, v = self.keys_values(latent, k_rope)  # (N, h, t, d_k), (N, h, t, d_v)
        if mask is not None:
            mask = keep_mask(mask, q.shape[0], q.shape[2], k.shape[2])  # (1 or N, 1 or L, t)
        context, alphas = attend(q, k, v, mask, None, self.dropout, self.store_alphas)  # (N, h, L, d_v)
        self.alphas = None if alphas is None else alphas.detach()  # (N, h, L, t)
        return self.linear_out(context.transpose(1, 2).flatten(2))  # (N, L, d_model)

    def extra_repr(self):
        q = "" if self.q_latent_dim is None else f", q_latent_dim={self.q_latent_dim}"
        return (f"n_heads={self.n_heads}, d_model={self.d_model}, kv_latent_dim={self.kv_latent_dim}{q}, "
                f"nope_head_dim={self.nope_head_dim}, rope_head_dim={self.rope_head_dim}, "
                f"v_head_dim={self.v_head_dim}, store_alphas={self.store_alphas}")
