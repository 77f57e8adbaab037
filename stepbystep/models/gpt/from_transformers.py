"""Load a Hugging Face ``transformers`` GPT-2 or Llama (chapter 12), or a Qwen3, OLMo 2, Mistral,
Mixtral, Qwen3-MoE or dense DeepSeek-V3 (chapter 17), into
the course's model: read its config into a ``DecoderConfig``, build the ``DecoderOnlyTransformer``
and copy every weight.

Two differences in storage, none in the function: GPT-2 keeps its projections as ``Conv1D``
(``nn.Linear``'s weight transposed) with one fused ``c_attn`` for queries, keys and values; Llama
rotates the pairs ``(i, i + d/2)`` (``rotate_half``), which the course matches, or, with
``rope_pairing="interleaved"``, turns into RoFormer's ``(2i, 2i + 1)`` by permuting the rows of
the query and key projections. Mixtral and Qwen3-MoE keep their experts fused, one ``(E, 2·hidden,
d_model)`` tensor for the gates and ups and one ``(E, d_model, hidden)`` for the downs, which the course
splits into one ``SwiGLU`` per expert.
"""
import torch

from ...checks import check_choice
from ..mixture_of_experts import MixtureOfExperts
from ..positions.rotary import ROTARY_PAIRINGS
from .config import DecoderConfig

__all__ = ["SUPPORTED_ARCHITECTURES", "config_from_transformers", "from_transformers", "interleave_permutation"]

SUPPORTED_ARCHITECTURES = ("GPT2LMHeadModel", "LlamaForCausalLM", "Qwen3ForCausalLM", "Olmo2ForCausalLM",
                           "MixtralForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM", "MistralForCausalLM")
_GELUS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}


def _unsupported(setting, value, why):
    return ValueError(f"from_transformers cannot convert {setting}={value!r}: {why}")


def _gpt2_config(c, rope_pairing):
    if c.activation_function not in _GELUS:
        raise _unsupported("activation_function", c.activation_function, "the course's GPT-2 uses GELU")
    for setting in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"):
        if getattr(c, setting, False):
            raise _unsupported(setting, True, "the course's attention scales scores by 1/√d_k only")
    if not getattr(c, "scale_attn_weights", True):
        raise _unsupported("scale_attn_weights", False, "the course's attention scales scores by 1/√d_k")
    return DecoderConfig.gpt2(c.vocab_size, d_model=c.n_embd, n_heads=c.n_head, n_layers=c.n_layer,
                              max_len=c.n_positions, ff_units=c.n_inner or 4 * c.n_embd,
                              mlp=_GELUS[c.activation_function], norm_eps=c.layer_norm_epsilon, dropout=0.0,
                              tie_weights=bool(c.tie_word_embeddings))


def _rope_base(c):
    """The rotary base of a config whose positions are plain RoPE (no frequency scaling)."""
    rope = getattr(c, "rope_parameters", None) or dict(getattr(c, "rope_scaling", None) or {},  # transformers 4
                                                        rope_theta=getattr(c, "rope_theta", 10000.0))
    rope = {"rope_type": rope.get("rope_type", rope.get("type", "default")), **rope}
    if rope.get("rope_type", "default") != "default":
        raise _unsupported("rope_type", rope["rope_type"], "the course's rotary positions have no frequency scaling")
    return rope.get("rope_theta", 10000.0)


def _llama_config(c, rope_pairing, **changes):
    rope_base = _rope_base(c)
    if c.hidden_act != "silu":
        raise _unsupported("hidden_act", c.hidden_act, "the course's SwiGLU gates with SiLU")
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    if head_dim != c.hidden_size // c.num_attention_heads:
        raise _unsupported("head_dim", head_dim, f"the course's heads are hidden_size // num_attention_heads = "
                                                   f"{c.hidden_size // c.num_attention_heads} wide")
    mlp_bias = bool(getattr(c, "mlp_bias", False))  # Qwen3's and OLMo 2's MLPs have none
    attention_bias = bool(getattr(c, "attention_bias", False))  # Mistral's and Mixtral's configs have none
    if attention_bias != mlp_bias:
        raise _unsupported("mlp_bias", mlp_bias, "the course's bias option covers attention and MLP together")
    return DecoderConfig.llama(c.vocab_size, d_model=c.hidden_size, n_heads=c.num_attention_heads,
                               n_layers=c.num_hidden_layers, max_len=c.max_position_embeddings,
                               n_kv_heads=c.num_key_value_heads or c.num_attention_heads, ff_units=c.intermediate_size,
                               norm_eps=c.rms_norm_eps, rope_base=rope_base,
                               rope_pairing=rope_pairing, bias=attention_bias, dropout=0.0,
                               tie_weights=bool(c.tie_word_embeddings), **changes)


