"""The course's live widgets.

Each widget is a function that builds its controls and an output area, wires the callbacks and
returns the container; the computation behind it is a plain function that tests call directly.
Figures are redrawn in place (one figure per widget, cleared and drawn again), so moving a
slider never stacks up figures or flickers. The container also carries a still image of its
figure, which static copies of the course (``make html``, a code host) show instead of a widget
that needs a live kernel.
"""
import base64
import html
import io

import ipywidgets as widgets
import numpy as np
import torch
from IPython.display import clear_output, display
from matplotlib.figure import Figure

from .checks import check_non_negative_int, check_positive_int
from .data.date_completions import EOS as _EOS
from .data.date_completions import is_consistent as _is_consistent
from .data.date_completions import is_well_formed as _is_well_formed
from .data.date_completions import prompt_ids as _prompt_ids
from .data.date_completions import split_stream as _split_stream
from .data.regression import make_regression_data as _make_regression_data
from .data.regression import regression_grid as _regression_grid
from .devices import evaluating as _evaluating
from .gradient_norms import layer_gradient_norms as _layer_gradient_norms
from .models import MultiHeadAttention as _MultiHeadAttention
from .models import MultiHeadedAttention as _MultiHeadedAttention
from .models import padding_mask as _padding_mask
from .models import scaled_dot_product as _scaled_dot_product
from .models import subsequent_mask as _subsequent_mask
from .models import translate_with_alignment as _translate_with_alignment
from .models import generate as _generate
from .models import next_token_logits as _next_token_logits
from .models import sampling_distribution as _sampling_distribution
from .models.kernel_regression import best_sigma as _best_sigma
from .models.vit import cls_attention as _cls_attention
from .widget_states import kernel_fit as _kernel_fit
from .plots.dates import alignment_map as _alignment_map
from .plots.heads import head_maps as _head_maps
from .plots.kernel_regression import kernel_dashboard as _kernel_dashboard
from .plots.masks import mask_and_weights as _mask_and_weights
from .plots.sampling import token_distribution as _token_distribution
from .plots.stacking import gradient_norms_by_layer as _gradient_norms_by_layer
from .plots.vit import cls_attention_overlay as _cls_attention_overlay

__all__ = [
    "sigma_explorer",
    "mask_explorer",
    "mask_explorer_weights",
    "divisors",
    "heads_explorer",
    "heads_explorer_state",
    "gradient_norms_explorer",
    "date_translator",
    "sampling_explorer",
    "sampling_explorer_state",
    "vit_explorer",
    "vit_explorer_state",
    "FigureBox",
]


def _show(output, figure):
    """Replace what ``output`` shows by ``figure``, without a blank frame in between."""
    with output:
        clear_output(wait=True)
        display(figure)


class FigureBox(widgets.VBox):
    """A ``VBox`` whose ``figure`` is redrawn in place by its controls.

    Besides the live widget it offers a still PNG of the figure as it was last drawn, so a page
    that cannot run widgets (an HTML copy, a code host) still shows the picture.
    """

    def __init__(self, children, figure, **kwargs):
        super().__init__(children, **kwargs)
        self.figure = figure

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        bundle["image/png"] = base64.b64encode(buffer.getvalue()).decode("ascii")
        return bundle


SIGMA_LOG_RANGE = (-2.0, 1.0)  # the σ slider spans 10⁻² .. 10¹


def sigma_explorer(x_train=None, y_train=None, sigma=0.5, n_grid=200):
    """A σ slider (log scale) redrawing the fit, the kernel and the weights heatmap together.

    ``x_train``, ``y_train`` ``(n,)`` default to ``make_regression_data()``. The label under
    the slider gives the leave-one-out error at the current σ and the best σ on a grid over the
    slider's range. The computation is ``kernel_fit``; the drawing is ``kernel_dashboard``.
    Returns a ``VBox`` (slider, label, output); its ``figure`` attribute is the one figure the
    slider redraws in place.
    """
    if x_train is None or y_train is None:
        x_train, y_train = _make_regression_data()
    x_grid, y_true = _regression_grid(n_grid)  # (n_grid,), (n_grid,)
    grid_best, grid_error = _best_sigma(x_train, y_train, torch.logspace(*SIGMA_LOG_RANGE, 61))
    slider = widgets.FloatLogSlider(value=sigma, base=10, min=SIGMA_LOG_RANGE[0], max=SIGMA_LOG_RANGE[1],
                                        step=0.02, description="σ", readout_format=".3f",
                                        continuous_update=False)
    label = widgets.Label()
    output = widgets.Output()
    figure = Figure(figsize=(12, 3.6), layout="constrained")

    def redraw(_change=None):
        fit = _kernel_fit(x_train, y_train, x_grid, slider.value)
        _kernel_dashboard(x_train, y_train, x_grid, fit, y_true=y_true, fig=figure)
        label.value = (f"leave-one-out MSE at σ = {fit.sigma:.3f}: {fit.loo_error:.4f}   "
                       f"(lowest on the slider's range: {grid_error:.4f} at σ = {grid_best:.3f})")
        _show(output, figure)

    slider.observe(redraw, names="value")
    redraw()
    box = FigureBox([slider, label, output], figure)
    return box


