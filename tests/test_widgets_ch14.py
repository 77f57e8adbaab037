"""The tiles explorer of chapter 14: the state steps through one query block's tiles."""
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from stepbystep import plots
from stepbystep.widgets import FigureBox, tiles_explorer, tiles_explorer_state


def _qkv(length=10, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(length, 4, generator=generator), torch.randn(length, 4, generator=generator),
            torch.randn(length, 3, generator=generator))


def test_state_steps_through_the_row_block_and_ends_at_the_exact_output():
    q, k, v = _qkv()
    first = tiles_explorer_state(q, k, v, row=5, step=1, block_q=4, block_k=4)
    assert first["n_steps"] == 3 and first["q_block"] == 1 and first["keys_read"] == 4
    assert first["grid"].tolist() == [[1, 1, 1], [2, 0, 0], [0, 0, 0]]
    assert first["m"].shape == first["l"].shape == (1,)
    last = tiles_explorer_state(q, k, v, row=5, step=3, block_q=4, block_k=4)
    assert last["grid"].tolist() == [[1, 1, 1], [1, 1, 2], [0, 0, 0]]
    exact = torch.softmax(k @ q[5] / 2, dim=0) @ v  # d = 4: the scale is 1/2
    assert torch.allclose(last["partial"], exact, atol=1e-6) and last["error"] < 1e-6
    assert first["error"] > 1e-3
    assert torch.allclose(first["partial"], torch.softmax(k[:4] @ q[5] / 2, dim=0) @ v[:4], atol=1e-6)


def test_causal_state_skips_tiles_and_masks_the_future_of_the_row():
    q, k, v = _qkv()
    state = tiles_explorer_state(q, k, v, row=5, step=2, block_q=4, block_k=4, is_causal=True)
    assert state["n_steps"] == 2
    assert state["grid"].tolist() == [[1, 3, 3], [1, 2, 3], [0, 0, 0]]
    assert torch.isinf(state["scores"][6:]).all() and state["keys_read"] == 6
    exact = torch.softmax(k[:6] @ q[5] / 2, dim=0) @ v[:6]
    assert torch.allclose(state["partial"], exact, atol=1e-6)
    # row 4 is the first of its block: the block's last tile (keys 6-7) holds none of its keys, its state stays
    early = tiles_explorer_state(q, k, v, row=4, step=4, block_q=4, block_k=2, is_causal=True)
    assert early["n_steps"] == 4 and early["l"][2] == early["l"][3] and early["keys_read"] == 5
    assert torch.allclose(early["partial"], torch.softmax(k[:5] @ q[4] / 2, dim=0) @ v[:5], atol=1e-6)
    with pytest.raises(ValueError, match="step must be an int from 1 to 2"):
        tiles_explorer_state(q, k, v, row=5, step=3, block_q=4, block_k=4, is_causal=True)


def test_sliders_redraw_in_place():
    widget = tiles_explorer()
    assert isinstance(widget, FigureBox)
    figure = widget.figure
    assert widget.step.max == 6
    widget.step.value = 6
    assert "tile 6 of 6" in figure.axes[0].get_title()
    assert float(figure.axes[3].get_title().split()[-1]) < 1e-5  # the output has converged
    widget.causal.value = True
    widget.row.value = 5  # block 1: two tiles under causal
    assert widget.step.max == 2 and "tile 2 of 2" in figure.axes[0].get_title()
    colours = figure.axes[0].images[0].get_array()
    assert np.count_nonzero(colours == 3) == 15  # 6 blocks: 6·5/2 tiles skipped
    assert widget.figure is figure and plt.get_fignums() == []


def test_figure_shows_the_tile_legend_and_the_running_max_per_tile():
    q, k, v = _qkv(12)
    state = tiles_explorer_state(q, k, v, row=9, step=2, block_q=4, block_k=4)
    fig = plots.tiles_explorer_figure(state)
    assert [text.get_text() for text in fig.axes[0].get_legend().get_texts()] == ["to do", "done", "current"]
    twin = fig.axes[-1]
    assert twin.get_ylabel() == "running max m (red)"
    assert np.allclose(twin.lines[0].get_ydata(), state["m"].numpy())
    assert np.allclose(fig.axes[2].lines[0].get_ydata(), state["l"].numpy())


def test_figure_says_how_many_keys_a_causal_row_may_read():
    q, k, v = _qkv(12)
    plain = plots.tiles_explorer_figure(tiles_explorer_state(q, k, v, row=5, step=1, block_q=4, block_k=4))
    assert plain.axes[1].get_xlabel() == "key (blue: read so far, 4 of 12)"
    causal = plots.tiles_explorer_figure(tiles_explorer_state(q, k, v, row=5, step=1, block_q=4, block_k=4,
                                                              is_causal=True))
    assert causal.axes[1].get_xlabel().startswith("key (blue: read so far, 4 of the 6 this row may read")
