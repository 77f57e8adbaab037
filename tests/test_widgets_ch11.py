"""The ViT explorer of chapter 11: the state behind it, and the widget redrawing one figure in place."""
import matplotlib.pyplot as plt
import pytest
import torch

from stepbystep.models import EncoderLayer, EncoderTransf, ViT, cls_attention
from stepbystep.widgets import vit_explorer, vit_explorer_state

CLASSES = ("straight", "/", "\\")


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = ViT(EncoderTransf(EncoderLayer(n_heads=4, d_model=16, ff_units=20, dropout=0.1), n_layers=1),
                img_size=12, in_channels=1, patch_size=4, n_outputs=3)
    generator = torch.Generator().manual_seed(1)
    images = torch.rand(6, 1, 12, 12, generator=generator)
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    return model, images, labels


def test_state_matches_cls_attention_for_one_head_and_the_mean(setup):
    model, images, labels = setup
    logits, attention = cls_attention(model, images)  # (6, 3), (6, 4, 3, 3)
    for head in (0, 3):
        state = vit_explorer_state(model, images, 4, head=head, labels=labels)
        torch.testing.assert_close(state["attention"], attention[4, head])
    mean = vit_explorer_state(model, images, 4, labels=labels)
    torch.testing.assert_close(mean["attention"], attention[4].mean(dim=0))
    torch.testing.assert_close(mean["probabilities"], logits[4].softmax(dim=-1))
    assert mean["prediction"] == int(logits[4].argmax()) and mean["label"] == 1
    assert mean["image"].shape == (1, 12, 12) and torch.equal(mean["image"], images[4])
    assert vit_explorer_state(model, images, 0)["label"] is None


def test_state_keeps_the_models_mode(setup):
    model, images, _ = setup
    model.train()
    first = vit_explorer_state(model, images, 2)
    again = vit_explorer_state(model, images, 2)
    assert model.training  # restored
    assert torch.equal(first["attention"], again["attention"])  # eval mode inside: no dropout
    model.eval()


@pytest.mark.parametrize("index, head, error, message", [
    (6, None, ValueError, "index must be an int in 0..5"),
    (-1, None, ValueError, "index must be a non-negative int, got -1"),
    (1.0, None, TypeError, "index must be a non-negative int, got float"),
    (0, 4, ValueError, "head must be None"),
    (0, "0", TypeError, "head must be a non-negative int, got str"),
])
def test_state_rejects_bad_choices(setup, index, head, error, message):
    model, images, _ = setup
    with pytest.raises(error, match=message):
        vit_explorer_state(model, images, index, head)


def test_widget_redraws_in_place(setup):
    model, images, labels = setup
    widget = vit_explorer(model, images, labels, CLASSES)
    figure = widget.figure
    assert widget.slider.max == 5 and [option[1] for option in widget.heads.options] == [None, 0, 1, 2, 3]
    state = vit_explorer_state(model, images, 0, labels=labels)
    assert f"predicted <b>{CLASSES[state['prediction']]}</b>" in widget.label.value
    assert "true class straight" in widget.label.value
    assert figure.axes[1].get_title() == "CLS attention, mean of the heads"
    # the prediction is in the figure too, so the still image of a static copy shows it
    assert figure._suptitle.get_text().startswith(f"image 0: predicted {CLASSES[state['prediction']]} (probability")

    widget.slider.value = 5
    widget.heads.value = 2
    assert widget.figure is figure
    assert figure.axes[0].get_title() == "image 5" and figure.axes[1].get_title() == "CLS attention, head 2"
    texts = [t.get_text() for t in figure.axes[1].texts]
    expected = vit_explorer_state(model, images, 5, head=2)["attention"].flatten()
    assert texts == [f"{value:.2f}" for value in expected.tolist()]
    assert "image 5" in widget.label.value and "true class \\" in widget.label.value
    assert figure._suptitle.get_text().startswith("image 5: predicted")
    assert len(figure.axes) == 3  # image, overlay and colour bar, not a growing stack
    assert plt.get_fignums() == []  # built without pyplot: no stray static figure


def test_widget_without_labels_or_names(setup):
    model, images, _ = setup
    widget = vit_explorer(model, images, index=3, head=1)
    assert "true class" not in widget.label.value and "image 3: predicted <b>" in widget.label.value
