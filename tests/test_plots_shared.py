"""What the plot modules share: one conversion to NumPy, one heatmap with one style, one error convention
(that importing the plots loads no seaborn is checked in test_imports.py)."""
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402

from stepbystep import plots  # noqa: E402
from stepbystep.data import Seq2SeqDataset, Vocab, pad_collate  # noqa: E402
from stepbystep.models import TokenTransformer, subsequent_mask  # noqa: E402
from stepbystep.plots._arrays import _as_2d, _as_numpy  # noqa: E402
from stepbystep.plots._heatmaps import MASK, WEIGHTS, heatmap  # noqa: E402


def _mesh(ax):
    (mesh,) = [artist for artist in ax.collections if isinstance(artist, QuadMesh)]
    return mesh


def _texts(ax):
    return [text.get_text() for text in ax.texts]


# ---------------------------------------------------------------- _as_numpy
def test_as_numpy_takes_a_tensor_with_grad_a_list_and_an_array():
    tensor = torch.tensor([[0.5, 1.5], [2.0, -1.0]], requires_grad=True)
    array = _as_numpy(tensor * 2)  # a non-leaf tensor that carries a graph
    assert isinstance(array, np.ndarray) and array.dtype == np.float32
    np.testing.assert_array_equal(array, [[1.0, 3.0], [4.0, -2.0]])
    listed = _as_numpy([[1, 2], [3, 4]], float)
    assert listed.dtype == np.float64 and listed.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    original = np.arange(3)
    assert _as_numpy(original) is original  # an array without a new dtype is not copied


def test_as_numpy_keeps_the_element_type_unless_asked():
    assert _as_numpy(torch.tensor([True, False])).dtype == np.bool_
    assert _as_numpy(torch.tensor([3, 1])).dtype == np.int64
    assert _as_numpy(torch.tensor([3, 1]), float).dtype == np.float64
    half = _as_numpy(torch.tensor([0.5, 0.25], dtype=torch.bfloat16))  # NumPy has no bfloat16
    assert half.dtype == np.float32 and half.tolist() == [0.5, 0.25]


def test_as_2d_drops_a_leading_one_and_refuses_other_shapes():
    table = torch.arange(6.0).reshape(1, 2, 3)
    assert _as_2d(table, "table", "(max_len, d_model)").tolist() == [[0, 1, 2], [3, 4, 5]]
    assert _as_2d([[1, 2]], "image", "(H, W)").dtype == float
    for bad in (np.zeros(4), np.zeros((2, 2, 2)), np.zeros((1, 1, 2, 2))):
        with pytest.raises(ValueError, match=r"image must have shape \(H, W\) or \(1, H, W\), got"):
            _as_2d(bad, "image", "(H, W)")


# ---------------------------------------------------------------- the shared heatmap
def test_heatmap_draws_the_values_its_texts_and_centred_ticks():
    fig, ax = plt.subplots()
    canvas = fig.canvas
    values = np.array([[0.25, 0.5, 1.0], [0.0, 0.125, 0.75]])
    mesh = heatmap(ax, values, WEIGHTS, annot=True, xticklabels=list("abc"))
    assert mesh is _mesh(ax) and fig.canvas is canvas  # the figure gets its own canvas back
    np.testing.assert_array_equal(mesh.get_array(), values)
    assert mesh.get_clim() == (0.0, 1.0) and mesh.get_cmap().name == "viridis"
    assert _texts(ax) == ["0.25", "0.50", "1.00", "0.00", "0.12", "0.75"]
    assert list(ax.get_xticks()) == [0.5, 1.5, 2.5] and list(ax.get_yticks()) == [0.5, 1.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == list("abc")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "1"]
    assert all(t.get_rotation() == 0 for t in ax.get_yticklabels())


def test_heatmap_on_a_subfigure_writes_given_texts():
    fig = plt.figure()
    sub = fig.subfigures(1, 2)[1]
    ax = sub.subplots()
    heatmap(ax, np.eye(2, dtype=int), MASK, annot=np.array([["T", "F"], ["F", "T"]]), fmt="")
    assert _texts(ax) == ["T", "F", "F", "T"]
    assert _mesh(ax).get_clim() == (0, 1)


# ---------------------------------------------------------------- each converted figure carries its values
def test_attention_map_mesh_holds_the_weights_on_the_shared_scale():
    weights = torch.softmax(torch.randn(3, 4), dim=-1)
    fig = plots.attention_map(weights)
    ax = fig.axes[0]
    np.testing.assert_allclose(_mesh(ax).get_array(), weights.numpy(), rtol=1e-6)
    assert _mesh(ax).get_clim() == (WEIGHTS["vmin"], WEIGHTS["vmax"])
    assert _texts(ax) == [f"{w:.2f}" for w in weights.flatten().tolist()]


def test_attention_maps_share_one_colour_bar_and_keep_each_map():
    weights = torch.softmax(torch.randn(3, 2, 2), dim=-1)
    fig = plots.attention_maps(weights)
    maps = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    for ax, expected in zip(maps, weights):
        np.testing.assert_allclose(_mesh(ax).get_array(), expected.numpy(), rtol=1e-6)


def test_mask_map_mesh_holds_the_mask():
    fig = plots.mask_map(subsequent_mask(3))
    ax = fig.axes[0]
    np.testing.assert_array_equal(_mesh(ax).get_array(), np.tril(np.ones((3, 3), dtype=int)))
    assert _mesh(ax).get_cmap().colors == MASK["cmap"].colors