def _window(c):
    """The sliding window of a config whose every layer has it (or none), else a ``ValueError``."""
    window = getattr(c, "sliding_window", None)
    kinds = set(getattr(c, "layer_types", None) or ())
    if window is not None and kinds - {"sliding_attention"}:
        raise _unsupported("layer_types", sorted(kinds), "the course's sliding window covers every layer or none")
    return window


def _qwen3_config(c, rope_pairing, **changes):
    """Qwen3's block is Llama's with QK-norm over each head (Qwen team, Qwen3 Technical Report, 2025);
    its ``use_sliding_window`` windows the layers from ``max_window_layers`` on, read here when that is all."""
    if getattr(c, "use_sliding_window", False) and c.max_window_layers:
        raise _unsupported("max_window_layers", c.max_window_layers,
                           "the course's sliding window covers every layer (max_window_layers=0) or none")
    return _llama_config(c, rope_pairing, qk_norm="head", sliding_window=_window(c), **changes)


def _mistral_config(c, rope_pairing):
    """Mistral's block is Llama's with a sliding window over every layer (Jiang et al., Mistral 7B, 2023)."""
    return _llama_config(c, rope_pairing, sliding_window=_window(c))


def _olmo2_config(c, rope_pairing):
    """OLMo 2's block is Llama's with QK-norm over all heads at once and each sublayer's output
    normalised before the residual add, its input not (Team OLMo, 2 OLMo 2 Furious, 2024)."""
    return _llama_config(c, rope_pairing, qk_norm="all", norm_first=False, norm_output=True)


def _mixtral_config(c, rope_pairing):
    """Mixtral's block is Llama's with a mixture of SwiGLU experts, the top-k weights renormalised
    (Jiang et al., Mixtral of Experts, 2024)."""
    if getattr(c, "sliding_window", None) is not None:
        raise _unsupported("sliding_window", c.sliding_window, "the course's Mixtral attends to every earlier token")
    if getattr(c, "router_jitter_noise", 0.0):
        raise _unsupported("router_jitter_noise", c.router_jitter_noise, "the course's router reads its input unscaled")
    return _llama_config(c, rope_pairing, n_experts=c.num_local_experts, experts_per_token=c.num_experts_per_tok,
                         norm_topk_prob=True)


def _qwen3_moe_config(c, rope_pairing):
    """Qwen3-MoE's block is Qwen3's (QK-norm over each head) with a mixture of SwiGLU experts
    ``moe_intermediate_size`` wide in every layer, the top-k weights renormalised if ``norm_topk_prob``
    (Qwen team, Qwen3 Technical Report, 2025)."""
    if not c.num_experts:
        raise _unsupported("num_experts", c.num_experts, "without experts it is a Qwen3: load a Qwen3ForCausalLM")
    if getattr(c, "use_sliding_window", False):
        raise _unsupported("use_sliding_window", True, "the course's Qwen3-MoE attends to every earlier token")
    if c.mlp_only_layers:
        raise _unsupported("mlp_only_layers", c.mlp_only_layers, "the course's mixture of experts is in every layer")
    if c.decoder_sparse_step != 1:
        raise _unsupported("decoder_sparse_step", c.decoder_sparse_step,
                           "the course's mixture of experts is in every layer (step 1)")
    return _qwen3_config(c, rope_pairing, n_experts=c.num_experts, experts_per_token=c.num_experts_per_tok,
                         expert_ff_units=c.moe_intermediate_size, norm_topk_prob=bool(c.norm_topk_prob))


