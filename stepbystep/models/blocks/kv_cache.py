"""The KV cache (chapter 09): causal attention never lets an old token see a new one, so each layer
keeps the keys and values it has computed, and a new token computes only its own row.
A sliding window (chapter 17) bounds it: a query reads only the ``window`` most recent tokens and
the first ``sinks``, so each layer holds at most ``sinks + window`` tokens and drops the rest.
"""
import torch

from ...checks import check_non_negative_int, check_positive_int
from ..attention.masks import subsequent_mask, window_mask

__all__ = ["KVCache", "LayerCache", "WindowBuffer"]


def may_hold(ids, pad_id):
    """Whether ``ids`` may hold ``pad_id``: read on the CPU, assumed on an accelerator (no host sync)."""
    if pad_id is None:
        return False
    return ids.device.type != "cpu" or bool((ids == pad_id).any())


def _full_message(capacity, held, new):
    return (f"the KV cache is full: it was preallocated for capacity={capacity} tokens and holds {held}, "
            f"so {new} more do not fit; make it with a larger capacity (model.new_cache(capacity=...))")


class WindowBuffer:
    """One per-token tensor of a windowed cache, its tokens along ``dim``: the stream's first
    ``sinks`` tokens and its ``window`` most recent ones, at most ``sinks + window`` held.

    ``extend(new)`` returns what this step's queries read (the held tokens and the new ones, as
    columns), then keeps only the bounded part. Without ``slots`` it is a growing tensor, cut back
    at each step (the new tokens' first query reads only the ``window - 1`` tokens before it).
    With ``slots`` (``sinks + window``, or fewer for a stream that never passes them) it is a
    preallocated rolling buffer (Jiang et al., Mistral 7B, 2023): stream token ``s >= sinks`` goes
    to slot ``sinks + (s - sinks) mod window``, overwriting the token ``window`` older, which a
    one-token step no longer reads; a longer step reads the held tokens and its own before it
    overwrites. The columns' order differs between the two: the cache's stream indices, kept in a
    buffer of their own, say which token each column is.

    Positions stay the stream's (keys are rotated before they are cached, as Mistral's are), so a
    sink keeps position 0 however far the stream goes; StreamingLLM instead numbers the tokens by
    their place in the cache, which needs the keys stored unrotated and turned again at each step.
    """

    def __init__(self, dim, sinks, window, slots=None):
        self.dim, self.sinks, self.window, self.slots = dim, sinks, window, slots
        self.held, self.length, self._buffer = None, 0, None

    def extend(self, new):
        d, start = self.dim, self.length
        end = self.length = start + new.shape[d]
        if self.slots is None:  # growing: the held tokens this step reads, the new ones, then the bound
            columns = new if self.held is None else torch.cat([self._last(self.held, self.window - 1), new], dim=d)
            self.held = self._last(columns, self.window)
            return columns
        if end > self.slots and self.slots < self.sinks + self.window:
            raise ValueError(_full_message(self.slots, start, new.shape[d]))
        if self._buffer is None:
            shape = list(new.shape)
            shape[d] = self.slots
            self._buffer = new.new_empty(shape)
        in_place = new.shape[d] == 1 or end <= self.slots  # overwrites nothing a query of this step reads
        if not in_place:
            columns = torch.cat([self._buffer.narrow(d, 0, min(start, self.slots)), new], dim=d)
        kept = list(range(start, min(end, self.sinks)))  # the new tokens the buffer keeps: sinks...
        kept += list(range(max(start, self.sinks, end - self.window), end))  # ...and the last window
        stream = torch.tensor(kept, dtype=torch.long, device=new.device)  # (kept,)
        slots = torch.where(stream < self.sinks, stream, self.sinks + (stream - self.sinks) % self.window)
        self._buffer.index_copy_(d, slots, new.index_select(d, stream - start))
        self.held = self._buffer.narrow(d, 0, min(end, self.slots))
        return self.held if in_place else columns

    def _last(self, x, recent):
        """The sinks and the ``recent`` most recent tokens of ``x``."""
        d, t = self.dim, x.shape[self.dim]
        if t <= self.sinks + recent:
            return x
        return torch.cat([x.narrow(d, 0, self.sinks), x.narrow(d, t - recent, recent)], dim=d)

    def reorder(self, rows):
        """Keep the rows ``rows`` ``(N,)`` (dimension 0) of what is held."""
        if self._buffer is not None:
            self._buffer = self._buffer[rows]
            self.held = self._buffer.narrow(self.dim, 0, self.held.shape[self.dim])
        elif self.held is not None:
            self.held = self.held[rows]