MASK_EXPLORER_MAX_LEN = 10


def mask_explorer_weights(length, causal=False, n_padded=0, seed=0, d_k=4):
    """The mask and the self-attention weights it gives a fixed random sequence.

    Queries and keys ``(1, MASK_EXPLORER_MAX_LEN, d_k)`` are drawn once from ``seed`` and cut
    to ``length``, so changing the mask is the only thing that changes the weights. The last
    ``n_padded`` positions are padding: a source mask ``(1, 1, L)`` hides them as keys; with
    ``causal`` the subsequent mask ``(1, L, L)`` also hides every later key. The two combine
    with ``&``.

    Returns ``(mask, weights)``, both ``(L, L)``; ``mask`` is bool, ``True`` = may attend.
    """
    check_non_negative_int("length", length)
    if not 1 <= length <= MASK_EXPLORER_MAX_LEN:
        raise ValueError(f"length must be an int in 1..{MASK_EXPLORER_MAX_LEN}, got {length!r}")
    check_non_negative_int("n_padded", n_padded)
    if n_padded >= length:
        raise ValueError(f"n_padded must be an int in 0..{length - 1} (one real element at least), got {n_padded!r}")
    generator = torch.Generator().manual_seed(seed)
    queries = torch.randn(1, MASK_EXPLORER_MAX_LEN, d_k, generator=generator)[:, :length]  # (1, L, d_k)
    keys = torch.randn(1, MASK_EXPLORER_MAX_LEN, d_k, generator=generator)[:, :length]  # (1, L, d_k)
    ids = torch.ones(1, length, dtype=torch.long)  # (1, L): a token id per position, 0 = pad
    ids[:, length - n_padded:] = 0
    mask = _padding_mask(ids, pad_id=0)  # (1, 1, L)
    if causal:
        mask = mask & _subsequent_mask(length)  # (1, L, L)
    mask = mask.expand(1, length, length)  # (1, L, L): one row per query, for drawing
    _, weights = _scaled_dot_product(queries, keys, keys, mask)  # (1, L, L)
    return mask[0], weights[0]


def _describe_row(mask, weights, row):
    visible = mask[row].nonzero().flatten().tolist()
    shares = ", ".join(f"{weights[row, key]:.2f}" for key in visible)
    return f"query {row} reads keys {visible} with weights [{shares}] (sum {weights[row].sum():.2f})"


def mask_explorer(seed=0):
    """Mask explorer: switch the causal and padding masks, pick the length and a query row.

    Shows the mask and the resulting attention weights side by side (``mask_and_weights``),
    the chosen row outlined, and a line spelling out that row's weights. The container's
    ``figure`` attribute is the figure redrawn in place.
    """
    length = widgets.IntSlider(value=6, min=2, max=MASK_EXPLORER_MAX_LEN, description="length")
    causal = widgets.Checkbox(value=True, description="causal mask")
    padding = widgets.Checkbox(value=False, description="padding mask")
    n_padded = widgets.IntSlider(value=2, min=1, max=5, description="# padded", disabled=True)
    query_row = widgets.IntSlider(value=2, min=0, max=5, description="query row")
    summary = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(8.5, 3.8), layout="constrained")

    resizing = False

    def redraw(_change=None):
        if resizing:  # the sliders' bounds are moving with the length: draw once, afterwards
            return
        n_padded.disabled = not padding.value
        mask, weights = mask_explorer_weights(
            length.value, causal=causal.value, n_padded=n_padded.value if padding.value else 0, seed=seed
        )
        _mask_and_weights(mask, weights, query_row=query_row.value, fig=figure)
        summary.value = _describe_row(mask, weights, query_row.value)
        _show(output, figure)

    def resize(_change):
        nonlocal resizing
        resizing = True  # lowering a max may clamp a value, which would redraw mid-update
        n_padded.max = length.value - 1
        query_row.max = length.value - 1
        resizing = False
        redraw()

    length.observe(resize, names="value")
    for control in (causal, padding, n_padded, query_row):
        control.observe(redraw, names="value")
    redraw()
    controls = widgets.HBox([widgets.VBox([length, query_row]), widgets.VBox([causal, padding, n_padded])])
    box = FigureBox([controls, summary, output], figure)
    return box


