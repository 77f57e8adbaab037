"""Chapter 02's mask explorer: the computation behind it, and its controls driving the figure."""
import pytest
import torch

from stepbystep.models import subsequent_mask
from stepbystep.widgets import mask_explorer, mask_explorer_weights


def test_no_mask_lets_every_query_read_every_key():
    mask, weights = mask_explorer_weights(5)
    assert mask.shape == (5, 5) and mask.all()
    assert (weights > 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(5))


def test_causal_mask_zeroes_the_upper_triangle():
    mask, weights = mask_explorer_weights(5, causal=True)
    assert torch.equal(mask, subsequent_mask(5)[0])
    assert (weights.triu(1) == 0).all()
    assert weights[0, 0] == 1.0  # the first query can only read itself
    torch.testing.assert_close(weights.sum(-1), torch.ones(5))


def test_padding_hides_the_last_keys_from_every_query():
    mask, weights = mask_explorer_weights(6, n_padded=2)
    assert not mask[:, 4:].any() and mask[:, :4].all()
    assert (weights[:, 4:] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(6))


def test_masks_combine_and_the_input_is_fixed_by_the_seed():
    mask, weights = mask_explorer_weights(6, causal=True, n_padded=2)
    assert torch.equal(mask, subsequent_mask(6)[0] & torch.tensor([True] * 4 + [False] * 2))
    again = mask_explorer_weights(6, causal=True, n_padded=2)[1]
    other_seed = mask_explorer_weights(6, causal=True, n_padded=2, seed=1)[1]
    assert torch.equal(weights, again) and not torch.equal(weights, other_seed)


def test_shorter_sequences_start_with_the_same_elements():
    _, short = mask_explorer_weights(3, causal=True)
    _, long = mask_explorer_weights(6, causal=True)
    torch.testing.assert_close(short, long[:3, :3])  # causal rows never see the extra elements


@pytest.mark.parametrize("kwargs, match", [
    (dict(length=0), "length must be an int in 1..10"),
    (dict(length=11), "length must be an int in 1..10"),
    (dict(length=4, n_padded=4), "n_padded must be an int in 0..3"),
])
def test_bad_settings_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mask_explorer_weights(**kwargs)


def _controls(box):
    controls = {}
    for column in box.children[0].children:
        for control in column.children:
            controls[control.description] = control
    return controls


def _shown_weights(box):
    return box.figure.axes[1].collections[0].get_array()  # the weights heatmap's QuadMesh


def test_controls_redraw_the_figure_and_the_summary():
    box = mask_explorer()
    controls, summary = _controls(box), box.children[1]
    assert set(controls) == {"length", "query row", "causal mask", "padding mask", "# padded"}
    assert summary.value.startswith("query 2 reads keys [0, 1, 2]")

    controls["causal mask"].value = False
    assert summary.value.startswith("query 2 reads keys [0, 1, 2, 3, 4, 5]")
    assert (_shown_weights(box) > 0).all()

    controls["padding mask"].value = True  # two padded positions by default
    assert not controls["# padded"].disabled
    assert summary.value.startswith("query 2 reads keys [0, 1, 2, 3] ")
    assert (_shown_weights(box)[:, 4:] == 0).all()

    controls["query row"].value = 5
    assert summary.value.startswith("query 5 reads keys [0, 1, 2, 3] ")
    assert len(box.figure.axes) == 3  # redrawn in place: mask, weights, colorbar


def test_shortening_the_sequence_moves_the_sliders_bounds():
    box = mask_explorer()
    controls = _controls(box)
    controls["query row"].value = 5
    controls["length"].value = 3
    assert controls["query row"].max == 2 and controls["query row"].value == 2
    assert controls["# padded"].max == 2
    assert _shown_weights(box).shape == (3, 3)
