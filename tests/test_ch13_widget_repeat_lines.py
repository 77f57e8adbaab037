"""Chapter 13's head explorer marks where the repeat starts, as the chapter's maps do, and a
uniform guess's loss, ln V."""
import math

import torch
from matplotlib.figure import Figure

from stepbystep.data import repeated_sequences
from stepbystep.models import AttentionOnlyTransformer
from stepbystep.widgets.ch13_heads import _draw, head_explorer_state, repeat_start


def test_repeat_start_finds_where_the_opening_repeats():
    ids = repeated_sequences(5, 12, 32, seed=3)  # (5, 24)
    assert all(repeat_start(row.tolist()) == 12 for row in ids)
    assert repeat_start([3, 14, 15, 9, 3, 14, 15]) == 4
    assert repeat_start([1, 2, 3, 4]) is None and repeat_start([5, 1, 2, 5]) is None  # one token is no repeat


def _drawn(ids):
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(16, d_model=16, n_heads=2, n_layers=2, max_len=20, position_scheme="rope").eval()
    state = head_explorer_state(model, ids, layer=1, head=0)
    figure = Figure()
    _draw(figure, state, ids, 1, 0, ablate=True)
    map_ax, loss_ax = figure.axes[:2]  # the map and the losses (then the colour bar)
    return map_ax, loss_ax


def test_the_map_and_the_losses_mark_the_repeat_and_ln_v():
    map_ax, loss_ax = _drawn(torch.tensor([[3, 1, 4, 1, 5, 9, 3, 1, 4, 1, 5, 9]]))
    marks = sorted(tuple(line.get_xdata()) + tuple(line.get_ydata()) for line in map_ax.lines)
    assert marks == sorted([(0, 1, 5.5, 5.5), (5.5, 5.5, 0, 1)])  # one horizontal, one vertical, at 6 - 0.5
    levels = [line.get_ydata()[0] for line in loss_ax.lines if tuple(line.get_ydata()) == (line.get_ydata()[0],) * 2]
    assert any(math.isclose(level, math.log(16)) for level in levels)
    assert any(tuple(line.get_xdata()) == (6, 6) for line in loss_ax.lines)  # the repeat's first position


def test_no_repeat_no_marks_on_the_map():
    map_ax, loss_ax = _drawn(torch.tensor([[1, 2, 3, 4, 5, 6]]))
    assert not map_ax.lines
    assert any(math.isclose(line.get_ydata()[0], math.log(16)) for line in loss_ax.lines)