def divisors(n):
    """The positive divisors of ``n`` in increasing order: the head counts ``d_model`` allows."""
    check_positive_int("n", n)
    return [k for k in range(1, n + 1) if n % k == 0]


def _mh_count_parameters(module):
    return sum(p.numel() for p in module.parameters())


def heads_explorer_state(n_heads, d_model=12, seq_len=4, seed=0):
    """What the heads widget shows for ``n_heads`` narrow heads on a fixed seeded input.

    The input ``(1, seq_len, d_model)`` comes from a ``torch.Generator`` seeded with ``seed``
    (scaled by 2 so the maps are not flat); the attention module is built with the same
    ``seed`` without touching the global RNG. A narrow module's four projections are
    ``(d_model, d_model)`` whatever ``n_heads`` is, so every head count sees the same
    projected queries and keys, only split differently.

    Returns a dict: ``n_heads``, ``d_k``, ``narrow_parameters`` and ``wide_parameters`` (the
    parameter counts of the narrow ``MultiHeadedAttention`` and of the wide
    ``MultiHeadAttention`` with as many heads, alias ``NarrowMultiHeadAttention`` and
    ``WideMultiHeadAttention``), and ``alphas``, the self-attention weights ``(n_heads, L, L)``.
    """
    check_positive_int("d_model", d_model)
    check_positive_int("n_heads", n_heads)
    if n_heads not in divisors(d_model):
        raise ValueError(f"n_heads must divide d_model={d_model} ({divisors(d_model)}), got {n_heads!r}")
    generator = torch.Generator().manual_seed(seed)
    x = 2 * torch.randn(1, seq_len, d_model, generator=generator)  # (1, L, d_model)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        narrow = _MultiHeadedAttention(n_heads, d_model, dropout=0.0)
        wide = _MultiHeadAttention(n_heads, d_model)
    with _evaluating(narrow):
        narrow.init_keys(x)
        narrow(x)
    return {
        "n_heads": n_heads,
        "d_k": narrow.d_k,
        "narrow_parameters": _mh_count_parameters(narrow),
        "wide_parameters": _mh_count_parameters(wide),
        "alphas": narrow.alphas[0],  # (n_heads, L, L)
    }


def heads_explorer(d_model=12, seq_len=4, seed=0):
    """A heads slider over the divisors of ``d_model``: ``d_k``, parameter counts, each head's map.

    Returns a ``VBox`` (slider, label, output); its ``figure`` attribute is the one figure the
    slider redraws.
    """
    options = divisors(d_model)
    slider = widgets.SelectionSlider(options=options, value=options[min(1, len(options) - 1)],
                                         description="heads", continuous_update=False)
    label = widgets.HTML()
    output = widgets.Output()
    figure = Figure(layout="constrained")

    def redraw(change=None):
        state = heads_explorer_state(slider.value, d_model, seq_len, seed)
        label.value = (
            f"d_model = {d_model}, n_heads = {state['n_heads']}, <b>d_k = {state['d_k']}</b>; "
            f"parameters: narrow {state['narrow_parameters']:,}, wide {state['wide_parameters']:,}"
        )
        _head_maps(state["alphas"], fig=figure)
        _show(output, figure)

    slider.observe(redraw, names="value")
    redraw()
    box = FigureBox([slider, label, output], figure)
    return box


NORM_PLACEMENTS = {"norm-first": True, "norm-last": False}


def _gradient_norms_summary(runs):
    """One line per run: how the last layer's gradient compares with the first, and the final loss."""
    lines = []
    for run in runs:
        first, last = run.norms[0, 0], run.norms[0, -1]
        lines.append(f"{run.label}: at initialisation the last layer's gradient is {last / first:.2f}× "
                     f"the first layer's; loss after {len(run.losses)} steps {run.losses[-1]:.4f}")
    return "<br>".join(lines)


