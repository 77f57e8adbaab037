"""Chapter 07's beam trees: no edge is drawn through a node's label."""
import numpy as np
import pytest

from stepbystep.plots import beam_tree

GREEDY_WINS = {"<sos>": {"a": 0.05, "b": 0.5, "c": 0.45}, "a": {"a": 0.05, "b": 0.9, "c": 0.05},
               "b": {"a": 0.4, "b": 0.35, "c": 0.25}, "c": {"a": 0.05, "b": 0.45, "c": 0.5}}
TOY = {"<sos>": {"a": 0.5, "b": 0.4, "c": 0.1}, "a": {"a": 0.4, "b": 0.35, "c": 0.25},
       "b": {"a": 0.9, "b": 0.05, "c": 0.05}, "c": {"a": 0.34, "b": 0.33, "c": 0.33}}


def _edge_points(ax, line, n=200):
    """Points along every segment of ``line``, in display coordinates."""
    xy = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))  # (k, 2)
    t = np.linspace(0, 1, n)[:, None]  # (n, 1)
    return np.concatenate([a + t * (b - a) for a, b in zip(xy[:-1], xy[1:])])  # (n·(k-1), 2)


@pytest.mark.parametrize("table, show_greedy", [(TOY, False), (GREEDY_WINS, True)])
def test_no_edge_crosses_a_label(table, show_greedy):
    fig = beam_tree(table, beam_width=2, n_steps=3, show_greedy=show_greedy)
    fig.canvas.draw()
    ax = fig.axes[0]
    edges = [line for line in ax.get_lines() if len(line.get_xdata()) > 1]
    assert len(edges) == 3 + 2 * 3 * 2  # one edge per candidate
    for text in ax.texts:
        box = text.get_window_extent().padded(-1)  # the label's box, less a pixel of anti-aliasing
        for edge in edges:
            points = _edge_points(ax, edge)
            inside = ((points[:, 0] > box.x0) & (points[:, 0] < box.x1)
                      & (points[:, 1] > box.y0) & (points[:, 1] < box.y1))
            assert not inside.any(), f"an edge crosses the label {text.get_text()!r}"


def test_each_edge_ends_on_its_candidate_in_the_colour_of_its_fate():
    fig = beam_tree(TOY, beam_width=2, n_steps=3)
    ax = fig.axes[0]
    edges = [line for line in ax.get_lines() if len(line.get_xdata()) > 1]
    ends = {(round(line.get_xdata()[-1], 6), round(line.get_ydata()[-1], 6)): line.get_color() for line in edges}
    nodes = {(round(line.get_xdata()[0], 6), round(line.get_ydata()[0], 6)): line.get_color()
             for line in ax.get_lines() if len(line.get_xdata()) == 1}
    assert ends == nodes  # every node is reached by one edge of its own colour (blue kept, grey dropped)