class LayerCache:
    """One attention layer's keys and values so far, ``(N, h, t, d_k)`` each (``None`` before).

    ``static``: cross-attention's, projected from the encoder's states once. ``capacity``:
    preallocate for that many tokens and write each step in place (generation, no gradients).
    ``window``, ``sinks`` (chapter 17): hold only the first ``sinks`` and the ``window`` most recent
    tokens (``WindowBuffer``; with ``capacity``, a rolling buffer of ``min(capacity, sinks + window)``
    slots). ``length``: the tokens of the stream so far, held or dropped.
    """

    def __init__(self, static=False, capacity=None, window=None, sinks=0):
        self.static, self.capacity = static, capacity
        self.keys = self.values = None
        self.length = 0
        self._buffers = None  # with capacity: the (N, h, capacity, d_k) key and value buffers, once the first keys came
        self._window = None
        if window is not None:
            slots = None if capacity is None else min(capacity, sinks + window)
            self._window = [WindowBuffer(2, sinks, window, slots) for _ in range(2)]  # keys, values

    def extend(self, keys, values):
        """Append the new tokens' keys and values ``(N, h, L_new, d_k)``; returns all of them (with a
        window, those this step reads: ``keys`` and ``values`` then hold the bounded part)."""
        self.length += keys.shape[2]
        if self._window is not None:
            keys, values = (buffer.extend(new) for buffer, new in zip(self._window, (keys, values)))
            self.keys, self.values = (buffer.held for buffer in self._window)  # (N, h, <= sinks + window, d_k)
            return keys, values
        if self.capacity is not None:
            if self._buffers is None:  # keys and values are views of the buffers
                self._buffers = [x.new_empty(*x.shape[:2], self.capacity, x.shape[3]) for x in (keys, values)]
            start = 0 if self.keys is None else self.keys.shape[2]
            end = start + keys.shape[2]
            if end > self.capacity:
                raise ValueError(_full_message(self.capacity, start, keys.shape[2]))
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
        if self._window is not None:
            for buffer in self._window:
                buffer.reorder(rows)
            self.keys, self.values = (buffer.held for buffer in self._window)
        elif self.capacity is not None:
            self._buffers = [buffer[rows] for buffer in self._buffers]  # (N, h, capacity, d_k) each
            t = self.keys.shape[2]
            self.keys, self.values = (buffer[:, :, :t] for buffer in self._buffers)  # (N, h, t, d_k)
        else:
            self.keys, self.values = self.keys[rows], self.values[rows]  # (N, h, t, d_k)