def gradient_norms_explorer(max_layers=8, n_layers=6, steps=50, warmup_steps=20, lr=0.03, seed=0, runs=()):
    """Norm placement toggle and depth slider: gradient norms per layer, without and with warm-up.

    Every setting shows two stacks (``layer_gradient_norms``) of the chosen placement and depth,
    one trained at the full learning rate ``lr`` from the first step and one warming up over
    ``warmup_steps``, side by side (``gradient_norms_by_layer``). ``runs``: runs already computed
    with these ``steps``, ``lr`` and ``seed`` (e.g. a notebook's), shown without training again;
    new settings are trained once and kept. Returns a ``VBox`` (controls, summary, output); its
    ``figure`` attribute is the one figure redrawn in place.
    """
    computed = {}
    for run in runs:
        if len(run.losses) != steps or not np.isclose(max(run.learning_rates), lr):
            raise ValueError(f"runs must be computed with steps={steps} and lr={lr}, got a run of "
                             f"{len(run.losses)} steps peaking at lr={max(run.learning_rates)}")
        computed[(run.norm_first, run.n_layers, run.warmup_steps)] = run
    placement = widgets.ToggleButtons(options=list(NORM_PLACEMENTS), value="norm-last", description="norm")
    depth = widgets.IntSlider(value=n_layers, min=1, max=max_layers, description="layers",
                                  continuous_update=False)
    summary = widgets.HTML()
    output = widgets.Output()
    figure = Figure(layout="constrained")

    def run_for(norm_first, n_layers, warmup):
        key = (norm_first, n_layers, warmup)
        if key not in computed:
            computed[key] = _layer_gradient_norms(n_layers, norm_first, steps=steps, lr=lr,
                                                  warmup_steps=warmup, seed=seed)
        return computed[key]

    def redraw(_change=None):
        shown = [run_for(NORM_PLACEMENTS[placement.value], depth.value, warmup) for warmup in (0, warmup_steps)]
        _gradient_norms_by_layer(shown, fig=figure)
        summary.value = _gradient_norms_summary(shown)
        _show(output, figure)

    placement.observe(redraw, names="value")
    depth.observe(redraw, names="value")
    redraw()
    box = FigureBox([widgets.HBox([placement, depth]), summary, output], figure)
    return box


def _translation_message(result):
    """The label's text for a ``Translation``: the output, and any characters read as ``<unk>``."""
    text, translation = (html.escape(value, quote=False) for value in (result.text, result.translation))
    message = f"<b>{text}</b> → <b>{translation}</b>"
    if result.unknown:
        unknown = ", ".join(repr(character) for character in result.unknown)
        message += f" (read as &lt;unk&gt;, unknown to the vocabulary: {html.escape(unknown, quote=False)})"
    return message


def date_translator(model, src_vocab, tgt_vocab, text="Tue 10 Jul 2007", head=None):
    """A text box: type a date, see the model's translation and its cross-attention map.

    Pressing Enter (or leaving the box) translates the text with ``translate_with_alignment``
    and redraws ``alignment_map`` (``head``: one head, ``None`` the mean) in place. Text the
    model cannot read (empty, or longer than its ``max_len``) shows the reason instead of a
    map. Returns a ``VBox`` (text box, label, output); its ``figure`` attribute is the one
    figure redrawn in place, its ``text`` and ``label`` attributes the box and the label.
    """
    box_text = widgets.Text(value=text, description="date", placeholder="e.g. March 3rd 2001",
                                continuous_update=False)
    label = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(9, 4.5), layout="constrained")

    def redraw(_change=None):
        try:
            result = _translate_with_alignment(model, box_text.value, src_vocab, tgt_vocab)
        except ValueError as error:
            label.value = f"<span style='color: firebrick'>{html.escape(str(error), quote=False)}</span>"
            figure.clear()
            with output:
                clear_output()
            return
        label.value = _translation_message(result)
        _alignment_map(result, head=head, fig=figure)
        _show(output, figure)

    box_text.observe(redraw, names="value")
    redraw()
    container = FigureBox([box_text, label, output], figure)
    container.text = box_text
    container.label = label
    return container