def _deepseek_v3_config(c, rope_pairing):
    """DeepSeek-V3's block with dense layers only: Llama's with multi-head latent attention
    (DeepSeek-AI, DeepSeek-V3 Technical Report, 2024)."""
    if c.first_k_dense_replace < c.num_hidden_layers:
        raise _unsupported("first_k_dense_replace", c.first_k_dense_replace,
                           f"the course's latent-attention model is dense: set it to num_hidden_layers="
                           f"{c.num_hidden_layers} (no routed experts)")
    if c.hidden_act != "silu":
        raise _unsupported("hidden_act", c.hidden_act, "the course's SwiGLU gates with SiLU")
    if c.attention_bias:
        raise _unsupported("attention_bias", True, "the course's bias option covers attention and MLP together, "
                                                   "and DeepSeek-V3's MLP has none")
    return DecoderConfig.llama(c.vocab_size, d_model=c.hidden_size, n_heads=c.num_attention_heads,
                               n_layers=c.num_hidden_layers, max_len=c.max_position_embeddings, n_kv_heads=None,
                               ff_units=c.intermediate_size, norm_eps=c.rms_norm_eps, rope_base=_rope_base(c),
                               rope_pairing=rope_pairing, dropout=0.0, tie_weights=bool(c.tie_word_embeddings),
                               kv_latent_dim=c.kv_lora_rank, q_latent_dim=c.q_lora_rank,
                               rope_head_dim=c.qk_rope_head_dim, nope_head_dim=c.qk_nope_head_dim,
                               v_head_dim=c.v_head_dim)


_CONFIGS = {"GPT2LMHeadModel": _gpt2_config, "LlamaForCausalLM": _llama_config, "Qwen3ForCausalLM": _qwen3_config,
            "Olmo2ForCausalLM": _olmo2_config, "MixtralForCausalLM": _mixtral_config,
            "Qwen3MoeForCausalLM": _qwen3_moe_config, "DeepseekV3ForCausalLM": _deepseek_v3_config,
            "MistralForCausalLM": _mistral_config}


def _architecture(hf_model):
    name = type(hf_model).__name__
    if name not in SUPPORTED_ARCHITECTURES or not hasattr(hf_model, "config"):
        raise TypeError(f"from_transformers converts a transformers model of one of the architectures "
                        f"{', '.join(SUPPORTED_ARCHITECTURES)}, got {name}")
    return name


def config_from_transformers(hf_model, rope_pairing="rotate_half"):
    """The ``DecoderConfig`` of one of the ``SUPPORTED_ARCHITECTURES`` (its ``config`` read; a
    setting the course's model lacks is a ``ValueError``). ``rope_pairing``: Llama's and Qwen3's pairs."""
    check_choice("rope_pairing", rope_pairing, ROTARY_PAIRINGS)
    return _CONFIGS[_architecture(hf_model)](hf_model.config, rope_pairing)


