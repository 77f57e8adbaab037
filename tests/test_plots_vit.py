"""Chapter 11's figures: line samples, the patch grid, token counts, the seaborn confusion matrix and
the CLS attention overlays."""
import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from stepbystep.plots import (  # noqa: E402
    cls_attention_maps,
    cls_attention_overlay,
    confusion_heatmap,
    line_samples,
    patch_grid,
    tokens_by_patch_size,
)

CLASSES = ("straight", "/", "\\")


def test_line_samples_one_row_per_class():
    images = torch.rand(10, 1, 12, 12)
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    fig = line_samples(images, labels, CLASSES, n_per_class=3)
    assert isinstance(fig, Figure) and len(fig.axes) == 9
    assert [fig.axes[0].get_ylabel(), fig.axes[3].get_ylabel(), fig.axes[6].get_ylabel()] == \
        ["0: straight", "1: /", "2: \\"]
    assert [ax.get_title() for ax in fig.axes[:3]] == ["image 0", "image 3", "image 6"]


def test_line_samples_hides_missing_panels():
    fig = line_samples(torch.rand(2, 12, 12), [0, 0], CLASSES, n_per_class=2)
    assert sum(ax.axison for ax in fig.axes) == 2  # classes 1 and 2 have no image


def test_patch_grid_draws_the_grid_and_the_sequence():
    image = torch.arange(144.0).reshape(1, 12, 12) / 144
    fig = patch_grid(image, 4)
    whole, *patches = fig.axes
    assert len(patches) == 9 and len(whole.patches) == 9  # nine borders, nine patch panels
    assert [t.get_text() for t in whole.texts] == [str(i) for i in range(9)]
    assert [ax.get_title() for ax in patches] == [str(i) for i in range(9)]
    # patch 5 is the middle row, right column
    np.testing.assert_array_equal(patches[5].images[0].get_array(), image[0, 4:8, 8:12].numpy())


@pytest.mark.parametrize("patch_size, error, match", [(5, ValueError, "dividing the image's 12x12 pixels"),
                                                      (0, ValueError, "patch_size must be a positive int, got 0"),
                                                      (4.0, TypeError, "patch_size must be a positive int, got float")])
def test_patch_grid_rejects_patches_that_do_not_tile(patch_size, error, match):
    with pytest.raises(error, match=match):
        patch_grid(torch.zeros(12, 12), patch_size)


def test_tokens_by_patch_size_counts():
    fig = tokens_by_patch_size(12, [2, 4, 6])
    (ax,) = fig.axes
    assert [bar.get_height() for bar in ax.patches] == [37, 10, 5, 37 ** 2, 100, 25]
    assert ax.get_yscale() == "log"
    with pytest.raises(ValueError, match="dividing img_size=12"):
        tokens_by_patch_size(12, [5])


def test_confusion_heatmap_uses_seaborn_with_counts_and_row_shares():
    confusion = torch.tensor([[8, 2, 0], [0, 5, 0], [1, 0, 0]])
    fig = confusion_heatmap(confusion, CLASSES, title="test")
    ax = fig.axes[0]
    assert len(fig.axes) == 2  # the map and its colour bar
    assert [t.get_text() for t in ax.texts] == ["8", "2", "0", "0", "5", "0", "1", "0", "0"]
    shares = ax.collections[0].get_array().reshape(3, 3)
    np.testing.assert_allclose(shares, [[0.8, 0.2, 0], [0, 1, 0], [1, 0, 0]])
    assert [t.get_text() for t in ax.get_xticklabels()] == list(CLASSES)
    assert ax.get_xlabel() == "predicted class" and ax.get_ylabel() == "true class" and ax.get_title() == "test"


def test_confusion_heatmap_handles_an_empty_row_and_checks_the_shape():
    fig = confusion_heatmap(np.array([[3, 0, 0], [0, 0, 0], [0, 1, 2]]), CLASSES)
    assert np.isfinite(fig.axes[0].collections[0].get_array()).all()
    with pytest.raises(ValueError, match=r"\(3, 3\) matrix"):
        confusion_heatmap(np.zeros((2, 2)), CLASSES)


def test_cls_attention_overlay_labels_every_patch():
    fig = Figure()
    ax = fig.add_subplot()
    attention = torch.tensor([[0.5, 0.1, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.1]])
    overlay = cls_attention_overlay(torch.rand(1, 12, 12), attention, ax, title="head 0")
    assert [t.get_text() for t in ax.texts] == ["0.50", "0.10", "0.00", "0.00", "0.20", "0.00", "0.00", "0.00", "0.10"]
    assert overlay.get_extent() == [-0.5, 11.5, 11.5, -0.5]  # the 3x3 grid stretched over the 12x12 image
    assert overlay.get_clim() == (0.0, 1.0) and ax.get_title() == "head 0"
    assert all(t.get_color() == "white" and t.get_path_effects() for t in ax.texts)  # outlined: readable on any colour
    with pytest.raises(ValueError, match="does not tile"):
        cls_attention_overlay(torch.rand(12, 12), torch.rand(5, 5), ax)


def test_cls_attention_maps_one_row_per_image_one_column_per_head():
    images, attention = torch.rand(2, 1, 12, 12), torch.rand(2, 4, 3, 3) / 9
    fig = cls_attention_maps(images, attention, titles=["a", "b"])
    assert len(fig.axes) == 2 * 5 + 1  # images and heads, and the colour bar
    assert [fig.axes[i].get_title() for i in (0, 1, 4, 5)] == ["a", "head 0", "head 3", "b"]
    with pytest.raises(ValueError, match="for the same n"):
        cls_attention_maps(images, attention[:1])


def test_confusion_heatmap_wraps_long_class_names():
    fig = confusion_heatmap(torch.eye(3), ("horizontal or vertical", "diagonal /", "diagonal \\"))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["horizontal\nor vertical", "diagonal /", "diagonal \\"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["horizontal or vertical", "diagonal /", "diagonal \\"]
    assert ax.xaxis.labelpad == 8
