"""Chapter 05's figures: the Transformer's data flow, losses side by side, its three attentions."""
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from stepbystep.models import build_transformer  # noqa: E402
from stepbystep.plots import loss_comparison, transformer_attention  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _texts(fig):
    return [text.get_text() for ax in fig.axes for text in ax.texts]


def test_loss_comparison_draws_a_bar_per_label_and_dots_for_draws():
    fig = loss_comparison({"train mode": [0.02, 0.03, 0.04], "eval mode": 0.01}, title="one batch", xlabel="MSE")
    (ax,) = fig.axes
    rows = {tick: label.get_text() for tick, label in zip(ax.get_yticks(), ax.get_yticklabels())}
    assert rows == {1: "train mode", 0: "eval mode"}  # the first label on top
    widths = sorted(bar.get_width() for bar in ax.patches)
    assert widths == pytest.approx([0.01, 0.03])
    (dots,) = ax.collections
    assert sorted(dots.get_offsets()[:, 0]) == pytest.approx([0.02, 0.03, 0.04])
    assert sorted(t.get_text() for t in ax.texts) == ["0.0100", "mean of the 3 dots (black tick): 0.0300"]
    # the mean's tick spans the row at x = 0.03, and its label starts there, above the row
    (tick,) = ax.lines
    assert list(tick.get_xdata()) == pytest.approx([0.03, 0.03])
    label = next(t for t in ax.texts if t.get_text().startswith("mean"))
    assert label.xy[0] == pytest.approx(0.03) and label.xy[1] > 1.3
    assert ax.get_xlabel() == "MSE" and ax.get_title() == "one batch"
    assert ax.get_xscale() == "linear"


def test_loss_comparison_log_scale_needs_positive_losses():
    fig = loss_comparison({"zeros": 1.0, "model": torch.tensor(0.01)}, log=True)
    assert fig.axes[0].get_xscale() == "log"
    assert fig.axes[0].get_xlim()[0] < 0.01 < 1.0 < fig.axes[0].get_xlim()[1]
    with pytest.raises(ValueError, match="log scale needs positive losses; 'model' has 0.0"):
        loss_comparison({"zeros": 1.0, "model": 0.0}, log=True)


def test_loss_comparison_on_a_log_scale_draws_points_not_bars():
    """A bar on a log axis starts wherever the axis starts: its length means nothing."""
    fig = loss_comparison({"zeros": 1.0, "model": 0.012, "draws": [0.02, 0.04]}, log=True)
    (ax,) = fig.axes
    assert not ax.patches  # no bars
    points, dots = ax.collections
    assert sorted(points.get_offsets()[:, 0]) == pytest.approx([0.012, 0.03, 1.0])  # one per row, at its mean
    assert dict(zip(points.get_offsets()[:, 1], points.get_offsets()[:, 0])) == pytest.approx({2: 1.0, 1: 0.012, 0: 0.03})
    assert sorted(dots.get_offsets()[:, 0]) == pytest.approx([0.02, 0.04])
    assert sorted(t.get_text() for t in ax.texts) == ["0.0120", "1.0000", "mean of the 2 dots (black tick): 0.0300"]


@pytest.mark.parametrize("losses, error", [({}, ValueError), ([0.1], TypeError), ({"a": float("nan")}, ValueError),
                                           ({"a": []}, ValueError)])
def test_loss_comparison_rejects_bad_input(losses, error):
    with pytest.raises(error):
        loss_comparison(losses)


def _is_heatmap(ax):
    """An attention map: a seaborn heatmap's QuadMesh, on an Axes that is not a colour bar."""
    return ax.get_label() != "<colorbar>" and any(isinstance(artist, QuadMesh) for artist in ax.collections)


def _weights(n, heads, l_q, l_k, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(n, heads, l_q, l_k, generator=generator), dim=-1)  # (N, h, L_q, L_k)


