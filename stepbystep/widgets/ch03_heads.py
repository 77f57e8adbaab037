"""Chapter 03: a slider over the head counts ``d_model`` allows, with each head's attention map."""
import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..checks import check_positive_int
from ..devices import evaluating
from ..models import NarrowMultiHeadAttention, WideMultiHeadAttention
from ..plots import head_maps
from ._figure_box import FigureBox, show

__all__ = ["heads_explorer_state", "heads_explorer"]


def divisors(n):
    """The positive divisors of ``n`` in increasing order: the head counts ``d_model`` allows."""
    check_positive_int("n", n)
    return [k for k in range(1, n + 1) if n % k == 0]


def _count_parameters(module):
    return sum(p.numel() for p in module.parameters())


def heads_explorer_state(n_heads, d_model=12, seq_len=4, seed=0):
    """What the heads widget shows for ``n_heads`` narrow heads on a fixed seeded input.

    The input ``(1, seq_len, d_model)`` comes from a ``torch.Generator`` seeded with ``seed``
    (scaled by 2 so the maps are not flat); the attention module is built with the same
    ``seed`` without touching the global RNG. A narrow module's four projections are
    ``(d_model, d_model)`` whatever ``n_heads`` is, so every head count sees the same
    projected queries and keys, only split differently.

    Returns a dict: ``n_heads``, ``d_k``, ``narrow_parameters`` and ``wide_parameters`` (the
    parameter counts of the ``NarrowMultiHeadAttention`` and of the ``WideMultiHeadAttention``
    with as many heads), ``alphas``, the self-attention weights ``(n_heads, L, L)``,
    and ``score_ranks``, the rank of each head's ``(L, L)`` score matrix (at most ``d_k``).
    """
    check_positive_int("d_model", d_model)
    check_positive_int("seq_len", seq_len)
    check_positive_int("n_heads", n_heads)
    if n_heads not in divisors(d_model):
        raise ValueError(f"n_heads must divide d_model={d_model} ({divisors(d_model)}), got {n_heads!r}")
    generator = torch.Generator().manual_seed(seed)
    x = 2 * torch.randn(1, seq_len, d_model, generator=generator)  # (1, L, d_model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        narrow = NarrowMultiHeadAttention(n_heads, d_model, dropout=0.0)
        wide = WideMultiHeadAttention(n_heads, d_model)
    with evaluating(narrow):
        narrow(x)  # self-attention
        queries = narrow.make_chunks(narrow.linear_query(x))[0].detach().double()  # (n_heads, L, d_k)
        keys = narrow.project_keys(x)[0][0].detach().double()  # (n_heads, L, d_k)
        scores = queries @ keys.transpose(-2, -1)  # (n_heads, L, L), rank <= d_k; double so rounding adds no rank
    return {
        "n_heads": n_heads,
        "d_k": narrow.d_k,
        "narrow_parameters": _count_parameters(narrow),
        "wide_parameters": _count_parameters(wide),
        "alphas": narrow.alphas[0],  # (n_heads, L, L)
        "score_ranks": [int(rank) for rank in torch.linalg.matrix_rank(scores)],
    }


def heads_explorer(d_model=12, seq_len=4, seed=0):
    """A heads slider over the divisors of ``d_model``: ``d_k``, parameter counts, each head's map.

    Returns a ``VBox`` (slider, label, output); its ``figure`` attribute is the one figure the
    slider redraws, titled with the setting it shows (``n_heads``, ``d_k``, the score ranks).
    """
    check_positive_int("seq_len", seq_len)
    options = divisors(d_model)
    slider = widgets.SelectionSlider(options=options, value=options[min(1, len(options) - 1)],
                                     description="heads", continuous_update=False)
    label = widgets.HTML()
    output = widgets.Output()
    figure = Figure(layout="constrained")

    def redraw(_change=None):
        state = heads_explorer_state(slider.value, d_model, seq_len, seed)
        label.value = (
            f"d_model = {d_model}, n_heads = {state['n_heads']}, <b>d_k = {state['d_k']}</b>; "
            f"parameters: narrow {state['narrow_parameters']:,}, wide {state['wide_parameters']:,}; "
            f"rank of each head's {seq_len}×{seq_len} scores: {state['score_ranks']}"
        )
        head_maps(state["alphas"], fig=figure)
        figure.suptitle(f"n_heads = {state['n_heads']}, d_k = {state['d_k']}, rank of each head's "
                        f"{seq_len}×{seq_len} scores: {state['score_ranks']}", fontsize=9)  # for a static page too
        show(output, figure)

    slider.observe(redraw, names="value")
    redraw()
    return FigureBox([slider, label, output], figure)
