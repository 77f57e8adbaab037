"""Greedy decoding and beam search on a toy table, where each step can be checked by hand."""
import math

import pytest

from stepbystep.models import markov_beam_steps, markov_greedy
from stepbystep.plots import beam_tree

# greedy writes b, a, b (0.5 · 0.4 · 0.9 = 0.18); a beam of 2 drops "ba" (0.20) at step 2 for
# "cc" (0.225) and "cb" (0.2025), and its best output ends at 0.1125
GREEDY_WINS = {"<sos>": {"a": 0.05, "b": 0.5, "c": 0.45}, "a": {"a": 0.05, "b": 0.9, "c": 0.05},
               "b": {"a": 0.4, "b": 0.35, "c": 0.25}, "c": {"a": 0.05, "b": 0.45, "c": 0.5}}


def test_greedy_takes_the_most_likely_token_each_step():
    tokens, score = markov_greedy(GREEDY_WINS, 3)
    assert tokens == ("b", "a", "b")
    assert score == pytest.approx(math.log(0.5 * 0.4 * 0.9))


def test_the_beam_keeps_the_best_candidates_and_can_lose_to_greedy():
    steps = markov_beam_steps(GREEDY_WINS, beam_width=2, n_steps=3)
    assert [len(candidates) for candidates in steps] == [3, 6, 6]  # V, then B·V
    kept = [[tokens for tokens, _, _, keep in candidates if keep] for candidates in steps]
    assert kept == [[("b",), ("c",)], [("c", "b"), ("c", "c")], [("c", "c", "b"), ("c", "c", "c")]]
    dropped = {tokens: score for tokens, score, _, keep in steps[1] if not keep}
    assert dropped[("b", "a")] == pytest.approx(math.log(0.2))  # greedy's prefix, pushed out
    best = max(score for _, score, _, keep in steps[-1] if keep)
    assert best == pytest.approx(math.log(0.45 * 0.5 * 0.5))
    assert markov_greedy(GREEDY_WINS, 3)[1] > best
    parents = [parent for _, _, parent, _ in steps[2]]
    assert parents == [0, 0, 0, 1, 1, 1]  # each kept output of step 2 extended by every token


def test_a_wide_beam_finds_the_most_likely_output():
    steps = markov_beam_steps(GREEDY_WINS, beam_width=9, n_steps=3)  # 9 >= V², nothing is ever dropped
    best = max(score for _, score, _, _ in steps[-1])
    assert best >= markov_greedy(GREEDY_WINS, 3)[1]


def test_bad_tables_and_sizes_are_refused():
    with pytest.raises(ValueError, match="missing \\['z'\\]"):
        markov_greedy({"<sos>": {"z": 1.0}}, 2)
    with pytest.raises(ValueError, match="beam_width"):
        markov_beam_steps(GREEDY_WINS, 0, 2)
    with pytest.raises(TypeError, match="n_steps"):
        markov_greedy(GREEDY_WINS, 2.5)


def test_beam_tree_rings_greedy_path_and_names_its_output():
    fig = beam_tree(GREEDY_WINS, beam_width=2, n_steps=3, show_greedy=True)
    ax = fig.axes[0]
    rings = [line for line in ax.get_lines() if line.get_markeredgecolor() == "tab:orange"]
    assert [(line.get_xdata()[0]) for line in rings] == [1, 2]  # "b" at step 1, "ba" at step 2; then dropped
    assert "bab" in ax.get_xlabel() and f"{math.log(0.18):.2f}" in ax.get_xlabel()