def test_transformer_attention_draws_every_head_of_every_kind_per_sequence():
    n, heads, l_s, l_t = 5, 3, 2, 2
    encoder = _weights(n, heads, l_s, l_s, 0)
    decoder = _weights(n, heads, l_t, l_t, 1)
    cross = _weights(n, heads, l_t, l_s, 2)
    source, target = torch.randn(n, l_s, 2), torch.randn(n, l_t, 2)
    fig = transformer_attention(encoder, decoder, cross, source, target, target + 0.1, indices=[4, 1], layer="layer 1")
    maps = [ax for ax in fig.axes if _is_heatmap(ax)]
    corners = [ax for ax in fig.axes if ax.get_title().startswith("#")]
    assert len(maps) == 2 * 3 * heads and [ax.get_title() for ax in corners] == ["#4", "#1"]
    assert len(fig.axes) == len(maps) + len(corners) + 1  # and one colorbar
    assert [sub._suptitle.get_text() for sub in fig.subfigs] == [
        "corners", "encoder self-attention, layer 1", "decoder self-attention (masked), layer 1",
        "cross-attention, layer 1"]
    # the first map of each kind: sequence 4, head 0, annotated with its weights
    first_encoder, first_decoder, first_cross = maps[0], maps[2 * heads], maps[4 * heads]
    assert first_encoder.get_title() == "head 0"
    assert [t.get_text() for t in first_encoder.texts] == [f"{w:.2f}" for w in encoder[4, 0].flatten().tolist()]
    assert [t.get_text() for t in first_cross.texts] == [f"{w:.2f}" for w in cross[4, 0].flatten().tolist()]
    np.testing.assert_allclose(first_decoder.collections[0].get_array(), decoder[4, 0].numpy(), rtol=1e-6)
    assert [t.get_text() for t in first_cross.get_xticklabels()] == ["$x_0$", "$x_1$"]
    # decoder rows say what each position reads and what it predicts; the columns what it reads
    rows = ["$x_1 \\to \\hat{x}_2$", "$\\hat{x}_2 \\to \\hat{x}_3$"]
    assert [t.get_text() for t in first_decoder.get_yticklabels()] == rows
    assert [t.get_text() for t in first_cross.get_yticklabels()] == rows
    assert [t.get_text() for t in first_decoder.get_xticklabels()] == ["$x_1$", "$\\hat{x}_2$"]
    assert first_decoder.get_ylabel() == "input → prediction" and first_cross.get_ylabel() == "input → prediction"
    # the corner panel numbers the source and target corners 0-3
    assert sorted(t.get_text() for t in corners[0].texts) == ["0", "1", "2", "3"]


def test_transformer_attention_works_on_the_model_weights_after_predict():
    model = build_transformer(seed=0).eval()
    source = torch.randn(4, 2, 2)
    with torch.no_grad():
        predicted = model.predict(source)
    encoder = model.encoder.layers[-1].self_attn_heads.alphas
    decoder = model.decoder.layers[-1].self_attn_heads.alphas
    cross = model.decoder.layers[-1].cross_attn_heads.alphas
    fig = transformer_attention(encoder, decoder, cross, source, predicted=predicted, indices=(0,))
    assert len([ax for ax in fig.axes if _is_heatmap(ax)]) == 9


def test_transformer_attention_checks_shapes_and_indices():
    encoder, decoder, cross = _weights(3, 2, 2, 2, 0), _weights(3, 2, 2, 2, 1), _weights(3, 2, 2, 2, 2)
    source = torch.randn(3, 2, 2)
    with pytest.raises(ValueError, match=r"cross should have shape \(3, 2, 2, 2\).*got \(3, 2, 3, 2\)"):
        transformer_attention(encoder, decoder, _weights(3, 2, 3, 2, 2), source)
    with pytest.raises(ValueError, match="decoder weights have 3 heads, the encoder's have 2"):
        transformer_attention(encoder, _weights(3, 3, 2, 2, 1), cross, source)
    with pytest.raises(ValueError, match=r"source should have shape \(3, 2, 2\)"):
        transformer_attention(encoder, decoder, cross, source[:2])
    with pytest.raises(ValueError, match=r"target should have shape \(3, 2, 2\)"):
        transformer_attention(encoder, decoder, cross, source, target=np.zeros((3, 1, 2)))
    with pytest.raises(ValueError, match=r"indices must be .* in \[0, 3\)"):
        transformer_attention(encoder, decoder, cross, source, indices=[3])
    with pytest.raises(ValueError, match=r"\(N, n_heads, L_q, L_k\)"):
        transformer_attention(encoder[0], decoder, cross, source)
