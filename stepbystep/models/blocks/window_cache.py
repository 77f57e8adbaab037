"""The sliding-window KV cache (chapter 17): a query reads only the ``window`` most recent tokens and
the stream's first ``sinks``, so each layer holds at most ``sinks + window`` tokens, in a rolling
buffer (Jiang et al., Mistral 7B, 2023), and drops the rest.

Positions stay the stream's (keys are rotated before they are cached, as Mistral's are), so a sink
keeps position 0 however far the stream goes; StreamingLLM instead numbers the tokens by their
place in the cache, which needs the keys stored unrotated and turned again at each step.
"""
import torch

from ...checks import check_non_negative_int, check_positive_int
from ..attention.masks import window_keep
from .kv_cache import KVCache, LayerCache, full_message

__all__ = ["WindowBuffer", "WindowedLayerCache", "WindowedKVCache"]


class WindowBuffer:
    """One per-token tensor of a windowed cache, its tokens along ``dim``: the stream's first ``sinks``
    tokens and its ``window`` most recent ones, in ``slots = sinks + window`` columns (fewer with a
    smaller ``capacity``, which a longer stream then overfills).

    Stream token ``s`` goes to column ``s`` if ``s < sinks``, else ``sinks + (s - sinks) mod window``,
    overwriting the token ``window`` older, which a one-token step no longer reads; a longer step reads
    the held tokens and its own before they overwrite. So the columns are not in stream order: the
    cache keeps each column's stream index. ``extend(new)`` returns the columns this step reads.
    With ``capacity`` the buffer is written in place (generation, no gradients); without, each step
    writes a copy, so gradients flow through earlier steps.
    """

    def __init__(self, dim, sinks, window, capacity=None):
        self.dim, self.sinks, self.window, self.in_place = dim, sinks, window, capacity is not None
        self.slots = sinks + window if capacity is None else min(capacity, sinks + window)
        self.held, self.length, self._buffer = None, 0, None

    def extend(self, new):
        d, start = self.dim, self.length
        end = self.length = start + new.shape[d]
        if end > self.slots and self.slots < self.sinks + self.window:
            raise ValueError(full_message(self.slots, start, new.shape[d]))
        if self._buffer is None:
            shape = list(new.shape)
            shape[d] = self.slots
            self._buffer = new.new_empty(shape)
        columns = None  # a step that overwrites what its own queries read gets the columns apart
        if new.shape[d] > 1 and end > self.slots:
            columns = torch.cat([self._buffer.narrow(d, 0, min(start, self.slots)), new], dim=d)
        kept = list(range(start, min(end, self.sinks)))  # the new tokens the buffer keeps: sinks...
        kept += list(range(max(start, self.sinks, end - self.window), end))  # ...and the last window
        stream = torch.tensor(kept, dtype=torch.long, device=new.device)  # (kept,)
        slots = torch.where(stream < self.sinks, stream, self.sinks + (stream - self.sinks) % self.window)
        write = self._buffer.index_copy_ if self.in_place else self._buffer.index_copy
        self._buffer = write(d, slots, new.index_select(d, stream - start))
        self.held = self._buffer.narrow(d, 0, min(end, self.slots))
        return self.held if columns is None else columns

    def reorder(self, rows):
        """Keep the rows ``rows`` ``(N,)`` (dimension 0) of what is held."""
        if self._buffer is not None:
            self._buffer = self._buffer[rows]
            self.held = self._buffer.narrow(self.dim, 0, self.held.shape[self.dim])


class WindowedLayerCache(LayerCache):
    """A ``LayerCache`` that holds only the stream's first ``sinks`` and its ``window`` most recent
    tokens' keys and values, ``(N, h, <= sinks + window, d_k)`` each, in two ``WindowBuffer``;
    ``extend`` returns those this step reads."""

    def __init__(self, window, sinks=0, capacity=None):
        super().__init__(capacity=capacity)
        self._window = [WindowBuffer(2, sinks, window, capacity) for _ in range(2)]  # keys, values

    def extend(self, keys, values):
        self.length += keys.shape[2]
        keys, values = (buffer.extend(new) for buffer, new in zip(self._window, (keys, values)))
        self.keys, self.values = (buffer.held for buffer in self._window)  # (N, h, <= sinks + window, d_k)
        return keys, values

    def reorder(self, rows):
        for buffer in self._window:
            buffer.reorder(rows)
        self.keys, self.values = (buffer.held for buffer in self._window)


