"""The decoder-only model (chapters 09-13): its configuration, the model, generation and completion."""
