"""Chapter 02's figures: scores, masks, positional encoding and run comparisons."""
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from stepbystep.models import sinusoidal_table, subsequent_mask  # noqa: E402
from stepbystep.plots import (  # noqa: E402
    compare_runs,
    encoding_heatmap,
    mask_and_weights,
    mask_map,
    position_distances,
    relative_shift,
    score_variance,
    sinusoids,
    softmax_rows,
)

TABLE = sinusoidal_table(12, 6)  # (12, 6)


# ---------------------------------------------------------------- scores
def test_score_variance_draws_both_curves_on_log_axes():
    fig = score_variance([1, 4, 16], [1.1, 3.9, 16.2], [1.1, 0.98, 1.01])
    (ax,) = fig.axes
    assert ax.get_xlabel() == "$d_k$" and ax.get_ylabel() == "variance of the scores"
    assert ax.get_yscale() == "log"
    raw, scaled = ax.lines[:2]
    np.testing.assert_allclose(raw.get_ydata(), [1.1, 3.9, 16.2])
    np.testing.assert_allclose(scaled.get_ydata(), [1.1, 0.98, 1.01])


def test_score_variance_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="same length"):
        score_variance([1, 4], [1.0, 4.0, 16.0], [1.0, 1.0])


def test_softmax_rows_one_bar_panel_per_row():
    rows = {"scaled": torch.tensor([0.2, 0.3, 0.5]), "unscaled": torch.tensor([0.0, 0.01, 0.99])}
    fig = softmax_rows(rows, key_labels=list("abc"))
    assert [ax.get_title() for ax in fig.axes] == ["scaled", "unscaled"]
    heights = [bar.get_height() for bar in fig.axes[1].patches]
    np.testing.assert_allclose(heights, [0.0, 0.01, 0.99])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list("abc")


def test_softmax_rows_rejects_non_dict_and_2d_weights():
    with pytest.raises(TypeError, match="dict"):
        softmax_rows([0.5, 0.5])
    with pytest.raises(ValueError, match="1-D weights"):
        softmax_rows({"x": torch.ones(2, 2)})


# ---------------------------------------------------------------- masks
def test_mask_map_numbers_each_cell_by_the_mask():
    fig = mask_map(subsequent_mask(3))
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == ["1", "0", "0", "1", "1", "0", "1", "1", "1"]
    assert ax.get_xlabel() == "key" and ax.get_ylabel() == "query"


def test_mask_and_weights_side_by_side_with_the_row_outlined():
    mask = subsequent_mask(4)  # (1, 4, 4)
    weights = torch.softmax(torch.randn(4, 4).masked_fill(~mask[0], float("-inf")), dim=-1)  # (4, 4)
    fig = mask_and_weights(mask, weights, query_row=1)
    mask_ax, weights_ax, colorbar = fig.axes
    np.testing.assert_allclose(weights_ax.collections[0].get_array(), weights.numpy())
    assert len(mask_ax.patches) == 1 and len(weights_ax.patches) == 1  # the outlined row
    assert "query 1" in weights_ax.get_title() and "2 keys visible" in weights_ax.get_title()


def test_mask_and_weights_redraws_in_place():
    mask = subsequent_mask(3)
    fig = mask_and_weights(mask, torch.full((3, 3), 1 / 3))
    same = mask_and_weights(torch.ones(1, 2, 2, dtype=torch.bool), torch.full((2, 2), 0.5), fig=fig)
    assert same is fig
    assert len(fig.axes) == 3  # cleared, not stacked
    assert fig.axes[1].collections[0].get_array().shape == (2, 2)


def test_mask_and_weights_rejects_bad_input():
    with pytest.raises(ValueError, match="same shape"):
        mask_and_weights(subsequent_mask(3), torch.ones(2, 2))
    with pytest.raises(ValueError, match="query_row must be in 0..2"):
        mask_and_weights(subsequent_mask(3), torch.ones(3, 3), query_row=3)
    with pytest.raises(ValueError, match=r"\(L_q, L_k\)"):
        mask_map(torch.ones(2, 2, 2, 2))


# ---------------------------------------------------------------- positional encoding
def test_sinusoids_one_panel_per_dimension_with_the_table_values():
    fig = sinusoids(TABLE, dims=(0, 3))
    assert len(fig.axes) == 2
    np.testing.assert_allclose(fig.axes[1].lines[0].get_ydata(), TABLE[:, 3].numpy())
    assert fig.axes[0].get_ylabel().startswith("dim 0") and fig.axes[1].get_xlabel() == "position"


def test_sinusoids_rejects_missing_dimensions():
    with pytest.raises(ValueError, match=r"dimensions must be in 0..5"):
        sinusoids(TABLE, dims=(0, 6))


def test_encoding_heatmap_shows_the_table_and_accepts_a_buffer():
    fig = encoding_heatmap(TABLE.unsqueeze(0))  # (1, max_len, d_model), as PositionalEncoding.pe
    heat, colorbar = fig.axes
    np.testing.assert_allclose(heat.images[0].get_array(), TABLE.numpy())
    assert heat.get_xlabel() == "dimension" and heat.get_ylabel() == "position"


