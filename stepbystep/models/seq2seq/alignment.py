"""Translate one text and keep the alignment: which source characters each output character read.

``translate`` (in ``decoding``) turns texts into texts. For a picture of *how* the model
translated, ``translate_with_alignment`` also returns the decoder's cross-attention weights
over the source for every output token, computed on the model's own output.
"""
from dataclasses import dataclass

import torch

from ...checks import check_instance
from ...devices import evaluating
from .decoding import greedy_decode

__all__ = ["Translation", "translate_with_alignment"]


@dataclass(frozen=True)
class Translation:
    """One translated text and its alignment.

    Attributes:
        text: the input text.
        translation: the output text (special tokens left out).
        source_tokens: the characters the model read, ``<unk>`` for unknown ones (``L_s``).
        output_tokens: the tokens it wrote, ``<eos>`` included when it wrote one (``L_out``).
        weights: cross-attention weights ``(n_heads, L_out, L_s)``: row ``i`` is how much the
            decoder position that wrote ``output_tokens[i]`` attended to each source character.
        unknown: the characters of ``text`` that the source vocabulary does not know.
    """

    text: str
    translation: str
    source_tokens: list
    output_tokens: list
    weights: torch.Tensor
    unknown: tuple


def translate_with_alignment(model, text, src_vocab, tgt_vocab, layer_idx=-1, max_new_tokens=None):
    """Translate ``text`` greedily and return a :class:`Translation` with its cross-attention.

    The model decodes greedily (``greedy_decode``), then reads its own output once more with
    teacher forcing, so that ``model.decoder.layers[layer_idx].cross_attn_heads.alphas`` holds the
    weights of every output position at once. Characters outside ``src_vocab`` become
    ``<unk>`` (listed in ``unknown``); an empty text, or one longer than the model's
    ``max_len``, raises ``ValueError``. ``max_new_tokens`` caps the output (default: the model's
    ``max_len``).
    The model is left in the mode it was in.
    """
    model_max = getattr(model, "max_len", None)
    check_instance("text", text, str, "a str")
    if not text.strip():
        raise ValueError(f"text must hold a character other than spaces, got {text!r}")
    if model_max is not None and len(text) > model_max:
        raise ValueError(f"text must be at most {model_max} characters long for this model, got {len(text)}: "
                         f"{text[:model_max]!r}...")
    max_new_tokens = model_max if max_new_tokens is None else max_new_tokens
    device = next(model.parameters()).device
    source = torch.tensor([src_vocab.encode(text)], device=device)  # (1, L_s)
    generated = greedy_decode(model, source, tgt_vocab.sos_id, tgt_vocab.eos_id, max_new_tokens,
                              pad_id=tgt_vocab.pad_id)[0]  # (L,)
    is_eos = (generated == tgt_vocab.eos_id).nonzero()
    if len(is_eos):
        generated = generated[: is_eos[0, 0] + 1]  # (L_out,): up to the first <eos>, included
    start = torch.tensor([tgt_vocab.sos_id], device=device)  # (1,)
    target_in = torch.cat([start, generated[:-1]]).unsqueeze(0)  # (1, L_out)

    attention = model.decoder.layers[layer_idx].cross_attn_heads
    with evaluating(model):
        model(source, target_in)  # (1, L_out, V): we only need the weights it stores
    if attention.alphas is None:
        raise RuntimeError("this model's cross-attention keeps no weights (store_alphas=False): "
                           "set store_alphas = True on its attention modules to see the alignment")
    weights = attention.alphas[0].cpu()  # (n_heads, L_out, L_s)
    ids = generated.tolist()
    return Translation(
        text=text,
        translation=tgt_vocab.decode(ids),
        source_tokens=[src_vocab.itos[i] for i in source[0].tolist()],
        output_tokens=[tgt_vocab.itos[i] for i in ids],
        weights=weights,
        unknown=tuple(dict.fromkeys(c for c in text if c not in src_vocab.stoi)),
    )
