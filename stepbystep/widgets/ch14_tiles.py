"""Chapter 14: step through the tiles of one query block and watch one row's running max, sum and output."""
import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..checks import check_instance, check_int_range, check_positive_int, check_tensor
from ..models import attention_row_steps, tile_plan
from ..plots import plan_states, tiles_explorer_figure
from ._figure_box import FigureBox, show

__all__ = ["tiles_explorer_state", "tiles_explorer"]


def tiles_explorer_state(q, k, v, row=0, step=1, block_q=4, block_k=4, is_causal=False):
    """What the tiles widget shows for one head: ``q`` ``(L_q, d)``, ``k`` ``(L_k, d)``, ``v`` ``(L_k, d_v)``.

    The query block holding ``row`` reads its key blocks (``tile_plan``) one tile at a time;
    ``step`` tiles have been read (1 to ``n_steps``). Returns a dict: ``grid`` ``(n_q_blocks,
    n_k_blocks)`` codes (0 to do, 1 done, 2 current, 3 skipped; earlier query blocks done),
    the row's ``scores`` ``(L_k,)`` (``-inf`` on keys a causal row may not read), ``keys_read``,
    its running ``m`` and ``l`` after each tile read so far ``(step,)``, ``l_final``, the
    ``partial`` output ``acc / l`` and the ``exact`` one ``(d_v,)``, their max ``error``, and
    ``row``, ``step``, ``n_steps``, ``q_block``, ``block_q``, ``block_k``.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t, ndim=2)
    check_positive_int("block_q", block_q)
    check_positive_int("block_k", block_k)
    check_instance("is_causal", is_causal, bool, "True or False")
    l_q, l_k = q.shape[0], k.shape[0]
    check_int_range("row", row, 0, l_q - 1)
    plan, _ = tile_plan(l_q, l_k, block_q, block_k, is_causal)
    q_block = row // block_q
    key_blocks = plan[q_block][1]
    n_steps = len(key_blocks)
    check_int_range("step", step, 1, n_steps)
    grid = plan_states(plan, l_k, block_k)  # 1 computed, 3 skipped
    grid[q_block:][grid[q_block:] == 1] = 0  # this block and the later ones: still to do
    for j, (k_start, _) in enumerate(key_blocks[:step]):
        grid[q_block, k_start // block_k] = 2 if j == step - 1 else 1
    readable = row + 1 if is_causal else l_k  # a causal row reads keys 0..row
    m, l, o = attention_row_steps(q[row], k[:readable], v[:readable], block_k)  # (row blocks,), (row blocks, d_v)
    done = min(step, len(m))  # tiles past the row's last key block hold only keys it may not read
    scores = k @ q[row] / q.shape[1] ** 0.5  # (L_k,)
    scores[readable:] = float("-inf")
    exact = o[-1]
    partial = o[done - 1]
    return {"grid": grid, "scores": scores, "keys_read": min(key_blocks[step - 1][1], readable),
            "m": torch.cat([m[:done], m[done - 1].repeat(step - done)]),
            "l": torch.cat([l[:done], l[done - 1].repeat(step - done)]), "l_final": l[-1],
            "partial": partial, "exact": exact, "error": float((partial - exact).abs().max()),
            "row": row, "step": step, "n_steps": n_steps, "q_block": q_block, "block_q": block_q, "block_k": block_k}


def tiles_explorer(q=None, k=None, v=None, block_q=4, block_k=4, seed=0):
    """Sliders over the tiles: pick a query row, step through its block's tiles, switch causal on or off.

    Without ``q``, ``k``, ``v`` it draws 24 queries and keys of 8 dimensions and values of 6
    from ``seed``. Returns a ``FigureBox``; ``row``, ``step`` and ``causal`` are its controls.
    """
    if q is None:
        generator = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(24, 8, generator=generator) * 1.5, torch.randn(24, 8, generator=generator) * 1.5,
                   torch.randn(24, 6, generator=generator))
    row = widgets.IntSlider(value=q.shape[0] - 3, min=0, max=q.shape[0] - 1, description="query row",
                            continuous_update=False)
    step = widgets.IntSlider(value=1, min=1, max=1, description="tiles read", continuous_update=False)
    causal = widgets.Checkbox(value=False, description="causal")
    output = widgets.Output()
    figure = Figure(figsize=(12, 6.5), layout="constrained")

    def n_steps():
        plan, _ = tile_plan(q.shape[0], k.shape[0], block_q, block_k, causal.value)
        return len(plan[row.value // block_q][1])

    def redraw(_change=None):
        step.max = n_steps()  # the slider keeps its value when it still fits
        state = tiles_explorer_state(q, k, v, row.value, min(step.value, step.max), block_q, block_k, causal.value)
        tiles_explorer_figure(state, fig=figure)
        show(output, figure)

    for control in (row, step, causal):
        control.observe(redraw, names="value")
    redraw()
    box = FigureBox([widgets.HBox([row, step, causal]), output], figure)
    box.row, box.step, box.causal = row, step, causal
    return box
