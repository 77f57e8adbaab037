"""Published models' attention settings (chapter 17), as their released ``config.json`` files name
them, and the KV cache each one holds, computed by ``kv_cache_bytes`` and ``latent_cache_bytes``.

Only the fields the cache depends on are kept: layers, key-value heads and their size, the latent
of latent attention, the sliding window and which layers have one, and the context the model was
released for. The numbers are the released files' (Hugging Face repositories ``deepseek-ai/DeepSeek-V3``,
``mistralai/Mistral-7B-v0.1``, ``google/gemma-3-4b-pt`` (its ``text_config``), ``Qwen/Qwen3-8B``,
``mistralai/Mixtral-8x7B-v0.1``, ``meta-llama/Meta-Llama-3-8B``). Where a file has no ``head_dim``
(Llama 3 8B's, Mixtral 8x7B's and Mistral 7B v0.1's), it is derived as ``transformers`` derives it:
hidden_size / num_attention_heads = 4096 / 32 = 128.
"""
import torch

from ...checks import check_choice, check_instance, check_non_negative_int
from .cache_memory import kv_cache_bytes, latent_cache_bytes

__all__ = ["PUBLISHED_CONFIGS", "published_attention", "published_cache_bytes"]

PUBLISHED_CONFIGS = {  # head_dim derived (hidden_size / num_attention_heads) for Llama 3, Mixtral and Mistral
    "Llama 3 8B": dict(num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                       max_position_embeddings=8192),
    "Mixtral 8x7B": dict(num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                         max_position_embeddings=32768, num_local_experts=8, num_experts_per_tok=2),
    "DeepSeek-V3": dict(num_hidden_layers=61, num_attention_heads=128, kv_lora_rank=512, qk_rope_head_dim=64,
                        qk_nope_head_dim=128, v_head_dim=128, max_position_embeddings=163840),
    "Mistral 7B v0.1": dict(num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                            sliding_window=4096, max_position_embeddings=32768),
    # every 6th layer global (its layer_types: "full_attention"), the 5 between windowed
    "Gemma 3 4B": dict(num_hidden_layers=34, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                       sliding_window=1024, sliding_window_pattern=6, max_position_embeddings=131072),
    "Qwen3 8B": dict(num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                     max_position_embeddings=40960),
}


def published_attention(name):
    """What ``name``'s cache is made of, from ``PUBLISHED_CONFIGS``: a dict with ``kind``
    (``"latent"``, ``"grouped-query"``, ``"multi-query"`` or ``"multi-head"``), ``n_layers``,
    ``n_heads``, ``n_kv_heads``, ``head_dim`` (``None`` for latent), ``kv_latent_dim`` and
    ``rope_head_dim`` (``None`` unless latent), ``window`` (``None``: none), ``full_layers`` (the
    layers without a window: all of them when there is none) and ``context``."""
    check_choice("name", name, tuple(PUBLISHED_CONFIGS))
    c = PUBLISHED_CONFIGS[name]
    n_layers, n_heads, window = c["num_hidden_layers"], c["num_attention_heads"], c.get("sliding_window")
    full_layers = n_layers if window is None else n_layers // c.get("sliding_window_pattern", n_layers + 1)
    attention = dict(n_layers=n_layers, n_heads=n_heads, n_kv_heads=None, head_dim=None, kv_latent_dim=None,
                     rope_head_dim=None, window=window, full_layers=full_layers, context=c["max_position_embeddings"])
    if "kv_lora_rank" in c:
        return dict(attention, kind="latent", kv_latent_dim=c["kv_lora_rank"], rope_head_dim=c["qk_rope_head_dim"])
    n_kv_heads = c["num_key_value_heads"]
    kind = "multi-head" if n_kv_heads == n_heads else "multi-query" if n_kv_heads == 1 else "grouped-query"
    return dict(attention, kind=kind, n_kv_heads=n_kv_heads, head_dim=c["head_dim"])


def published_cache_bytes(name, n_tokens, batch_size=1, dtype=torch.bfloat16):
    """Bytes of ``name``'s KV cache (``PUBLISHED_CONFIGS``) after ``n_tokens`` tokens: the latent
    and the rotated key per layer (``latent_cache_bytes``), or the keys and values of the key-value
    heads (``kv_cache_bytes``), the windowed layers holding at most their window."""
    a = published_attention(name)
    check_non_negative_int("n_tokens", n_tokens)
    check_instance("dtype", dtype, torch.dtype, "a torch.dtype such as torch.bfloat16")
    if a["kind"] == "latent":
        return latent_cache_bytes(a["n_layers"], a["kv_latent_dim"], a["rope_head_dim"], n_tokens, batch_size, dtype)
    windowed = a["n_layers"] - a["full_layers"]
    total = 0
    if a["full_layers"]:
        total += kv_cache_bytes(a["full_layers"], a["n_kv_heads"], a["head_dim"], n_tokens, batch_size, dtype)
    if windowed:
        total += kv_cache_bytes(windowed, a["n_kv_heads"], a["head_dim"], n_tokens, batch_size, dtype,
                                window=a["window"])
    return total