def interleave_permutation(d_head):
    """The order that moves Hugging Face's ``rotate_half`` pairs ``(i, i + d/2)`` to RoFormer's
    ``(2i, 2i + 1)``: ``[0, d/2, 1, d/2 + 1, ...]`` ``(d_head,)``; row ``j`` of a head's new
    projection is row ``order[j]`` of the old one."""
    return torch.arange(d_head).view(2, d_head // 2).t().flatten()  # (d_head,)


def _copy(target, source, transpose=False):
    target.copy_(source.t() if transpose else source)


def _set_dropout(model, attention_p, residual_p):
    """Theirs where ours has the same place: on the attention weights and on each sublayer's output."""
    for layer in model.layers:
        layer.self_attn_heads.dropout.p = attention_p
        for sublayer in layer.sublayers:
            sublayer.drop.p = residual_p


def _load_gpt2(model, hf):
    d, blocks = model.d_model, hf.transformer
    _copy(model.embed.weight, blocks.wte.weight)
    _copy(model.pe.weight, blocks.wpe.weight)
    for layer, block in zip(model.layers, blocks.h):
        attention, (attn_sub, ffn_sub) = layer.self_attn_heads, layer.sublayers
        for norm, hf_norm in ((attn_sub.norm, block.ln_1), (ffn_sub.norm, block.ln_2)):
            _copy(norm.weight, hf_norm.weight)
            _copy(norm.bias, hf_norm.bias)
        weight, bias = block.attn.c_attn.weight, block.attn.c_attn.bias  # (d, 3d), (3d,): Conv1D, q | k | v
        for i, linear in enumerate((attention.linear_query, attention.linear_key, attention.linear_value)):
            _copy(linear.weight, weight[:, i * d:(i + 1) * d], transpose=True)
            _copy(linear.bias, bias[i * d:(i + 1) * d])
        for linear, conv in ((attention.linear_out, block.attn.c_proj), (layer.ffn[0], block.mlp.c_fc),
                             (layer.ffn[3], block.mlp.c_proj)):
            _copy(linear.weight, conv.weight, transpose=True)
            _copy(linear.bias, conv.bias)
    _copy(model.norm.weight, blocks.ln_f.weight)
    _copy(model.norm.bias, blocks.ln_f.bias)


def _load_feed_forward(ffn, mlp):
    """A SwiGLU from Llama's ``gate_proj``, ``up_proj``, ``down_proj``; a mixture of experts from the
    router's ``gate`` and the fused ``experts.gate_up_proj`` and ``experts.down_proj``."""
    if isinstance(ffn, MixtureOfExperts):
        _copy(ffn.router.weight, mlp.gate.weight)  # (E, d_model)
        hidden = ffn.experts[0].hidden
        for expert, gate_up, down in zip(ffn.experts, mlp.experts.gate_up_proj, mlp.experts.down_proj):
            _copy(expert.gate.weight, gate_up[:hidden])  # (hidden, d_model): the first half gates
            _copy(expert.up.weight, gate_up[hidden:])  # (hidden, d_model)
            _copy(expert.down.weight, down)  # (d_model, hidden)
        return
    for linear, hf_linear in ((ffn.gate, mlp.gate_proj), (ffn.up, mlp.up_proj), (ffn.down, mlp.down_proj)):
        _copy(linear.weight, hf_linear.weight)
        if hf_linear.bias is not None:
            _copy(linear.bias, hf_linear.bias)


def _load_llama(model, hf):
    inner = hf.model
    _copy(model.embed.weight, inner.embed_tokens.weight)
    for layer, block in zip(model.layers, inner.layers):
        attention, hf_attention = layer.self_attn_heads, block.self_attn
        order = None
        if model.rotary.pairing == "interleaved":  # per head, rows (i, i + d/2) become (2i, 2i + 1)
            d_k = attention.d_k
            order = interleave_permutation(d_k)  # (d_k,)
        pairs = ((attention.linear_query, hf_attention.q_proj, order), (attention.linear_key, hf_attention.k_proj, order),
                 (attention.linear_value, hf_attention.v_proj, None), (attention.linear_out, hf_attention.o_proj, None))
        for linear, hf_linear, rows in pairs:
            weight, bias = hf_linear.weight, hf_linear.bias  # (heads · d_k, d_model), (heads · d_k,)
            if rows is not None:
                weight = weight.view(-1, attention.d_k, weight.shape[-1])[:, rows].flatten(0, 1)
                bias = None if bias is None else bias.view(-1, attention.d_k)[:, rows].flatten()
            _copy(linear.weight, weight)
            if bias is not None:
                _copy(linear.bias, bias)
        _load_feed_forward(layer.ffn, block.mlp)
        if attention.qk_norm is not None:  # a head's gains follow its rows' order
            for norm, hf_norm in ((attention.q_norm, hf_attention.q_norm), (attention.k_norm, hf_attention.k_norm)):
                weight = hf_norm.weight  # (d_k,) per head, or (heads · d_k,) over all heads
                _copy(norm.weight, weight if order is None else weight.view(-1, attention.d_k)[:, order].flatten())
        if model.config.norm_output:  # OLMo 2: the norms act on each sublayer's output
            norms = ((layer.sublayers[0].out_norm, block.post_attention_layernorm),
                     (layer.sublayers[1].out_norm, block.post_feedforward_layernorm))
        else:  # Llama, Qwen3: on each sublayer's input (Llama's "post-attention" norm is the MLP's input)
            norms = ((layer.sublayers[0].norm, block.input_layernorm),
                     (layer.sublayers[1].norm, block.post_attention_layernorm))
        for norm, hf_norm in norms:
            _copy(norm.weight, hf_norm.weight)
    _copy(model.norm.weight, inner.norm.weight)


def _load_deepseek_v3(model, hf):
    """DeepSeek stores its rotated parts interleaved (``rope_interleave``) or as halves: the rows of
    each head's rotated query part and of the shared rotated key are put in the model's pairing."""
    inner, c = hf.model, hf.config
    native = "interleaved" if getattr(c, "rope_interleave", True) else "rotate_half"
    d_r = c.qk_rope_head_dim
    order = torch.arange(d_r)  # (d_r,): new row j is old row order[j]
    if model.rotary.pairing != native:
        to_interleaved = interleave_permutation(d_r)
        order = to_interleaved if native == "rotate_half" else to_interleaved.argsort()

    def rope_rows(weight, rows_per_head):
        """Reorder the last ``d_r`` rows of each block of ``rows_per_head`` rows."""
        blocks = weight.view(-1, rows_per_head, weight.shape[-1])  # (blocks, rows, in)
        rope = blocks[:, rows_per_head - d_r:][:, order]  # (blocks, d_r, in)
        return torch.cat([blocks[:, :rows_per_head - d_r], rope], dim=1).flatten(0, 1)

    _copy(model.embed.weight, inner.embed_tokens.weight)
    for layer, block in zip(model.layers, inner.layers):
        attention, hf_attention = layer.self_attn_heads, block.self_attn
        if attention.q_latent_dim is None:
            _copy(attention.linear_query.weight, rope_rows(hf_attention.q_proj.weight, attention.d_k))
        else:
            _copy(attention.query_down.weight, hf_attention.q_a_proj.weight)
            _copy(attention.query_norm.weight, hf_attention.q_a_layernorm.weight)
            _copy(attention.query_up.weight, rope_rows(hf_attention.q_b_proj.weight, attention.d_k))
        _copy(attention.kv_down.weight, rope_rows(hf_attention.kv_a_proj_with_mqa.weight, c.kv_lora_rank + d_r))
        _copy(attention.kv_norm.weight, hf_attention.kv_a_layernorm.weight)
        _copy(attention.kv_up.weight, hf_attention.kv_b_proj.weight)
        _copy(attention.linear_out.weight, hf_attention.o_proj.weight)
        _load_feed_forward(layer.ffn, block.mlp)
        _copy(layer.sublayers[0].norm.weight, block.input_layernorm.weight)
        _copy(layer.sublayers[1].norm.weight, block.post_attention_layernorm.weight)
    _copy(model.norm.weight, inner.norm.weight)


def from_transformers(hf_model, rope_pairing="rotate_half", store_alphas=False):
    """The course's ``DecoderOnlyTransformer`` equal to a ``transformers`` model of one of the
    ``SUPPORTED_ARCHITECTURES`` (GPT-2, Llama, Qwen3, OLMo 2, Mistral, Mixtral, Qwen3-MoE, dense
    DeepSeek-V3) of any size: its config read (``config_from_transformers``), every weight copied,
    on the same device and dtype, in the same train or eval mode. ``rope_pairing`` (all but GPT-2):
    ``"rotate_half"`` or ``"interleaved"``, the rotated rows permuted where the model stores the
    other pairing (the same function). ``store_alphas``: the teaching path. Another architecture is a ``TypeError``;
    a setting the course lacks (Llama 3.1's scaled rotary frequencies, among others) a ``ValueError``.
    Equal in eval mode; in training, the dropout on the attention weights and on the sublayers'
    outputs is theirs, but GPT-2's dropout on the embeddings has no place here."""
    config = config_from_transformers(hf_model, rope_pairing).replace(store_alphas=store_alphas)
    parameter = next(hf_model.parameters())
    model = config.build().to(device=parameter.device, dtype=parameter.dtype)
    with torch.no_grad():
        c = hf_model.config
        if type(hf_model).__name__ == "GPT2LMHeadModel":
            _load_gpt2(model, hf_model)
            _set_dropout(model, c.attn_pdrop, c.resid_pdrop)
        elif type(hf_model).__name__ == "DeepseekV3ForCausalLM":
            _load_deepseek_v3(model, hf_model)
            _set_dropout(model, float(c.attention_dropout or 0.0), 0.0)
        else:
            _load_llama(model, hf_model)
            _set_dropout(model, float(c.attention_dropout or 0.0), 0.0)
        if not config.tie_weights:
            _copy(model.head.weight, hf_model.lm_head.weight)
    return model.train(hf_model.training)
