"""The training figures draw the losses they are given, under the names they are given."""
import pytest

from stepbystep.plots import loss_curves


def test_loss_curves_draws_both_losses_per_epoch_with_their_names():
    fig = loss_curves([1.0, 0.5, 0.25], [1.2, 0.6], val_label="held-out loss")
    ax = fig.axes[0]
    training, held_out = ax.get_lines()
    assert list(training.get_xdata()) == [1, 2, 3] and list(training.get_ydata()) == [1.0, 0.5, 0.25]
    assert list(held_out.get_xdata()) == [1, 2] and list(held_out.get_ydata()) == [1.2, 0.6]
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["training loss", "held-out loss"]
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "epoch" and ax.get_ylabel() == "loss"


def test_loss_curves_defaults_and_falls_back_to_a_linear_axis():
    fig = loss_curves([0.5, 0.0], [0.4, 0.1])
    ax = fig.axes[0]
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["training loss", "validation loss"]
    assert ax.get_yscale() == "linear"  # a zero loss has no logarithm
    assert len(loss_curves([0.3]).axes[0].get_lines()) == 1
    with pytest.raises(ValueError, match="train the model first"):
        loss_curves([])
