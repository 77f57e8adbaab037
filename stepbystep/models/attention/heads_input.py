"""What the narrow and the latent attentions do alike before their heads read anything: check the
input states, find the new tokens' rotation after a cache, turn queries and keys by it."""
import torch

from ...checks import check_float_dtype, check_vectors

__all__ = ["HeadsInput"]


class HeadsInput:
    """A mixin for an attention with ``d_model``, ``rotary`` and a projection named by ``weight_name``
    (whose weight's dtype the inputs must have)."""

    weight_name = "linear_query"

    def check_input(self, name, x):
        """Raise a clear error unless ``x`` is ``(N, L, d_model)``, ``L >= 1``, of the weights' dtype."""
        check_vectors(name, x, self.d_model, min_length=1)
        dtype = getattr(self, self.weight_name).weight.dtype  # read at each call: a reassigned weight counts
        if x.dtype != dtype:  # the rule itself (autocast's exemption) only off the common path
            check_float_dtype(name, x, dtype)

    def new_rotation(self, x, rotation, cache):
        """RoPE's ``(cos, sin)`` for the new tokens ``x`` ``(N, L, d_model)`` of a self-attention:
        ``rotation`` if given; else, after the tokens a cache has seen (held or dropped), from the
        rotary table (refused clearly past its ``max_len``); else ``None``, positions ``0 .. L - 1``."""
        if rotation is not None or self.rotary is None or cache is None or cache.static or cache.keys is None:
            return rotation  # given, no RoPE, or nothing cached before these tokens
        return self.rotary.after(cache.length, x.shape[1], x.device)

    def rotate(self, x, rotation=None):
        """Queries or keys ``(N, h, L, d)`` turned by ``rotation`` (RoPE; ``None``: at ``0 .. L - 1``)."""
        if self.rotary is None:
            return x
        if rotation is None:
            return self.rotary.rotate(x, torch.arange(x.shape[-2], device=x.device))
        return self.rotary.rotate_with(x, rotation)
