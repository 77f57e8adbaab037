"""Chapter 10: ALiBi's head (its slope) and RoPE's base, with the attention pattern each gives."""
import math

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..checks import check_positive_int
from ..models import RotaryEmbedding, alibi_bias, alibi_slopes, rotary_frequencies
from ..plots import position_explorer_figure
from ._figure_box import FigureBox, show

__all__ = ["position_explorer_state", "position_explorer"]


def position_explorer_state(head=0, base=10000.0, n_heads=4, length=16, d_head=16, seed=0):
    """What the chapter-10 widget shows: ALiBi's bias for one head and RoPE's score for one base.

    ALiBi: head ``head`` of ``n_heads`` (its slope from ``alibi_slopes``), the bias
    ``-slope × distance`` for distances ``0 .. length-1`` and the causal attention over
    ``length`` positions that the bias alone gives (every content score equal). RoPE: a fixed
    random vector ``v`` ``(d_head,)`` (seeded by ``seed``) used as query and key; its score with
    itself ``d`` positions apart, ``rotate(v, d) · v / √d_head`` (by ``RotaryEmbedding(d_head,
    base)``), and the causal attention a sequence of that one vector gets from those scores.

    Returns a dict: ``head``, ``slope`` and ``base`` (floats and ints as given), ``distances``
    ``(length,)``, ``alibi_bias`` and ``rope_scores`` ``(length,)``, ``alibi_attention`` and
    ``rope_attention`` ``(length, length)``, rows summing to 1.
    """
    check_positive_int("n_heads", n_heads)
    check_positive_int("length", length)
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < n_heads:
        raise ValueError(f"head must be an int in 0..{n_heads - 1}, got {head!r}")
    rotary = RotaryEmbedding(d_head, base=base, max_len=length)
    causal = torch.ones(length, length, dtype=torch.bool).tril()  # (L, L)
    slope = float(alibi_slopes(n_heads)[head])
    distances = torch.arange(length)  # (L,)
    bias = alibi_bias(n_heads, length)[head]  # (L, L)
    alibi_attention = torch.softmax(bias.masked_fill(~causal, float("-inf")), dim=-1)  # (L, L)
    vector = torch.randn(d_head, generator=torch.Generator().manual_seed(seed))  # (d_head,)
    with torch.no_grad():
        placed = rotary(vector.expand(length, d_head), distances)  # (L, d_head): v at positions 0..L-1
    scores = placed @ placed.T / d_head ** 0.5  # (L, L): depends on i - j only
    rope_attention = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)  # (L, L)
    return {
        "head": head,
        "slope": slope,
        "base": base,
        "distances": distances,
        "alibi_bias": -slope * distances.float(),
        "rope_scores": scores[:, 0],  # (L,): query at d, key at 0
        "alibi_attention": alibi_attention,
        "rope_attention": rope_attention,
    }


def position_explorer(n_heads=4, length=16, d_head=16, seed=0):
    """Sliders for ALiBi's head (its slope) and RoPE's base, redrawing the bias or score against
    the distance and the attention pattern each gives (``position_explorer_state`` computes it;
    ``plots.position_explorer_figure`` draws it). Returns a ``VBox``; its ``figure`` is redrawn
    in place, ``head`` and ``base`` are the sliders and ``label`` the line under them."""
    check_positive_int("n_heads", n_heads)  # the slider's range
    head = widgets.IntSlider(value=0, min=0, max=n_heads - 1, description="ALiBi head", continuous_update=False)
    base = widgets.FloatLogSlider(value=10000.0, base=10, min=1, max=5, step=0.25, description="RoPE base",
                                  readout_format=".4g", continuous_update=False)
    label = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(9, 5.6), layout="constrained")

    def redraw(_change=None):
        state = position_explorer_state(head.value, base.value, n_heads, length, d_head, seed)
        position_explorer_figure(state, figure)
        reach = int((state["alibi_attention"][-1] > 0.01).sum())
        slowest = 2 * math.pi / float(rotary_frequencies(d_head, base.value)[-1])  # positions per turn
        label.value = (f"ALiBi head {head.value} of {n_heads}, slope {state['slope']:.4g}: the last query gives "
                       f"more than 1% of its attention to {reach} of {length} keys. RoPE base {base.value:.4g}: "
                       f"the slowest pair needs {slowest:.4g} positions for a full turn.")
        show(output, figure)

    head.observe(redraw, names="value")
    base.observe(redraw, names="value")
    redraw()
    box = FigureBox([widgets.HBox([head, base]), label, output], figure)
    box.head, box.base, box.label = head, base, label
    return box
