"""Chapter 11: pick an image and a head, see the ViT's prediction and where its CLS token looks."""
import html

import ipywidgets as widgets
from matplotlib.figure import Figure

from ..checks import check_int_range, check_non_negative_int
from ..models import cls_attention
from ..plots import cls_attention_overlay
from ._figure_box import FigureBox, show

__all__ = ["vit_explorer_state", "vit_explorer"]


def vit_explorer_state(model, images, index, head=None, labels=None):
    """What the ViT widget shows for image ``index`` and ``head`` (``None``: the heads' mean).

    Classifies ``images[index]`` (``images`` ``(N, C, H, W)``) with ``cls_attention`` (eval
    mode, no gradients, the model's mode restored) and returns a dict: ``image`` ``(C, H, W)``,
    ``attention`` ``(grid, grid)``, the CLS token's attention over the patches in the last
    encoder layer (one head, or the mean of the heads), ``probabilities`` ``(n_outputs,)``
    (softmax of the logits), ``prediction`` (an int) and ``label`` (``labels[index]`` as an
    int, or ``None`` without labels).
    """
    check_non_negative_int("index", index)
    if index >= len(images):
        raise ValueError(f"index must be an int in 0..{len(images) - 1}, got {index!r}")
    n_heads = model.encoder.layers[-1].self_attn_heads.n_heads
    if head is not None:
        check_non_negative_int("head", head)
        if head >= n_heads:
            raise ValueError(f"head must be None (the mean) or an int in 0..{n_heads - 1}, got {head!r}")
    image = images[index]  # (C, H, W)
    logits, attention = cls_attention(model, image[None])  # (1, n_outputs), (1, h, grid, grid)
    probabilities = logits[0].softmax(dim=-1)  # (n_outputs,)
    return {
        "image": image.detach().cpu(),
        "attention": attention[0].mean(dim=0) if head is None else attention[0, head],  # (grid, grid)
        "probabilities": probabilities,
        "prediction": int(probabilities.argmax()),
        "label": None if labels is None else int(labels[index]),
    }


def _vit_message(state, index, class_names):
    def name(label):
        return html.escape(class_names[label], quote=False) if class_names else str(label)

    prediction = state["prediction"]
    message = (f"image {index}: predicted <b>{name(prediction)}</b> "
               f"(probability {state['probabilities'][prediction]:.3f})")
    if state["label"] is not None:
        verdict = "right" if state["label"] == prediction else "<span style='color: firebrick'>wrong</span>"
        message += f", true class {name(state['label'])}: {verdict}"
    return message


def _vit_text(state, index, class_names):
    """The label's message in plain text, for the figure's title (so a still image shows it too)."""
    def name(label):
        return class_names[label] if class_names else str(label)

    prediction = state["prediction"]
    text = f"image {index}: predicted {name(prediction)} (probability {state['probabilities'][prediction]:.3f})"
    if state["label"] is not None:
        text += f", true: {name(state['label'])}, {'right' if state['label'] == prediction else 'WRONG'}"
    return text


def _draw_image(ax, image, title):
    """A grey image ``(H, W)`` in [0, 1], pixel for pixel, without ticks."""
    ax.imshow(image.numpy(), cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)


def vit_explorer(model, images, labels=None, class_names=None, index=0, head=None):
    """Pick an image and a head: see the ViT's prediction and where its CLS token looks.

    A slider picks the image (``images`` ``(N, C, H, W)``, grey ones are drawn), a dropdown
    one head of the last encoder layer or their mean; the label gives the prediction, its
    probability and (with ``labels``) whether it is right; the figure shows the image and the
    CLS attention laid over its patches (``vit_explorer_state`` computes it all). Returns a
    ``VBox``; its ``figure`` attribute is the figure redrawn in place, its ``slider``, ``heads``
    and ``label`` attributes the controls and the label.
    """
    n_heads = model.encoder.layers[-1].self_attn_heads.n_heads
    check_int_range("index", index, 0, len(images) - 1)  # what the slider can show
    slider = widgets.IntSlider(value=index, min=0, max=len(images) - 1, description="image",
                               continuous_update=False)
    heads = widgets.Dropdown(options=[("mean of the heads", None)] + [(f"head {h}", h) for h in range(n_heads)],
                             value=head, description="head")
    label = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(6.4, 3.4), layout="constrained")

    def redraw(_change=None):
        state = vit_explorer_state(model, images, slider.value, heads.value, labels)
        figure.clear()
        image_ax, overlay_ax = figure.subplots(1, 2)
        _draw_image(image_ax, state["image"][0], f"image {slider.value}")
        which = "mean of the heads" if heads.value is None else f"head {heads.value}"
        overlay = cls_attention_overlay(state["image"][0], state["attention"], overlay_ax,
                                        title=f"CLS attention, {which}")
        figure.colorbar(overlay, ax=overlay_ax, shrink=0.8, label="CLS attention weight")
        figure.suptitle(_vit_text(state, slider.value, class_names), fontsize=9)
        label.value = _vit_message(state, slider.value, class_names)
        show(output, figure)

    slider.observe(redraw, names="value")
    heads.observe(redraw, names="value")
    redraw()
    box = FigureBox([widgets.HBox([slider, heads]), label, output], figure)
    box.slider = slider
    box.heads = heads
    box.label = label
    return box