def test_mask_and_weights_outlines_the_row_on_the_cells():
    mask = subsequent_mask(3)
    fig = plots.mask_and_weights(mask, torch.full((3, 3), 1 / 3), query_row=2)
    mask_ax, weights_ax, _ = fig.axes
    assert _texts(mask_ax) == ["1", "0", "0", "1", "1", "0", "1", "1", "1"]
    assert _texts(weights_ax) == ["0.33"] * 9
    (outline,) = weights_ax.patches
    assert outline.get_xy() == (0, 2) and outline.get_width() == 3 and outline.get_height() == 1  # row 2 exactly


def test_head_chunks_meshes_hold_the_matrix_and_its_blocks():
    x = torch.randn(3, 6)
    fig = plots.head_chunks(x, 2)
    whole, first, second = fig.axes
    np.testing.assert_allclose(_mesh(whole).get_array(), x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(_mesh(second).get_array(), x[:, 3:].numpy(), rtol=1e-6)
    assert [patch.get_xy() for patch in whole.patches] == [(0, 0), (3, 0)]  # the heads' blocks on the cells
    assert all(spine.get_visible() for spine in second.spines.values())  # framed in the head's colour


def test_mask_conventions_share_the_mask_colours_with_mask_map():
    fig = plots.mask_conventions(subsequent_mask(3))
    for ax in fig.axes:
        assert _mesh(ax).get_cmap().colors == MASK["cmap"].colors


def test_padded_batch_grids_hold_the_masks_and_the_symbols():
    vocab = Vocab("abc")
    dataset = Seq2SeqDataset([("abc", "cba"), ("a", "a")], vocab, vocab)
    (source, target_in), target_out = pad_collate([dataset[i] for i in range(2)])
    model = TokenTransformer(len(vocab), len(vocab), d_model=8, n_heads=2, ff_units=8, n_layers=1, max_len=8)
    source_mask = model.source_mask(source)
    fig = plots.padded_batch(source, target_in, target_out, vocab, source_mask, model.target_mask(target_in))
    source_ax = fig.axes[0]
    np.testing.assert_array_equal(_mesh(source_ax).get_array(), source_mask[:, 0].float().numpy())
    assert _texts(source_ax) == ["a", "b", "c", "a", "<pad>", "<pad>"]
    assert [text.get_fontsize() for text in source_ax.texts] == [9, 9, 9, 9, 7, 7]


# ---------------------------------------------------------------- one error convention
@pytest.mark.parametrize("call, error, message", [
    (lambda: plots.compare_runs([1.0]), TypeError, "runs must be a dict of name -> (train, test) losses, got list"),
    (lambda: plots.compare_runs({}), ValueError, "runs must be a non-empty dict"),
    (lambda: plots.softmax_rows("x"), TypeError, "rows must be a dict of title -> weights, got str"),
    (lambda: plots.relative_shift(torch.zeros(8, 4), shift=1.5), TypeError, "shift must be a positive int, got float"),
    (lambda: plots.relative_shift(torch.zeros(8, 4), shift=0), ValueError, "shift must be a positive int, got 0"),
    (lambda: plots.head_chunks(torch.zeros(2, 4), "2"), TypeError, "n_heads must be a positive int, got str"),
    (lambda: plots.mask_conventions([[True]]), TypeError, "mask must be a tensor, got list"),
    (lambda: plots.mask_conventions(torch.zeros(2, 2)), TypeError, "mask must be a tensor of dtype torch.bool"),
    (lambda: plots.timing_bars({"a": 1.0}, unit="h"), ValueError, "unit must be one of 's', 'ms', 'µs', got 'h'"),
    (lambda: plots.depth_profile([1.0], "norm"), TypeError, "curves must be a dict of label -> values per layer"),
    (lambda: plots.mask_and_weights(subsequent_mask(2), torch.ones(2, 2), query_row=-1), ValueError,
     "query_row must be a non-negative int, got -1"),
    (lambda: plots.tokens_by_patch_size(12, [4, True]), TypeError, "every patch size must be a positive int"),
])
def test_plots_raise_the_type_or_value_error_the_mistake_calls_for(call, error, message):
    with pytest.raises(error) as raised:
        call()
    assert message in str(raised.value)


def test_widgets_follow_the_same_convention():
    from stepbystep.widgets import divisors, heads_explorer_state, mask_explorer_weights

    with pytest.raises(TypeError, match="n must be a positive int, got float"):
        divisors(4.0)
    with pytest.raises(ValueError, match="n must be a positive int, got 0"):
        divisors(0)
    with pytest.raises(TypeError, match="length must be a non-negative int, got str"):
        mask_explorer_weights("4")
    with pytest.raises(ValueError, match=r"n_padded must be an int in 0\.\.3"):
        mask_explorer_weights(4, n_padded=4)
    with pytest.raises(TypeError, match="d_model must be a positive int, got float"):
        heads_explorer_state(2, d_model=12.0)


def test_heads_widget_state_is_computed_without_gradients():
    """The state is computed in eval mode without gradients (``evaluating``): plain weights."""
    from stepbystep.widgets import heads_explorer_state

    alphas = heads_explorer_state(3, d_model=6)["alphas"]
    assert not alphas.requires_grad
