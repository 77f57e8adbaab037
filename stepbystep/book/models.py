"""The book's models under the book's names (Godoy, *Deep Learning with PyTorch Step-by-Step*,
chapters 9-11), behind one door: the course's classes, one of them under the book's other name,
three thin subclasses that add the book's two steps (``init_keys``, then ``forward``), and the
loader of the book's state dicts."""
import torch

from ..models import (
    Attention,
    DecoderLayer as _DecoderLayer,
    DecoderPe,
    DecoderSelfAttn,
    DecoderTransf as _DecoderTransf,
    EncoderDecoderSelfAttn,
    EncoderDecoderTransf,
    EncoderLayer,
    EncoderPe,
    EncoderSelfAttn,
    EncoderTransf,
    NarrowMultiHeadAttention,
    PatchEmbed,
    PositionalEncoding,
    SubLayerWrapper,
    TransformerModel,
    ViT,
    WideMultiHeadAttention,
    sinusoidal_table,
)
from ..models.attention.scaled_dot_product import scores

__all__ = [
    "Attention",
    "MultiHeadAttention",
    "EncoderSelfAttn",
    "DecoderSelfAttn",
    "EncoderPe",
    "DecoderPe",
    "EncoderDecoderSelfAttn",
    "PositionalEncoding",
    "MultiHeadedAttention",
    "SubLayerWrapper",
    "EncoderLayer",
    "DecoderLayer",
    "EncoderTransf",
    "DecoderTransf",
    "EncoderDecoderTransf",
    "TransformerModel",
    "PatchEmbed",
    "ViT",
    "load_book_state_dict",
]

# chapter 9's wide heads keep the book's two steps themselves: the same class, under the book's name
MultiHeadAttention = WideMultiHeadAttention


class MultiHeadedAttention(NarrowMultiHeadAttention):
    """The book's narrow attention (chapter 10): ``init_keys(key)`` keeps ``key`` ``(N, L_k, d_model)``,
    then each ``forward(query, mask=None)`` attends to it: ``NarrowMultiHeadAttention``'s
    ``forward(query, key, mask)``. ``proj_key``, ``proj_value`` ``(N, h, L_k, d_k)`` and
    ``score_function(query)`` ``(N, h, L_q, L_k)`` are the book's steps, read from those keys."""

    key = None

    def init_keys(self, key):
        self.check_input("key", key)
        self.key = key

    @property
    def proj_key(self):
        return None if self.key is None else self.project_keys(self.key)[0]

    @property
    def proj_value(self):
        return None if self.key is None else self.project_keys(self.key)[1]

    def score_function(self, query):
        self._check_query(query)
        q = self.rotate(self.normed_chunks(self.linear_query(query), self.q_norm))  # (N, h, L_q, d_k)
        return scores(q, self.proj_key.repeat_interleave(self.groups, dim=1))  # (N, h, L_q, L_k)

    def forward(self, query, mask=None):
        self._check_query(query)
        return super().forward(query, self.key, mask)

    def _check_query(self, query):
        """Keys kept by ``init_keys``, and a ``query`` ``(N, L_q, d_model)`` with their batch size."""
        if self.key is None:
            raise RuntimeError("no keys to attend to: call init_keys(key) before attending")
        self.check_input("query", query)
        if self.key.shape[0] != query.shape[0]:
            raise ValueError(f"query batch size {query.shape[0]} does not match the keys' batch size "
                             f"{self.key.shape[0]}; call init_keys(key) with this batch")

    def __getstate__(self):
        state = super().__getstate__()  # the keys may carry a graph: copies start without them
        state.pop("key", None)
        return state


class _KeptMemory:
    """The book's two steps for a decoder: ``init_keys(states)`` keeps the encoder's states, which
    each ``forward`` passes on as ``memory`` when it is given none."""

    memory = None

    def init_keys(self, states):
        self.memory = states

    def forward(self, query, source_mask=None, target_mask=None, memory=None, *args, **kwargs):
        memory = self.memory if memory is None else memory
        return super().forward(query, source_mask, target_mask, memory, *args, **kwargs)

    def __getstate__(self):
        state = super().__getstate__()  # the states may carry a graph: copies start without them
        state.pop("memory", None)
        return state


class DecoderLayer(_KeptMemory, _DecoderLayer):
    """The book's ``DecoderLayer``: ``init_keys(states)``, then ``forward(query, source_mask, target_mask)``."""


class DecoderTransf(_KeptMemory, _DecoderTransf):
    """The book's ``DecoderTransf``: ``init_keys(states)``, then ``forward(query, source_mask, target_mask)``."""


def load_book_state_dict(model, state_dict, strict=True):
    """Load into ``model`` a state dict the book's code saved: the book stores each
    ``PositionalEncoding``'s table ``pe``, which ours rebuilds; a stored table is checked to be
    this one (within ``1e-6 + 2e-7·max_len``: computed another way, e.g. in float64) and dropped.
    Returns ``load_state_dict``'s result; ``state_dict`` is left as it was."""
    return model.load_state_dict(without_book_tables(model, state_dict), strict=strict)


def without_book_tables(model, state_dict):
    """``state_dict`` without the positional tables the book stores, each checked against ``model``'s."""
    state_dict = dict(state_dict)
    for name, module in model.named_modules():
        key = f"{name}.pe" if name else "pe"
        if isinstance(module, PositionalEncoding) and key in state_dict:
            _check_stored_table(module, key, state_dict.pop(key))
    return state_dict


def _check_stored_table(encoding, key, stored):
    if not isinstance(stored, torch.Tensor):
        raise TypeError(f"state dict entry {key!r} must be a tensor, got {type(stored).__name__}")
    if tuple(stored.shape) != tuple(encoding.pe.shape):
        raise ValueError(f"state dict entry {key!r} must be the positional table of shape {tuple(encoding.pe.shape)} "
                         f"(max_len={encoding.max_len}, d_model={encoding.d_model}), got shape {tuple(stored.shape)}; "
                         "build the PositionalEncoding with the max_len and d_model the stored model had")
    ours = sinusoidal_table(encoding.max_len, encoding.d_model).double().unsqueeze(0)  # (1, max_len, d_model)
    gap = (stored.detach().to("cpu", torch.float64) - ours).abs().max().item()
    tolerance = 1e-6 + 2e-7 * encoding.max_len
    if not gap <= tolerance:
        raise ValueError(f"state dict entry {key!r} must hold the sinusoidal table of \"Attention Is All You Need\" "
                         f"(within {tolerance:.1e}), got a table that differs from it by up to {gap:.3g}")
