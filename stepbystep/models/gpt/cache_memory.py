"""What a KV cache costs (chapter 12): every layer keeps a key and a value vector per token and per
key head, so its size grows with the context and the batch, and shrinks with fewer key heads; with
latent attention (chapter 17) each layer keeps one latent and one shared rotated key per token."""
import torch

from ...checks import check_instance, check_non_negative_int, check_positive_int

__all__ = ["PUBLISHED_CACHES", "kv_cache_bytes", "latent_cache_bytes"]

# from the models' released configurations: layers, query heads, key-value heads, head size, context
PUBLISHED_CACHES = {
    "GPT-2 small": dict(n_layers=12, n_heads=12, n_kv_heads=12, head_dim=64, context=1024),
    "Falcon 7B (multi-query)": dict(n_layers=32, n_heads=71, n_kv_heads=1, head_dim=64, context=2048),
    "Llama 2 7B": dict(n_layers=32, n_heads=32, n_kv_heads=32, head_dim=128, context=4096),
    "Llama 2 70B": dict(n_layers=80, n_heads=64, n_kv_heads=8, head_dim=128, context=4096),
    "Llama 3 8B": dict(n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, context=8192),
}


def kv_cache_bytes(n_layers, n_kv_heads, head_dim, n_tokens, batch_size=1, dtype=torch.float32, window=None,
                   sinks=0):
    """Bytes of the keys and values a decoder caches: ``2 · n_layers · n_kv_heads · head_dim ·
    n_tokens · batch_size · (bytes per number of dtype)``. Llama 3 8B in bfloat16 (32 layers,
    8 key heads of 128): 131072 bytes, 128 KiB, per token.

    ``window``, ``sinks`` (chapter 17): a sliding-window cache holds ``min(n_tokens, sinks + window)``
    tokens, so its bytes stop growing there. Mistral 7B v0.1 in bfloat16 (32 layers, 8 key heads of
    128, ``sliding_window`` 4096): 512 MiB at any context from 4096 tokens on, where a full cache of
    32768 tokens would take 4 GiB."""
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads), ("head_dim", head_dim),
                        ("batch_size", batch_size)):
        check_positive_int(name, value)
    check_non_negative_int("n_tokens", n_tokens)
    check_instance("dtype", dtype, torch.dtype, "a torch.dtype such as torch.bfloat16")
    check_non_negative_int("sinks", sinks)
    if window is not None:
        check_positive_int("window", window)
        n_tokens = min(n_tokens, sinks + window)  # a rolling buffer: the sinks and the last window tokens
    elif sinks:
        raise ValueError(f"sinks={sinks} needs a window: without one the cache holds every token anyway")
    return 2 * n_layers * n_kv_heads * head_dim * n_tokens * batch_size * dtype.itemsize


def latent_cache_bytes(n_layers, kv_latent_dim, rope_head_dim, n_tokens, batch_size=1, dtype=torch.float32):
    """Bytes a latent-attention decoder caches: ``n_layers · (kv_latent_dim + rope_head_dim) · n_tokens ·
    batch_size · (bytes per number)``, whatever the number of heads. DeepSeek-V3 in bfloat16 (61 layers,
    a latent of 512, a rotated key of 64): 70,272 bytes, about 69 KiB, per token."""
    for name, value in (("n_layers", n_layers), ("kv_latent_dim", kv_latent_dim), ("rope_head_dim", rope_head_dim),
                        ("batch_size", batch_size)):
        check_positive_int(name, value)
    check_non_negative_int("n_tokens", n_tokens)
    check_instance("dtype", dtype, torch.dtype, "a torch.dtype such as torch.bfloat16")
    return n_layers * (kv_latent_dim + rope_head_dim) * n_tokens * batch_size * dtype.itemsize
