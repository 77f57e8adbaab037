"""Chapter 09's translation of dates by a decoder-only model: completing ``<sos> text =``."""
from ..data.date_completions import prompt_ids, split_stream
from ..data.special_tokens import EOS
from ..models.gpt.generation import complete

__all__ = ["complete_dates"]


def complete_dates(model, texts, vocab, batch_size=500):
    """Translate ``texts`` by letting a decoder-only ``model`` complete ``<sos> text =`` greedily.

    Batched (``complete``), at most 11 new tokens (the ISO date and ``<eos>``). Returns one string
    per text: what the model wrote before ``<eos>``.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a list of texts, got one str: wrap it in a list")
    completions = complete(model, [prompt_ids(text, vocab) for text in texts], 11, EOS, batch_size)
    return [split_stream(ids, vocab)[0] for ids in completions]
