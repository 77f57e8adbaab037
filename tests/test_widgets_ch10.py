"""The position explorer of chapter 10: the computation behind the sliders, and the redraw."""
import matplotlib.pyplot as plt
import pytest
import torch

from stepbystep.models import alibi_slopes
from stepbystep.widgets import FigureBox, position_explorer, position_explorer_state


def test_state_alibi_follows_the_head():
    state = position_explorer_state(head=2, n_heads=8, length=10)
    assert state["slope"] == 1 / 8 and state["head"] == 2
    torch.testing.assert_close(state["alibi_bias"], -float(alibi_slopes(8)[2]) * torch.arange(10.0))
    weights = state["alibi_attention"]
    assert weights.shape == (10, 10)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(10))
    assert torch.equal(weights.triu(diagonal=1), torch.zeros(10, 10))  # causal
    row = weights[-1]
    assert bool((row[1:] > row[:-1]).all())  # the nearer the key, the more attention
    steep, shallow = position_explorer_state(head=0, length=10), position_explorer_state(head=3, length=10)
    assert steep["alibi_attention"][-1, -1] > shallow["alibi_attention"][-1, -1]


def test_state_rope_scores_depend_on_the_distance_only():
    state = position_explorer_state(base=100.0, length=12, d_head=8)
    scores, attention = state["rope_scores"], state["rope_attention"]
    assert scores.shape == (12,) and attention.shape == (12, 12)
    assert scores[0] == scores.max()  # a vector scores highest with itself
    logits = torch.log(attention[-1]) - torch.log(attention[-1, -1])  # the last row, relative to its diagonal
    torch.testing.assert_close(logits.flip(0), scores - scores[0], atol=1e-4, rtol=0)
    torch.testing.assert_close(attention.sum(dim=-1), torch.ones(12))


def test_a_larger_base_turns_slower():
    slow = position_explorer_state(base=1e5, length=12)["rope_scores"]
    fast = position_explorer_state(base=10.0, length=12)["rope_scores"]
    assert (slow[0] - slow[1]).abs() < (fast[0] - fast[1]).abs()


def test_state_refuses_a_head_out_of_range():
    with pytest.raises(ValueError, match="head must be an int in 0..3"):  # 4 heads by default, as the chapter's model
        position_explorer_state(head=4)
    with pytest.raises(ValueError, match="head must be an int in 0..7"):
        position_explorer_state(head=8, n_heads=8)


def test_sliders_redraw_in_place():
    widget = position_explorer(length=10)
    assert isinstance(widget, FigureBox)
    figure = widget.figure
    assert len(figure.axes) == 6 and "head 0" in figure.axes[0].get_title()
    assert widget.head.max == 3  # the chapter's 4 heads
    widget.head.value = 3
    assert widget.figure is figure and len(figure.axes) == 6
    assert "head 3" in figure.axes[0].get_title() and "head 3 of 4" in widget.label.value
    widget.base.value = 100.0
    assert "base 100" in figure.axes[2].get_title()
    assert plt.get_fignums() == []