def test_relative_shift_arrows_join_positions_shift_apart():
    fig = relative_shift(TABLE, pairs=(0, 2), shift=2, starts=(0, 4))
    assert len(fig.axes) == 2
    ax = fig.axes[1]
    arrows = [t for t in ax.texts if t.get_text() == ""]
    assert len(arrows) == 2
    tail, head = arrows[1].xyann, arrows[1].xy  # the arrow from position 4 to position 6
    np.testing.assert_allclose(tail, TABLE[4, 4:6].numpy(), atol=1e-6)
    np.testing.assert_allclose(head, TABLE[6, 4:6].numpy(), atol=1e-6)
    assert ax.get_xlabel() == "dim 4 (sin)" and ax.get_ylabel() == "dim 5 (cos)"


def test_relative_shift_rejects_pairs_and_starts_out_of_range():
    with pytest.raises(ValueError, match="dimensions must be in"):
        relative_shift(TABLE, pairs=(3,))
    with pytest.raises(ValueError, match="starts must be in 0..9"):
        relative_shift(TABLE, shift=2, starts=(10,))


def test_position_distances_heatmap_is_the_pairwise_distance():
    fig = position_distances(TABLE, references=(0, 3))
    heat, lines, colorbar = fig.axes
    expected = torch.cdist(TABLE, TABLE).numpy()
    np.testing.assert_allclose(heat.images[0].get_array(), expected, atol=1e-5)
    np.testing.assert_allclose(lines.lines[1].get_ydata(), expected[3], atol=1e-5)
    with pytest.raises(ValueError, match="references must be in 0..11"):
        position_distances(TABLE, references=(12,))


# ---------------------------------------------------------------- runs
def test_compare_runs_solid_training_dashed_test_with_last_test_loss():
    fig = compare_runs({"a": ([1.0, 0.5], [1.2, 0.6]), "b": ([0.9, 0.3], [])})
    (ax,) = fig.axes
    assert isinstance(fig, Figure)
    assert [line.get_linestyle() for line in ax.lines] == ["-", "--", "-"]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["a: training", "a: test (last 0.6000)", "b: training"]


def test_compare_runs_rejects_bad_runs():
    with pytest.raises(ValueError, match="runs must be a non-empty dict"):
        compare_runs({})
    with pytest.raises(TypeError, match=r"runs must be a dict of name -> \(train, test\) losses, got list"):
        compare_runs([([1.0], [1.0])])
    with pytest.raises(ValueError, match="pair"):
        compare_runs({"a": ([1.0],)})


def _integers(ticks):
    return all(float(t).is_integer() for t in ticks)


def test_every_position_axis_is_ticked_at_whole_positions():
    table = sinusoidal_table(20, 8)  # 20 positions: the default locator would tick 2.5, 7.5, ...
    heat = encoding_heatmap(table).axes[0]
    heat.figure.canvas.draw()
    assert _integers(heat.get_yticks())
    waves = sinusoids(table, dims=(0, 1)).axes[-1]
    waves.figure.canvas.draw()
    assert _integers(waves.get_xticks())
    heat_ax, line_ax, _ = position_distances(table).axes
    heat_ax.figure.canvas.draw()
    assert _integers(heat_ax.get_xticks()) and _integers(heat_ax.get_yticks()) and _integers(line_ax.get_xticks())


def test_compare_runs_ticks_whole_epochs():
    (ax,) = compare_runs({"a": ([1.0, 0.5, 0.4], [1.2, 0.6, 0.5])}).axes
    ax.figure.canvas.draw()
    assert _integers(ax.get_xticks())


def test_relative_shift_titles_say_position_or_positions():
    titles = [ax.get_title() for ax in relative_shift(TABLE, pairs=(0,), shift=2, starts=(0,)).axes]
    assert titles == ["pair 0: +2 positions = same rotation"]
    titles = [ax.get_title() for ax in relative_shift(TABLE, pairs=(0,), shift=1, starts=(0,)).axes]
    assert titles == ["pair 0: +1 position = same rotation"]


def test_padded_attention_maps_hatches_the_padded_query_rows_only():
    from stepbystep.plots.masks import padded_attention_maps

    weights = torch.softmax(torch.randn(3, 4, 4), dim=-1)
    fig = padded_attention_maps(weights, torch.tensor([4, 2, 3]), titles=["a", "b", "c"])
    maps = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    hatched = [[(p.get_xy()[1], p.get_width()) for p in ax.patches if p.get_hatch() == "//"] for ax in maps]
    assert hatched == [[], [(2, 4), (3, 4)], [(3, 4)]]
    assert "padded queries" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="lengths must be 3 lengths between 1 and 4"):
        padded_attention_maps(weights, torch.tensor([4, 5, 1]))
    with pytest.raises(ValueError, match=r"\(N, L, L\)"):
        padded_attention_maps(weights[:, :3], torch.tensor([3, 3, 3]))
