"""Chapter 02: switch the causal and padding masks and see the attention weights they leave."""
import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..checks import check_non_negative_int
from ..models import padding_mask, scaled_dot_product, subsequent_mask
from ..plots import mask_and_weights
from ._figure_box import FigureBox, show

__all__ = ["mask_explorer_weights", "mask_explorer"]

MASK_EXPLORER_MAX_LEN = 10


def mask_explorer_weights(length, causal=False, n_padded=0, seed=0, d_k=4):
    """The mask and the self-attention weights it gives a fixed random sequence.

    Queries and keys ``(1, MASK_EXPLORER_MAX_LEN, d_k)`` are drawn once from ``seed`` and cut
    to ``length``, so changing the mask is the only thing that changes the weights. The last
    ``n_padded`` positions are padding: a source mask ``(1, 1, L)`` hides them as keys; with
    ``causal`` the subsequent mask ``(1, L, L)`` also hides every later key. The two combine
    with ``&``.

    Returns ``(mask, weights)``, both ``(L, L)``; ``mask`` is bool, ``True`` = may attend.
    """
    check_non_negative_int("length", length)
    if not 1 <= length <= MASK_EXPLORER_MAX_LEN:
        raise ValueError(f"length must be an int in 1..{MASK_EXPLORER_MAX_LEN}, got {length!r}")
    check_non_negative_int("n_padded", n_padded)
    if n_padded >= length:
        raise ValueError(f"n_padded must be an int in 0..{length - 1} (one real element at least), got {n_padded!r}")
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(1, MASK_EXPLORER_MAX_LEN, d_k, generator=generator)[:, :length]  # (1, L, d_k)
    keys = torch.randn(1, MASK_EXPLORER_MAX_LEN, d_k, generator=generator)[:, :length]  # (1, L, d_k)
    ids = torch.ones(1, length, dtype=torch.long)  # (1, L): a token id per position, 0 = pad
    ids[:, length - n_padded:] = 0
    mask = padding_mask(ids, pad_id=0)  # (1, 1, L)
    if causal:
        mask = mask & subsequent_mask(length)  # (1, L, L)
    mask = mask.expand(1, length, length)  # (1, L, L): one row per query, for drawing
    _, weights = scaled_dot_product(queries, keys, keys, mask)  # (1, L, L)
    return mask[0], weights[0]


def _describe_row(mask, weights, row):
    visible = mask[row].nonzero().flatten().tolist()
    shares = ", ".join(f"{weights[row, key]:.2f}" for key in visible)
    return f"query {row} reads keys {visible} with weights [{shares}] (sum {weights[row].sum():.2f})"


def mask_explorer(seed=0):
    """Mask explorer: switch the causal and padding masks, pick the length and a query row.

    Shows the mask and the resulting attention weights side by side (``mask_and_weights``),
    the chosen row outlined, and a line spelling out that row's weights. The container's
    ``figure`` attribute is the figure redrawn in place.
    """
    length = widgets.IntSlider(value=6, min=2, max=MASK_EXPLORER_MAX_LEN, description="length")
    causal = widgets.Checkbox(value=True, description="causal mask")
    padding = widgets.Checkbox(value=False, description="padding mask")
    n_padded = widgets.IntSlider(value=2, min=1, max=5, description="# padded", disabled=True)
    query_row = widgets.IntSlider(value=2, min=0, max=5, description="query row")
    summary = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(8.5, 3.8), layout="constrained")

    resizing = False

    def redraw(_change=None):
        if resizing:  # the sliders' bounds are moving with the length: draw once, afterwards
            return
        n_padded.disabled = not padding.value
        mask, weights = mask_explorer_weights(
            length.value, causal=causal.value, n_padded=n_padded.value if padding.value else 0, seed=seed
        )
        mask_and_weights(mask, weights, query_row=query_row.value, fig=figure)
        summary.value = _describe_row(mask, weights, query_row.value)
        show(output, figure)

    def resize(_change):
        nonlocal resizing
        resizing = True  # lowering a max may clamp a value, which would redraw mid-update
        n_padded.max = length.value - 1
        query_row.max = length.value - 1
        resizing = False
        redraw()

    length.observe(resize, names="value")
    for control in (causal, padding, n_padded, query_row):
        control.observe(redraw, names="value")
    redraw()
    controls = widgets.HBox([widgets.VBox([length, query_row]), widgets.VBox([causal, padding, n_padded])])
    return FigureBox([controls, summary, output], figure)