# ----------------------------------------------------------------------------- chapter 11: the ViT explorer
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
    logits, attention = _cls_attention(model, image[None])  # (1, n_outputs), (1, h, grid, grid)
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
        image_ax.imshow(state["image"][0].numpy(), cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
        image_ax.set_xticks([])
        image_ax.set_yticks([])
        image_ax.set_title(f"image {slider.value}", fontsize=9)
        which = "mean of the heads" if heads.value is None else f"head {heads.value}"
        overlay = _cls_attention_overlay(state["image"][0], state["attention"], overlay_ax,
                                         title=f"CLS attention, {which}")
        figure.colorbar(overlay, ax=overlay_ax, shrink=0.8)
        label.value = _vit_message(state, slider.value, class_names)
        _show(output, figure)

    slider.observe(redraw, names="value")
    heads.observe(redraw, names="value")
    redraw()
    box = FigureBox([widgets.HBox([slider, heads]), label, output], figure)
    box.slider = slider
    box.heads = heads
    box.label = label
    return box


# [sampling explorer: chapter 09]
def sampling_explorer_state(model, vocab, prompt="March", temperature=1.0, top_k=None, top_p=None, n_samples=5,
                            seed=0):
    """What the sampling widget shows for a decoder-only ``model`` and a partial text ``prompt``.

    The next-token distribution after ``<sos>`` + ``prompt`` (at ``temperature``; at 0 the
    plain softmax is drawn), which tokens the settings keep (``sampling_distribution``), and
    ``n_samples`` continuations drawn with these settings from a ``torch.Generator`` seeded
    with ``seed`` (the same settings always give the same samples).

    Returns a dict: ``probs`` ``(V,)``, ``kept`` ``(V,)`` bool, ``samples`` a list of
    ``(text, iso, well_formed, consistent)``: the text written before ``=``, the ISO date after
    it (``None`` without one), whether the stream is well-formed and whether its date is the
    one the text writes.
    """
    ids = _prompt_ids(prompt, vocab, separator=False)
    logits = _next_token_logits(model, ids).float()  # (V,)
    probs = torch.softmax(logits / (temperature or 1.0), dim=-1)  # (V,)
    kept = _sampling_distribution(logits.unsqueeze(0), temperature, top_k, top_p)[0] > 0  # (V,)
    generator = torch.Generator(device=logits.device).manual_seed(seed)
    new_tokens = min(model.max_len - len(ids), 40)
    streams = _generate(model, [ids] * n_samples, new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                        eos_id=_EOS, generator=generator)  # (n_samples, L + T)
    samples = []
    for row in streams.cpu():
        text, iso, _ = _split_stream(row, vocab)
        well_formed = _is_well_formed(row, vocab)
        samples.append((text, iso, well_formed, well_formed and _is_consistent(text, iso)))
    return {"probs": probs.cpu(), "kept": kept.cpu(), "samples": samples}


def _samples_html(samples):
    lines = []
    for text, iso, well_formed, consistent in samples:
        stream = html.escape(text if iso is None else f"{text} = {iso}", quote=False)
        verdict = "✓ right" if consistent else ("well-formed, wrong date" if well_formed else "✗ not well-formed")
        lines.append(f"<code>{stream}</code> &nbsp; <i>{verdict}</i>")
    return "<br>".join(lines)


def sampling_explorer(model, vocab, prompt="March", n_samples=5, seed=0):
    """Sliders for temperature, top-k and top-p over a decoder-only model's next token.

    Draws the next-token distribution after ``prompt`` with the tokens the settings keep in
    orange (``token_distribution``) and lists ``n_samples`` sampled continuations, each marked
    right, well-formed but wrong, or not well-formed (``sampling_explorer_state``). top-k 0
    and top-p 1 switch those filters off. Returns a ``VBox``; its ``figure`` is redrawn in
    place, ``temperature``, ``top_k``, ``top_p`` are the sliders and ``samples`` the list.
    """
    temperature = widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1, description="temperature",
                                      continuous_update=False)
    top_k = widgets.IntSlider(value=0, min=0, max=20, description="top-k (0: off)", continuous_update=False)
    top_p = widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="top-p",
                                continuous_update=False)
    samples = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(8, 3), layout="constrained")

    def redraw(_change=None):
        state = sampling_explorer_state(model, vocab, prompt, temperature.value, top_k.value or None,
                                        None if top_p.value >= 1 else top_p.value, n_samples, seed)
        title = (f"after {prompt!r}: T = {temperature.value:g}, top-k {top_k.value or 'off'}, "
                 f"top-p {top_p.value if top_p.value < 1 else 'off'} ({int(state['kept'].sum())} tokens kept)")
        _token_distribution(state["probs"], vocab, state["kept"], title=title, fig=figure)
        samples.value = _samples_html(state["samples"])
        _show(output, figure)

    for control in (temperature, top_k, top_p):
        control.observe(redraw, names="value")
    redraw()
    box = FigureBox([widgets.HBox([temperature, top_k, top_p]), output, samples], figure)
    box.temperature, box.top_k, box.top_p, box.samples = temperature, top_k, top_p, samples
    return box


