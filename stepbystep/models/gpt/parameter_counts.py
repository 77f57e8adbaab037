"""How many parameters a decoder holds, and how many of them one token uses (chapter 17): with a
mixture of experts the two differ, a token passing through only ``experts_per_token`` of the
``n_experts`` networks of each layer.

Per layer, with ``d = d_model``, ``h`` heads and ``h_kv`` key/value heads of ``d_k = d / h``:

    attention      d·(h·d_k) + 2·d·(h_kv·d_k) + (h·d_k)·d     (+ the biases)
    SwiGLU         3·d·f          (a ReLU or GELU network: 2·d·f, + the biases)
    mixture        d·E (the router) + E · expert,   of which a token uses  d·E + k · expert
    norms          d each (RMSNorm; a LayerNorm with biases: 2·d)

plus the embedding ``V·d`` and, untied, the output layer ``V·d``. Mixtral 8x7B (``d = 4096``, 32
layers, 32 heads, 8 key/value heads, ``f = 14336``, ``E = 8``, ``k = 2``, ``V = 32000``): about 46.7B
in all, 12.9B per token, as its authors give them (Jiang et al., Mixtral of Experts, 2024).
"""
from typing import NamedTuple

from ...checks import check_instance
from .config import DecoderConfig

__all__ = ["ParameterCounts", "parameter_counts"]


class ParameterCounts(NamedTuple):
    """``total``: every parameter of the model; ``active``: those one token's forward pass uses."""

    total: int
    active: int


def _feed_forward(mlp, d, hidden, bias):
    if mlp == "swiglu":
        return 3 * d * hidden + (2 * hidden + d if bias else 0)  # gate, up (d -> hidden), down (hidden -> d)
    return 2 * d * hidden + (hidden + d if bias else 0)  # Linear, activation, Linear


def parameter_counts(config):
    """The ``ParameterCounts`` of the ``DecoderOnlyTransformer`` that ``config`` (a ``DecoderConfig``)
    builds, counted from its fields without building it: ``total`` and ``active`` (per token; equal
    without experts)."""
    check_instance("config", config, DecoderConfig, "a DecoderConfig")
    c, d = config, config.d_model
    d_k, h_kv = d // c.n_heads, c.n_kv_heads or c.n_heads
    norm = d * (2 if c.norm == "layernorm" and c.bias else 1)  # one norm over d
    attention = 2 * d * (c.n_heads * d_k) + 2 * d * (h_kv * d_k)  # queries, out; keys, values
    if c.bias:
        attention += 2 * c.n_heads * d_k + 2 * h_kv * d_k
    if c.qk_norm == "head":
        attention += 2 * d_k  # one RMSNorm gain per head width, for the queries and for the keys
    elif c.qk_norm == "all":
        attention += c.n_heads * d_k + h_kv * d_k
    norms = 2 * ((c.norm_first or not c.norm_output) + c.norm_output) * norm  # each sublayer's one or two
    if c.n_experts is None:
        ffn_total = ffn_active = _feed_forward(c.mlp, d, c.ff_units, c.bias)
    else:
        expert = _feed_forward(c.mlp, d, c.expert_ff_units or c.ff_units, c.bias)
        ffn_total = d * c.n_experts + c.n_experts * expert  # the router and every expert
        ffn_active = d * c.n_experts + c.experts_per_token * expert  # the router and the k chosen
    outside = c.vocab_size * d * (1 if c.tie_weights else 2) + (c.vocab_size if c.head_bias else 0)
    outside += norm if c.norm_first or c.norm_output else 0  # the final norm
    outside += c.max_len * d if c.position_scheme == "learned" else 0  # the learned position table
    per_layer = attention + norms
    return ParameterCounts(total=outside + c.n_layers * (per_layer + ffn_total),
                           active=outside + c.n_layers * (per_layer + ffn_active))
