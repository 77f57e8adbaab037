"""The heads widget of chapter 03: its computation, and the slider driving the figure."""
import pytest
import torch

from stepbystep.models import NarrowMultiHeadAttention, WideMultiHeadAttention
from stepbystep.widgets import divisors, heads_explorer, heads_explorer_state


def test_divisors():
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(7) == [1, 7]
    with pytest.raises(ValueError, match="positive int"):
        divisors(0)


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 6, 12])
def test_state_counts_parameters_of_both_kinds_of_heads(n_heads):
    state = heads_explorer_state(n_heads, d_model=12, seq_len=5)
    assert state["d_k"] == 12 // n_heads
    assert state["narrow_parameters"] == 4 * (12 * 12 + 12)  # four (d_model, d_model) layers
    # each wide head: three (d_model, d_model) layers; then linear_out (n_heads * d_model -> d_model)
    assert state["wide_parameters"] == n_heads * 3 * (12 * 12 + 12) + n_heads * 12 * 12 + 12
    assert state["alphas"].shape == (n_heads, 5, 5)
    torch.testing.assert_close(state["alphas"].sum(-1), torch.ones(n_heads, 5))


def test_state_parameter_counts_match_the_modules():
    state = heads_explorer_state(3, d_model=6)
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    assert state["narrow_parameters"] == count(NarrowMultiHeadAttention(3, 6))
    assert state["wide_parameters"] == count(WideMultiHeadAttention(3, 6))


def test_state_is_seeded():
    first, second = heads_explorer_state(1, seed=3), heads_explorer_state(1, seed=3)
    torch.testing.assert_close(first["alphas"], second["alphas"])
    other = heads_explorer_state(1, seed=4)
    assert not torch.allclose(first["alphas"], other["alphas"])


def test_state_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    heads_explorer_state(4)
    torch.testing.assert_close(torch.rand(3), expected)


def test_state_rejects_a_head_count_that_does_not_divide_d_model():
    with pytest.raises(ValueError, match=r"n_heads must divide d_model=12 \(\[1, 2, 3, 4, 6, 12\]\), got 5"):
        heads_explorer_state(5, d_model=12)


def test_slider_offers_the_divisors_and_redraws_the_maps():
    widget = heads_explorer(d_model=12, seq_len=4)
    slider, label, _ = widget.children
    assert list(slider.options) == [1, 2, 3, 4, 6, 12]
    figure = widget.figure
    assert "d_k = 6" in label.value and len(figure.axes) == 2 + 1  # two maps and a colorbar
    slider.value = 12
    wide_twelve = 12 * 3 * (12 * 12 + 12) + 12 * 12 * 12 + 12
    assert "d_k = 1" in label.value and f"wide {wide_twelve:,}" in label.value
    titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert titles == [f"head {h}" for h in range(12)]
    assert widget.figure is figure  # redrawn in place, not a new figure
    slider.value = 1
    assert "d_k = 12" in label.value and len(figure.axes) == 1 + 1


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 6, 12])
def test_state_gives_each_heads_score_rank_at_most_d_k(n_heads):
    state = heads_explorer_state(n_heads, d_model=12, seq_len=4)
    assert state["score_ranks"] == [min(12 // n_heads, 4)] * n_heads  # random data: the bound is reached


def test_label_reports_the_score_ranks():
    widget = heads_explorer(d_model=12, seq_len=4)
    slider, label, _ = widget.children
    slider.value = 12
    assert "rank of each head's 4×4 scores: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]" in label.value


def test_figure_title_names_the_setting_so_a_static_page_shows_it():
    widget = heads_explorer(d_model=12, seq_len=4)
    slider, _, _ = widget.children
    assert widget.figure._suptitle.get_text() == "n_heads = 2, d_k = 6, rank of each head's 4×4 scores: [4, 4]"
    slider.value = 6
    assert widget.figure._suptitle.get_text() == "n_heads = 6, d_k = 2, rank of each head's 4×4 scores: [2, 2, 2, 2, 2, 2]"
