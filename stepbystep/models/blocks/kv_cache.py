"""The KV cache (chapter 09): causal attention never lets an old token see a new one, so each layer
keeps the keys and values it has computed, and a new token computes only its own row. Chapter 17's
sliding window bounds it: ``window_cache.py``."""
import torch

from ...checks import check_positive_int
from ..attention.masks import subsequent_mask

__all__ = ["KVCache", "LayerCache"]


def may_hold(ids, pad_id):
    """Whether ``ids`` may hold ``pad_id``: read on the CPU, assumed on an accelerator (no host sync)."""
    return pad_id is not None and (ids.device.type != "cpu" or bool((ids == pad_id).any()))


def full_message(capacity, held, new):
    return (f"the KV cache is full: it was preallocated for capacity={capacity} tokens and holds {held}, "
            f"so {new} more do not fit; make it with a larger capacity (model.new_cache(capacity=...))")


class LayerCache:
    """One attention layer's keys and values so far, ``(N, h, t, d_k)`` each (``None`` before).
    ``static``: cross-attention's, projected from the encoder's states once. ``capacity``:
    preallocate for that many tokens and write each step in place (generation, no gradients).
    ``length``: the tokens of the stream so far (a windowed cache holds fewer)."""

    def __init__(self, static=False, capacity=None):
        self.static, self.capacity, self.length = static, capacity, 0
        self.keys = self.values = None
        self._buffers = None  # with capacity: the (N, h, capacity, d_k) key and value buffers, once the first keys came

    def extend(self, keys, values):
        """Append the new tokens' keys and values ``(N, h, L_new, d_k)``; returns all of them."""
        self.length += keys.shape[2]
        if self.capacity is not None:
            if self._buffers is None:  # keys and values are views of the buffers
                self._buffers = [x.new_empty(*x.shape[:2], self.capacity, x.shape[3]) for x in (keys, values)]
            start = 0 if self.keys is None else self.keys.shape[2]
            end = start + keys.shape[2]
            if end > self.capacity:
                raise ValueError(full_message(self.capacity, start, keys.shape[2]))
            for buffer, new in zip(self._buffers, (keys, values)):
                buffer[:, :, start:end] = new
            keys, values = (buffer[:, :, :end] for buffer in self._buffers)  # (N, h, t, d_k)
        elif self.keys is not None:
            keys = torch.cat([self.keys, keys], dim=2)  # (N, h, t, d_k)
            values = torch.cat([self.values, values], dim=2)  # (N, h, t, d_k)
        self.keys, self.values = keys, values
        return keys, values

    def reorder(self, rows):
        """Keep the rows ``rows`` ``(N,)``; a preallocated cache reorders its buffers, so that its
        keys and values stay views of them and the next ``extend`` writes into the kept rows."""
        if self.keys is None:
            return
        if self.capacity is not None:
            self._buffers = [buffer[rows] for buffer in self._buffers]  # (N, h, capacity, d_k) each
            t = self.keys.shape[2]
            self.keys, self.values = (buffer[:, :, :t] for buffer in self._buffers)  # (N, h, t, d_k)
        else:
            self.keys, self.values = self.keys[rows], self.values[rows]  # (N, h, t, d_k)


class KVCache:
    """What a decoder keeps between steps: a ``LayerCache`` per layer (and per cross-attention,
    ``cross``), its ``length`` tokens' positions and, once padding may be among them, which tokens
    are real. Each step the model calls ``add_tokens`` and ``mask``, then every layer extends its
    ``LayerCache``. ``capacity``: preallocate each layer's for that many tokens."""

    def __init__(self, n_layers, cross=False, capacity=None):
        check_positive_int("n_layers", n_layers)
        if capacity is not None:
            check_positive_int("capacity", capacity)
        self.capacity = capacity
        self.layers = [self.new_layer() for _ in range(n_layers)]
        self.cross = [LayerCache(static=True) for _ in range(n_layers)] if cross else None
        self.length = 0
        self.positions = None  # (N, t): each token's position among its row's real tokens
        self.keep = None  # (N, t) bool, True for the real tokens; None while no token may be padding
        self.n_real = None  # (N,): how many real tokens each row holds; None while no token may be padding

    def add_tokens(self, ids, pad_id=None):
        """Record the new tokens ``ids`` ``(N, L_new)``, ``pad_id`` marking padding (``None``: none);
        returns their positions ``(N, L_new)``, the real tokens before each in its row (padding
        moves nothing). The per-token record starts with the first step that may hold padding:
        on the CPU the ids are read; on an accelerator reading them would stall it, so any ``pad_id``
        starts it."""
        self.check_new(ids)
        n, new = ids.shape
        if self.keep is None and not may_hold(ids, pad_id):  # no padding so far: a token's position is its index
            positions = torch.arange(self.length, self.length + new, device=ids.device).expand(n, new)  # (N, L_new)
        else:
            keep = torch.ones_like(ids, dtype=torch.bool) if pad_id is None else ids != pad_id  # (N, L_new)
            if self.keep is None:  # the first step that may hold padding: every earlier token was real
                self.keep = keep.new_ones(n, self.length)  # (N, t)
                self.n_real = torch.full((n,), self.length, dtype=torch.long, device=ids.device)  # (N,)
            positions = (self.n_real.unsqueeze(1) + keep.cumsum(dim=1) - 1).clamp(min=0)  # (N, L_new)
            self.n_real = self.n_real + keep.sum(dim=1)  # (N,)
            self.keep = torch.cat([self.keep, keep], dim=1)  # (N, t)
        self.positions = positions if self.positions is None else torch.cat([self.positions, positions], dim=1)
        self.length += new
        return positions

    def new_layer(self):
        """One layer's empty ``LayerCache``."""
        return LayerCache(capacity=self.capacity)

    def check_new(self, ids):
        """Raise a clear error unless ``ids`` ``(N, L_new)`` are integer ids that fit: the cache's rows, its capacity."""
        if ids.dtype == torch.bool or ids.is_floating_point():
            raise TypeError(f"ids must be integer token ids (N, L_new), got dtype {ids.dtype}")
        n, new = ids.shape
        if self.capacity is not None and self.length + new > self.capacity:
            raise ValueError(full_message(self.capacity, self.length, new))
        if self.positions is not None and self.positions.shape[0] != n:
            raise ValueError(f"the cache holds {self.positions.shape[0]} sequences, the new tokens {n}: "
                             "use one cache per batch")

    def mask(self, new):
        """Keep-mask ``(N or 1, new, t)`` of the newest ``new`` tokens: causal, no padding keys;
        ``None`` when every key may be read (one new token, no padding)."""
        keep = None if self.keep is None else self.keep.unsqueeze(1)  # (N, 1, t): the real tokens
        if new == 1:
            return keep  # one new token: every earlier token is in its past
        causal = subsequent_mask(self.length, device=self.positions.device)[:, -new:]  # (1, new, t)
        return causal if keep is None else causal & keep  # (N or 1, new, t)

    def reorder(self, rows):
        """Keep the rows ``rows`` ``(N,)`` of everything held (beam search: the surviving hypotheses),
        the preallocated buffers of a cache with ``capacity`` included."""
        self.positions = self.positions[rows]
        if self.keep is not None:
            self.keep, self.n_real = self.keep[rows], self.n_real[rows]
        for layer in self.layers:
            layer.reorder(rows)

    def __repr__(self):
        return f"KVCache({len(self.layers)} layers, {self.length} tokens)"
