"""Translation (chapters 07-08): many texts in batches of similar length, or one with its alignment."""
from dataclasses import dataclass

import torch
from torch.nn.utils.rnn import pad_sequence

from ...checks import check_instance
from ...devices import evaluating, model_device
from ..blocks.decode_loop import in_batches
from ..metrics import up_to_first
from .decoding import beam_search, greedy_decode

__all__ = ["translate", "Translation", "translate_with_alignment"]


def translate(model, texts, src_vocab, tgt_vocab, max_new_tokens=None, beam_width=1, batch_size=1000):
    """The encoder-decoder ``model``'s output strings for ``texts`` (one string or a list), batched.
    Unknown characters become ``<unk>``; an empty or too long text is a ``ValueError``.
    ``max_new_tokens``: default the model's ``max_len``; ``beam_width`` > 1: ``beam_search``."""
    single = isinstance(texts, str)
    texts = [texts] if single else list(texts)
    if not texts:
        raise ValueError("texts must hold at least one text, got none")
    model_max = getattr(model, "max_len", None)
    max_new_tokens = model_max if max_new_tokens is None else max_new_tokens
    device = model_device(model)
    ids = [torch.tensor(src_vocab.encode(text, max_len=model_max)) for text in texts]

    def run(batch):
        source = pad_sequence(batch, batch_first=True, padding_value=src_vocab.pad_id).to(device)  # (n, L_s)
        if beam_width == 1:
            generated = greedy_decode(model, source, tgt_vocab.sos_id, tgt_vocab.eos_id, max_new_tokens,
                                      tgt_vocab.pad_id)
        else:
            generated = beam_search(model, source, tgt_vocab.sos_id, tgt_vocab.eos_id, max_new_tokens,
                                    beam_width=beam_width, pad_id=tgt_vocab.pad_id)
        return [tgt_vocab.decode(row) for row in generated.cpu()]  # generated: (n, L)

    outputs = in_batches(ids, batch_size, run)
    return outputs[0] if single else outputs


@dataclass(frozen=True)
class Translation:
    """One translated text and its alignment: the characters read (``source_tokens``, ``L_s``) and
    written (``output_tokens``, ``L_out``), the cross-attention ``weights`` ``(n_heads, L_out, L_s)``
    of each written token over the source, and the characters the vocabulary did not know."""

    text: str
    translation: str
    source_tokens: list
    output_tokens: list
    weights: torch.Tensor
    unknown: tuple


def translate_with_alignment(model, text, src_vocab, tgt_vocab, layer_idx=-1, max_new_tokens=None):
    """Translate ``text`` greedily and return a ``Translation`` with the cross-attention of layer
    ``layer_idx``, read back by teacher forcing on the model's own output (mode restored).
    Unknown characters become ``<unk>``; an empty or too long text is a ``ValueError``."""
    model_max = getattr(model, "max_len", None)
    check_instance("text", text, str, "a str")
    if not text.strip():
        raise ValueError(f"text must hold a character other than spaces, got {text!r}")
    if model_max is not None and len(text) > model_max:
        raise ValueError(f"text must be at most {model_max} characters long for this model, got {len(text)}: "
                         f"{text[:model_max]!r}...")
    max_new_tokens = model_max if max_new_tokens is None else max_new_tokens
    device = model_device(model)
    source = torch.tensor([src_vocab.encode(text)], device=device)  # (1, L_s)
    generated = greedy_decode(model, source, tgt_vocab.sos_id, tgt_vocab.eos_id, max_new_tokens,
                              pad_id=tgt_vocab.pad_id)[0]  # (L,)
    generated = generated[up_to_first(generated[None], tgt_vocab.eos_id)[0]]  # (L_out,): to the first <eos>, included
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
