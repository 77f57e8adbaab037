"""Chapter 13: pick a layer, a head and a sequence; see the head's map and scores, switch it off
and see the loss at every position."""
import math

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..checks import check_instance, check_int_range
from ..devices import evaluating
from ..interpret import ablate_heads, attention_weights, induction_score, per_position_loss, previous_token_score
from ..plots._heatmaps import WEIGHTS
from ._figure_box import FigureBox, show

__all__ = ["head_explorer_state", "head_explorer", "parse_tokens", "repeat_start"]


def parse_tokens(text, vocab_size, max_len):
    """Token ids from ``text`` such as ``"3 14 15 3 14"`` (spaces or commas): ``(1, L)`` int64,
    ``2 <= L <= max_len``, every id below ``vocab_size``."""
    check_instance("text", text, str, "a string of token ids")
    parts = text.replace(",", " ").split()
    if len(parts) < 2 or not all(part.isdigit() for part in parts):
        raise ValueError(f"text must hold at least two token ids (whole numbers), got {text!r}")
    ids = [int(part) for part in parts]
    if len(ids) > max_len:
        raise ValueError(f"text must hold at most {max_len} token ids (the model's max_len), got {len(ids)}")
    if max(ids) >= vocab_size:
        raise ValueError(f"text must hold token ids below {vocab_size}, got {max(ids)}")
    return torch.tensor([ids])  # (1, L)


def head_explorer_state(model, ids, layer, head):
    """What the widget shows for one sequence ``ids`` ``(1, L)`` and head ``(layer, head)``: a dict
    with ``weights`` ``(L, L)``, the head's ``previous`` and ``induction`` scores (floats; the
    induction score is ``None`` when no token repeats), the loss at every position ``(L - 1,)``
    with the head on (``loss``) and switched off (``ablated_loss``), ``log_v`` (a uniform guess's
    loss) and ``repeat_start`` (where the sequence starts repeating its opening, or ``None``)."""
    check_int_range("layer", layer, 0, len(model.layers) - 1)
    check_int_range("head", head, 0, model.layers[layer].self_attn_heads.n_heads - 1)
    if ids.dim() != 2 or ids.shape[0] != 1:
        raise ValueError(f"ids must have shape (1, L), got {tuple(ids.shape)}")
    ids = ids.to(model.embed.weight.device)  # (1, L) where the model is
    weights = attention_weights(model, ids)[layer][:, head:head + 1]  # (1, 1, L, L)
    repeats = bool((ids[0, :, None] == ids[0, None, :]).tril(diagonal=-1).any())
    with evaluating(model):
        loss = per_position_loss(model(ids), ids)  # (L - 1,)
        with ablate_heads(model, [(layer, head)]):
            ablated = per_position_loss(model(ids), ids)  # (L - 1,)
    return {
        "weights": weights[0, 0].cpu(),
        "previous": previous_token_score(weights).item(),
        "induction": induction_score(weights, ids).item() if repeats else None,
        "loss": loss.cpu(),
        "ablated_loss": ablated.cpu(),
        "log_v": math.log(model.vocab_size),
        "repeat_start": repeat_start(ids[0].tolist()),
    }


def repeat_start(tokens):
    """The first position ``p`` from which ``tokens`` (a list) repeats its opening, at least two
    tokens of it (``tokens[p:] == tokens[:len(tokens) - p]``), or ``None``: 12 for a sequence of 12
    random tokens followed by the same 12."""
    return next((p for p in range(1, len(tokens) - 1) if tokens[p:] == tokens[:len(tokens) - p]), None)


def _draw(figure, state, ids, layer, head, ablate):
    figure.clear()
    map_ax, loss_ax = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
    image = map_ax.imshow(state["weights"].numpy(), **WEIGHTS)
    labels = [str(t) for t in ids[0].tolist()]
    ticks = range(len(labels))
    map_ax.set_xticks(ticks, labels, fontsize=6, rotation=90)
    map_ax.set_yticks(ticks, labels, fontsize=6)
    induction = "—" if state["induction"] is None else f"{state['induction']:.2f}"
    map_ax.set(xlabel="key (token id)", ylabel="query (token id)",
               title=f"layer {layer}, head {head}\nprevious-token {state['previous']:.2f}, induction {induction}")
    figure.colorbar(image, ax=map_ax, shrink=0.8, label="attention weight")
    if state["repeat_start"] is not None:  # where the repeat starts, as on the chapter's maps
        map_ax.axhline(state["repeat_start"] - 0.5, color="white", lw=0.6, ls="--")
        map_ax.axvline(state["repeat_start"] - 0.5, color="white", lw=0.6, ls="--")
        loss_ax.axvline(state["repeat_start"], color="grey", ls=":", lw=1)
    loss_ax.axhline(state["log_v"], color="grey", ls="--", lw=1, label="ln V: a uniform guess")
    positions = range(1, ids.shape[1])
    loss_ax.plot(positions, state["loss"].numpy(), marker="o", ms=3, color="C0", label="all heads on")
    if ablate:
        loss_ax.plot(positions, state["ablated_loss"].numpy(), marker="o", ms=3, color="C3",
                     label=f"layer {layer}, head {head} off")
    loss_ax.set(xlabel="position of the predicted token", ylabel="loss", ylim=(0, None),
                title="loss at each position")
    loss_ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize=8, frameon=False)


def head_explorer(model, sequences, layer=1, head=0):
    """Pick a layer, a head and one of ``sequences`` ``(N, L)`` (or type token ids): the head's attention
    map and two scores, and the loss at every position; the checkbox switches the head off and adds
    the loss without it. Returns a ``FigureBox`` with ``layer``, ``head``, ``sequence``, ``text``,
    ``ablate`` and ``message`` attributes (the controls and the message line)."""
    n_layers, n_heads = len(model.layers), model.layers[0].self_attn_heads.n_heads
    layer_box = widgets.Dropdown(options=list(range(n_layers)), value=layer, description="layer")
    head_box = widgets.Dropdown(options=list(range(n_heads)), value=head, description="head")
    sequence = widgets.IntSlider(value=0, min=0, max=len(sequences) - 1, description="sequence",
                                 continuous_update=False)
    text = widgets.Text(value="", placeholder="or type token ids, e.g. 3 14 15 9 3 14 15",
                        description="tokens", continuous_update=False)
    ablate = widgets.Checkbox(value=False, description="switch the head off")
    message = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(10, 4.2), layout="constrained")

    def redraw(_change=None):
        ids = sequences[sequence.value:sequence.value + 1]  # (1, L)
        message.value = ""
        if text.value.strip():
            try:
                ids = parse_tokens(text.value, model.vocab_size, model.max_len)
            except ValueError as error:
                message.value = f"<span style='color: firebrick'>{error}</span>"
        state = head_explorer_state(model, ids, layer_box.value, head_box.value)
        _draw(figure, state, ids, layer_box.value, head_box.value, ablate.value)
        show(output, figure)

    for control in (layer_box, head_box, sequence, text, ablate):
        control.observe(redraw, names="value")
    redraw()
    box = FigureBox([widgets.HBox([layer_box, head_box, ablate]), widgets.HBox([sequence, text]), message, output],
                    figure)
    box.layer, box.head, box.sequence, box.text, box.ablate, box.message = \
        layer_box, head_box, sequence, text, ablate, message
    return box
