"""The decoder-only model (chapters 09-10): the model, its KV cache and generation."""