class WindowedKVCache(KVCache):
    """A ``KVCache`` whose layers hold only the stream's first ``sinks`` tokens and its ``window``
    most recent ones (``WindowedLayerCache``); ``key_index``, ``positions`` and ``keep`` describe the
    keys each step reads, and ``mask`` adds the window to the causal mask. ``window`` and ``sinks`` are
    checked here, once. With ``capacity >= sinks + window`` the buffers roll and never fill.
    """

    def __init__(self, n_layers, window, sinks=0, capacity=None):
        self.window, self.sinks = check_positive_int("window", window), check_non_negative_int("sinks", sinks)
        super().__init__(n_layers, capacity=capacity)
        self._streams = [WindowBuffer(1, sinks, window, capacity) for _ in range(3)]  # stream index, positions, keep
        if self._streams[0].slots == sinks + window:
            self.capacity = None  # a rolling buffer never fills
        self.key_index = None  # (t,): the stream index of each key this step reads

    def new_layer(self):
        return WindowedLayerCache(self.window, self.sinks, self.capacity)

    def add_tokens(self, ids, pad_id=None):
        """``KVCache.add_tokens``; every token's stream index, position and realness are kept for the
        tokens the layers hold, and ``key_index``, ``positions`` and ``keep`` are those of the keys this step reads."""
        self.check_new(ids)
        n, new = ids.shape
        keep = torch.ones_like(ids, dtype=torch.bool) if pad_id is None else ids != pad_id  # (N, L_new)
        if self.length == 0 and self.sinks and not keep[:, :self.sinks].all():
            row = int((~keep[:, :self.sinks]).any(dim=1).nonzero()[0])
            raise ValueError(f"attention_sinks={self.sinks} keep each stream's first {self.sinks} tokens, but row "
                             f"{row} starts with padding (pad_id={pad_id}): its sinks would be padding, which no "
                             "query reads. Pad such rows on the right, or run them one at a time")
        if self.n_real is None:
            self.n_real = ids.new_zeros(n)  # (N,)
        positions = (self.n_real.unsqueeze(1) + keep.cumsum(dim=1) - 1).clamp(min=0)  # (N, L_new)
        self.n_real = self.n_real + keep.sum(dim=1)  # (N,)
        index = torch.arange(self.length, self.length + new, device=ids.device).unsqueeze(0)  # (1, L_new)
        index, self.positions, self.keep = (buffer.extend(x) for buffer, x in
                                            zip(self._streams, (index, positions, keep)))  # (1 or N, t) each
        self.key_index = index[0]  # (t,)
        self.length += new
        return positions

    def mask(self, new):
        """Keep-mask ``(N, new, t)`` of the newest ``new`` tokens: causal, within the window or a sink, no padding keys."""
        queries = torch.arange(self.length - new, self.length, device=self.key_index.device)  # (new,)
        window = window_keep(queries, self.key_index, self.window, self.sinks, causal=True)  # (1, new, t)
        return window & self.keep.unsqueeze(1)  # (N, new, t)

    def reorder(self, rows):
        """``KVCache.reorder``: the rows of every layer and of the held positions and realness."""
        for buffer in self._streams[1:]:  # positions, keep (the stream indices are every row's)
            buffer.reorder(rows)
        self.positions, self.keep = (buffer.held for buffer in self._streams[1:])  # (N, t) each
        self.n_real = self.n_real[rows]
        for layer in self.layers:
            layer.reorder(rows)

    def __repr__(self):
        return f"KVCache({len(self.layers)} layers, {self.length} tokens, window={self.window}, sinks={self.sinks})"