# [position explorer: chapter 10]
def position_explorer_state(head=0, base=10000.0, n_heads=8, length=16, d_head=16, seed=0):
    """What the chapter-10 widget shows: ALiBi's bias for one head and RoPE's score for one base.

    ALiBi: head ``head`` of ``n_heads`` (its slope from ``alibi_slopes``), the bias
    ``-slope × distance`` for distances ``0 .. length-1`` and the causal attention over
    ``length`` positions that the bias alone gives (every content score equal). RoPE: a fixed
    random vector ``v`` ``(d_head,)`` (seeded by ``seed``) used as query and key; its score with
    itself ``d`` positions apart, ``rotate(v, d) · v / √d_head`` (by ``RotaryEmbedding(d_head,
    base)``), and the causal attention a sequence of that one vector gets from those scores.

    Returns a dict: ``head``, ``slope`` and ``base`` (floats and ints as given), ``distances``
    ``(length,)``, ``alibi_bias`` and ``rope_scores`` ``(length,)``, ``alibi_attention`` and
    ``rope_attention`` ``(length, length)``, rows summing to 1.
    """
    from .checks import check_positive_int
    from .models import alibi_bias, alibi_slopes
    from .models import RotaryEmbedding

    check_positive_int("n_heads", n_heads)
    check_positive_int("length", length)
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < n_heads:
        raise ValueError(f"head must be an int in 0..{n_heads - 1}, got {head!r}")
    rotary = RotaryEmbedding(d_head, base=base, max_len=length)
    causal = torch.ones(length, length, dtype=torch.bool).tril()  # (L, L)
    slope = float(alibi_slopes(n_heads)[head])
    distances = torch.arange(length)  # (L,)
    bias = alibi_bias(n_heads, length)[head]  # (L, L)
    alibi_attention = torch.softmax(bias.masked_fill(~causal, float("-inf")), dim=-1)  # (L, L)
    vector = torch.randn(d_head, generator=torch.Generator().manual_seed(seed))  # (d_head,)
    with torch.no_grad():
        placed = rotary(vector.expand(length, d_head), distances)  # (L, d_head): v at positions 0..L-1
    scores = placed @ placed.T / d_head ** 0.5  # (L, L): depends on i - j only
    rope_attention = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)  # (L, L)
    return {
        "head": head,
        "slope": slope,
        "base": base,
        "distances": distances,
        "alibi_bias": -slope * distances.float(),
        "rope_scores": scores[:, 0],  # (L,): query at d, key at 0
        "alibi_attention": alibi_attention,
        "rope_attention": rope_attention,
    }


def position_explorer(n_heads=8, length=16, d_head=16, seed=0):
    """Sliders for ALiBi's head (its slope) and RoPE's base, redrawing the bias or score against
    the distance and the attention pattern each gives (``position_explorer_state`` computes it;
    ``plots.position_explorer_figure`` draws it). Returns a ``VBox``; its ``figure`` is redrawn
    in place, ``head`` and ``base`` are the sliders and ``label`` the line under them."""
    import math

    from .models import rotary_frequencies as _rotary_frequencies
    from .plots.positions import position_explorer_figure as _position_explorer_figure

    head = widgets.IntSlider(value=0, min=0, max=n_heads - 1, description="ALiBi head", continuous_update=False)
    base = widgets.FloatLogSlider(value=10000.0, base=10, min=1, max=5, step=0.25, description="RoPE base",
                                  readout_format=".4g", continuous_update=False)
    label = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(9, 5.6), layout="constrained")

    def redraw(_change=None):
        state = position_explorer_state(head.value, base.value, n_heads, length, d_head, seed)
        _position_explorer_figure(state, figure)
        reach = int((state["alibi_attention"][-1] > 0.01).sum())
        slowest = 2 * math.pi / float(_rotary_frequencies(d_head, base.value)[-1])  # positions per turn
        label.value = (f"ALiBi head {head.value} of {n_heads}, slope {state['slope']:.4g}: the last query gives "
                       f"more than 1% of its attention to {reach} of {length} keys. RoPE base {base.value:.4g}: "
                       f"the slowest pair needs {slowest:.4g} positions for a full turn.")
        _show(output, figure)

    head.observe(redraw, names="value")
    base.observe(redraw, names="value")
    redraw()
    box = FigureBox([widgets.HBox([head, base]), label, output], figure)
    box.head, box.base, box.label = head, base, label
    return box


__all__ += ["position_explorer", "position_explorer_state"]