class KVCache:
    """What a decoder keeps between steps: a ``LayerCache`` per layer (and per cross-attention,
    ``cross``), its ``length`` tokens' positions and, once padding may be among them, which tokens
    are real. Each step the model calls ``add_tokens`` and ``mask``, then every layer extends its
    ``LayerCache``.
    ``window``, ``sinks`` (chapter 17): each layer holds only the stream's first ``sinks`` tokens
    and its ``window`` most recent ones (``WindowBuffer``), and ``key_index``, ``positions`` and
    ``keep`` describe the keys each step reads; with ``capacity >= sinks + window`` the buffers
    roll and never fill.
    """

    def __init__(self, n_layers, cross=False, capacity=None, window=None, sinks=0):
        check_positive_int("n_layers", n_layers)
        if capacity is not None:
            check_positive_int("capacity", capacity)
        self.capacity, self.window, self.sinks = capacity, window, check_non_negative_int("sinks", sinks)
        self._windowed = None
        if window is not None:
            check_positive_int("window", window)
            slots = None if capacity is None else min(capacity, sinks + window)
            self._windowed = [WindowBuffer(1, sinks, window, slots) for _ in range(3)]  # stream index, positions, keep
            if capacity is not None and capacity >= sinks + window:
                self.capacity = None  # a rolling buffer never fills
        elif sinks:
            raise ValueError(f"sinks={sinks} needs a window: without one every token stays readable")
        self.key_index = None  # with a window: (t,) the stream index of each key this step reads
        self.layers = [LayerCache(capacity=capacity, window=window, sinks=sinks) for _ in range(n_layers)]
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
        if ids.dtype == torch.bool or ids.is_floating_point():
            raise TypeError(f"ids must be integer token ids (N, L_new), got dtype {ids.dtype}")
        n, new = ids.shape
        if self.capacity is not None and self.length + new > self.capacity:
            raise ValueError(_full_message(self.capacity, self.length, new))
        if self.positions is not None and self.positions.shape[0] != n:
            raise ValueError(f"the cache holds {self.positions.shape[0]} sequences, the new tokens {n}: "
                             "use one cache per batch")
        if self._windowed is not None:
            return self._add_windowed(ids, pad_id)
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

    def _add_windowed(self, ids, pad_id):
        """``add_tokens`` with a window: every token's stream index, position and realness are kept
        for the tokens the layers hold, and each step's are those of the keys it reads."""
        n, new = ids.shape
        keep = torch.ones_like(ids, dtype=torch.bool) if pad_id is None else ids != pad_id  # (N, L_new)
        if self.n_real is None:
            self.n_real = ids.new_zeros(n)  # (N,)
        positions = (self.n_real.unsqueeze(1) + keep.cumsum(dim=1) - 1).clamp(min=0)  # (N, L_new)
        self.n_real = self.n_real + keep.sum(dim=1)  # (N,)
        index = torch.arange(self.length, self.length + new, device=ids.device).unsqueeze(0)  # (1, L_new)
        index, self.positions, self.keep = (buffer.extend(x) for buffer, x in
                                            zip(self._windowed, (index, positions, keep)))  # (1 or N, t) each
        self.key_index = index[0]  # (t,)
        self.length += new
        return positions

    def mask(self, new):
        """Keep-mask ``(N or 1, new, t)`` of the newest ``new`` tokens: causal, no padding keys (with a
        window, only its keys and the sinks: ``window_mask``); ``None`` when every key may be read
        (one new token, no padding, no window)."""
        if self._windowed is not None:
            queries = torch.arange(self.length - new, self.length, device=self.key_index.device)  # (new,)
            causal = self.key_index.unsqueeze(0) <= queries.unsqueeze(1)  # (new, t)
            window = window_mask(queries, self.key_index, self.window, self.sinks)  # (1, new, t)
            return causal & window & self.keep.unsqueeze(1)  # (N, new, t)
        if self.keep is None:
            return None if new == 1 else subsequent_mask(self.length, device=self.positions.device)[:, -new:]
        keep = self.keep.unsqueeze(1)  # (N, 1, t)
        if new == 1:
            return keep  # one new token: every earlier token is in its past
        return subsequent_mask(self.length, device=keep.device)[:, -new:] & keep  # (N, new, t)

    def reorder(self, rows):
        """Keep the rows ``rows`` ``(N,)`` of everything held (beam search: the surviving hypotheses),
        the preallocated buffers of a cache with ``capacity`` included."""
        self.positions = self.positions[rows]
        if self._windowed is not None:
            for buffer in self._windowed[1:]:  # positions, keep (the stream indices are every row's)
                buffer.reorder(rows)
            self.keep, self.n_real = self.keep[rows], self.n_real[rows]
        elif self.keep is not None:
            self.keep, self.n_real = self.keep[rows], self.n_real[rows]
        for layer in self.layers:
            layer.reorder(rows)

    def __repr__(self):
        window = "" if self.window is None else f", window={self.window}, sinks={self.sinks}"
        return f"KVCache({len(self.layers)} layers, {self.length} tokens{window})"
