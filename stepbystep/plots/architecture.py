"""The course's architecture diagram: one function draws every model the course builds.

``architecture_diagram(model, highlight=...)`` reads the sizes from ``model`` and draws its data
flow bottom to top: inputs, embedding or projection, positions, the encoder and decoder (their
sublayers, masks and the residual + norm wrapper), the output layer and the outputs. The parts
named in ``highlight`` (what the chapter builds) are filled in ``HIGHLIGHT``; with ``changed_from``,
the lines that differ from another model's diagram are marked ``MARK``.

Models: chapter 02's ``EncoderSelfAttn`` / ``DecoderSelfAttn`` / ``EncoderPe`` / ``DecoderPe``
and ``EncoderDecoderSelfAttn``; chapter 04's ``EncoderLayer`` / ``DecoderLayer`` (one layer,
sublayer by sublayer) and ``EncoderTransf`` / ``DecoderTransf``; chapter 05's
``EncoderDecoderTransf``; chapter 06's ``TransformerModel`` (PyTorch's part in ``TORCH``);
chapter 09's ``DecoderOnlyTransformer`` (with chapter 12's options); chapter 11's ``ViT``.
"""
import math

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from ..models import (
    DecoderLayer,
    DecoderOnlyTransformer,
    DecoderPe,
    DecoderSelfAttn,
    DecoderTransf,
    EncoderDecoderSelfAttn,
    EncoderDecoderTransf,
    EncoderLayer,
    EncoderPe,
    EncoderSelfAttn,
    EncoderTransf,
    RMSNorm,
    TransformerModel,
    ViT,
)

__all__ = ["architecture_diagram", "PARTS", "HIGHLIGHT", "COLORS", "MARK"]

COLORS = {
    "data": "#eeeeee",      # tensors going in and out
    "encoder": "#dbe9f6",
    "decoder": "#fde4cf",
    "torch": "#d9ead3",     # what PyTorch's nn.Transformer provides (chapter 06)
    "wrapper": "#e6dcf2",   # what a wrapper adds around it (chapter 06)
}
HIGHLIGHT = "#ffd84d"
MARK = "✱"  # a line that changed (``changed_from``)
PARTS = ("inputs", "embedding", "positions", "encoder", "decoder", "self-attention", "cross-attention",
         "feed-forward", "wrapper", "norm", "mask", "head", "outputs", "cls", "torch", "pos_embed")


class _Box:
    """One box: its text, colour kind and the parts (of ``PARTS``) it belongs to."""

    def __init__(self, text, kind, parts):
        self.text, self.kind, self.parts = text, kind, set(parts)
        self.artist = None


def _heads(n):
    return f"{n} head" + ("" if n == 1 else "s")


def _layer_parts(norm_first, cross):
    return {"self-attention", "feed-forward", "wrapper", "norm", "mask"} | ({"cross-attention"} if cross else set())


def _wrapper_rule(norm_first):
    return "each sublayer: x + drop(f(norm(x)))" if norm_first else "each sublayer: norm(x + drop(f(x)))"


def _positions_text(pe, what="positional encoding"):
    """'+ positional encoding', with the √d_model scaling the encoding applies to its input, if any."""
    if pe is None:
        return None
    if getattr(pe, "scale_input", False):
        return f"× √{pe.d_model}, + {what}"
    return f"+ {what}"


# ----------------------------------------------------------------------------- one layer, sublayer by sublayer
def _sublayer_boxes(layer, kind):
    """A layer's sublayers in order, each inside its wrapper, and the residual spans (start, end)."""
    cross = isinstance(layer, DecoderLayer)
    heads = _heads(layer.n_heads)
    mask = "causal mask" if cross else "source mask"
    sublayers = [(f"{'masked ' if cross else ''}self-attention ({heads})\n{mask}", {"self-attention", "mask"})]
    if cross:
        sublayers.append((f"cross-attention ({heads})\nkeys, values: encoder states; source mask",
                          {"cross-attention", "mask"}))
    sublayers.append((f"feed-forward ({layer.d_model} → {layer.ff_units} → {layer.d_model})", {"feed-forward"}))
    boxes, residuals = [], []
    for text, parts in sublayers:
        start = len(boxes)  # the column's box before this wrapper (the column starts with the input box)
        if layer.norm_first:
            boxes += [_Box("LayerNorm", kind, {"norm", "wrapper"}), _Box(text, kind, parts),
                      _Box("dropout, + residual", kind, {"wrapper"})]
            residuals.append((start, len(boxes)))  # to the add box, the column's box number len(boxes)
        else:
            boxes += [_Box(text, kind, parts), _Box("dropout, + residual", kind, {"wrapper"})]
            residuals.append((start, len(boxes)))
            boxes.append(_Box("LayerNorm", kind, {"norm", "wrapper"}))
    return boxes, residuals


def _layer_spec(layer):
    cross = isinstance(layer, DecoderLayer)
    kind = "decoder" if cross else "encoder"
    name = "DecoderLayer" if cross else "EncoderLayer"
    shape = f"(N, {'L_t' if cross else 'L'}, {layer.d_model})"
    inner, residuals = _sublayer_boxes(layer, kind)
    boxes = [_Box(f"input {shape}", "data", {"inputs"})] + inner + [_Box(f"output {shape}", "data", {"outputs"})]
    placement = "norm-first" if layer.norm_first else "norm-last"
    title = f"{name}: d_model = {layer.d_model}, {_heads(layer.n_heads)}, {placement}"
    # a residual starts at the box before the wrapper's first box (index + 1 for the input box)
    return [boxes], [], [(0, start, end, "residual") for start, end in residuals], title


# ----------------------------------------------------------------------------- stacks and whole models
def _stack_box(stack, kind, memory=False):
    layer = stack.layers[0]
    cross = kind == "decoder"
    lines = [f"{stack.n_layers} × {'decoder' if cross else 'encoder'} layer",
             f"{'masked ' if cross else ''}self-attention ({_heads(layer.n_heads)})"]
    if cross:
        lines.append("cross-attention to the " + ("memory" if memory else "states"))
    lines += [f"feed-forward ({layer.d_model} → {layer.ff_units} → {layer.d_model})",
              _wrapper_rule(layer.norm_first)]
    return _Box("\n".join(lines), kind, {kind} | _layer_parts(layer.norm_first, cross))


def _stack_boxes(stack, kind, memory=False):
    boxes = []
    if stack.pe is not None:
        boxes.append(_Box(_positions_text(stack.pe), kind, {"positions"}))
    boxes.append(_stack_box(stack, kind, memory))
    if stack.norm is not None:
        boxes.append(_Box("final LayerNorm", kind, {"norm", kind}))
    return boxes


def _stack_spec(stack):
    kind = "decoder" if isinstance(stack, DecoderTransf) else "encoder"
    length = "L_t" if kind == "decoder" else "L"
    shape = f"(N, {length}, {stack.d_model})"
    boxes = ([_Box(f"input {shape}", "data", {"inputs"})] + _stack_boxes(stack, kind)
             + [_Box(f"output {shape}", "data", {"outputs"})])
    title = f"{type(stack).__name__}: {stack.n_layers} layers, d_model = {stack.d_model}"
    return [boxes], [], [], title


def _transformer_spec(model):
    encoder, decoder = model.encoder, model.decoder
    d, f, ls, lt = encoder.d_model, model.n_features, model.input_len, model.target_len
    left = [_Box(f"source: the first {ls} corners\n(N, {ls}, {f})", "data", {"inputs"}),
            _Box(f"proj: Linear({f} → {d})\n(N, {ls}, {d})", "encoder", {"embedding"})]
    left += _stack_boxes(encoder, "encoder")
    left.append(_Box(f"encoder states\n(N, {ls}, {d})", "data", {"encoder"}))
    right = [_Box(f"decoder input: the last source corner, then\ntraining: the true target corners but the last,\n"
                  f"(N, {lt}, {f}) (teacher forcing)\n"
                  f"greedy: its own predictions, (N, 1 → {lt}, {f})", "data", {"inputs"}),
             _Box("proj (the same layer)", "decoder", {"embedding"})]
    right += _stack_boxes(decoder, "decoder")
    layers_at = 2 + (decoder.pe is not None)
    right += [_Box(f"linear: Linear({d} → {f})", "decoder", {"head"}),
              _Box(f"prediction: the last {lt} corners\n(N, {lt}, {f})", "data", {"outputs"})]
    links = [((0, len(left) - 1), (1, layers_at), "keys and values")]
    layer = encoder.layers[0]
    title = (f"EncoderDecoderTransf: d_model = {d}, {_heads(layer.n_heads)}, "
             f"{encoder.n_layers} + {decoder.n_layers} layers")
    return [left, right], links, [], title


def _self_attn_boxes(module, kind):
    """Chapter 02's encoder or decoder (no residual connections, no norms), behind its positions if any."""
    pe = getattr(module, "pe", None)
    layer = getattr(module, "layer", module)
    heads, d, f, ff = _heads(layer.n_heads), layer.d_model, layer.n_features, layer.ff_units
    boxes = []
    if pe is not None:
        boxes.append(_Box(_positions_text(pe), kind, {"positions"}))
    if kind == "encoder":
        boxes += [_Box(f"self-attention ({heads}, {f} → {d})\nsource mask", kind, {"self-attention", "mask", kind}),
                  _Box(f"feed-forward ({d} → {ff} → {d})", kind, {"feed-forward", kind})]
    else:
        boxes += [_Box(f"masked self-attention ({heads}, {f} → {d})\ncausal mask", kind,
                       {"self-attention", "mask", kind}),
                  _Box(f"cross-attention ({heads})\nsource mask", kind, {"cross-attention", "mask", kind}),
                  _Box(f"feed-forward ({d} → {ff} → {f})", kind, {"feed-forward", kind})]
    return boxes


def _self_attn_spec(model):
    if isinstance(model, (EncoderSelfAttn, EncoderPe, DecoderSelfAttn, DecoderPe)):
        kind = "encoder" if isinstance(model, (EncoderSelfAttn, EncoderPe)) else "decoder"
        f = getattr(model, "n_features", model.d_model)
        out = model.d_model if kind == "encoder" else f
        boxes = ([_Box(f"input (N, L, {f})", "data", {"inputs"})] + _self_attn_boxes(model, kind)
                 + [_Box(f"output (N, L, {out})", "data", {"outputs"})])
        return [boxes], [], [], f"{type(model).__name__}: no residual connections, no norms"
    encoder, decoder = model.encoder, model.decoder
    ls, lt, f, d = model.input_len, model.target_len, decoder.n_features, encoder.d_model
    left = ([_Box(f"source: the first {ls} corners\n(N, {ls}, {f})", "data", {"inputs"})]
            + _self_attn_boxes(encoder, "encoder") + [_Box(f"encoder states\n(N, {ls}, {d})", "data", {"encoder"})])
    right = [_Box(f"decoder input: the last source corner, then the true\ntarget corners but the last (training) or\n"
                  f"its own predictions (greedy), (N, {lt}, {f})", "data", {"inputs"})]
    right += _self_attn_boxes(decoder, "decoder")
    cross_at = len(right) - 2
    right.append(_Box(f"prediction: the last {lt} corners\n(N, {lt}, {f})", "data", {"outputs"}))
    title = f"{type(model).__name__}: no residual connections, no norms yet"
    return [left, right], [((0, len(left) - 1), (1, cross_at), "keys and values")], [], title


def _torch_stack_box(stack, kind, d):
    """PyTorch's encoder or decoder stack in one box: its layers' sizes, placement and final norm."""
    layer = stack.layers[0]
    heads, ff = _heads(layer.self_attn.num_heads), layer.linear1.out_features
    placement = "norm-first" if layer.norm_first else "norm-last"
    if kind == "encoder":
        sublayers = f"self-attention ({heads}),\nfeed-forward ({d} → {ff} → {d}), {placement}"
    else:
        sublayers = (f"masked self-attention ({heads}),\ncross-attention to the memory ({heads}),\n"
                     f"feed-forward ({d} → {ff} → {d}), {placement}")
    parts = {"torch", kind, "self-attention", "feed-forward", "wrapper", "norm"} | (
        {"cross-attention"} if kind == "decoder" else set())
    text = (f"nn.Transformer{kind.capitalize()}\n{len(stack.layers)} × layer: {sublayers}"
            + ("\n+ final LayerNorm" if stack.norm is not None else ""))
    return _Box(text, "torch", parts)


def _torch_spec(model):
    transf = model.transf
    d, f, ls, lt = transf.d_model, model.n_features, model.input_len, model.target_len
    heads = _heads(transf.encoder.layers[0].self_attn.num_heads)
    # one proj, one positional encoding and one norm serve both sides: the right column says so
    source_side = [_Box(f"proj: Linear({f} → {d})", "wrapper", {"embedding"}),
                   _Box(_positions_text(model.pe), "wrapper", {"positions"})]
    target_side = [_Box("proj (the same layer)", "wrapper", {"embedding"}),
                   _Box(_positions_text(model.pe) + " (the same)", "wrapper", {"positions"})]
    if model.norm is not None:
        source_side.append(_Box("norm: LayerNorm (the book's)", "wrapper", {"norm"}))
        target_side.append(_Box("norm (the same LayerNorm)", "wrapper", {"norm"}))
    enc_stack = _torch_stack_box(transf.encoder, "encoder", d)
    dec_stack = _torch_stack_box(transf.decoder, "decoder", d)
    left = ([_Box(f"source (N, {ls}, {f})", "data", {"inputs"})] + source_side + [enc_stack]
            + [_Box(f"memory (N, {ls}, {d})", "data", {"encoder"})])
    right = ([_Box(f"decoder input (N, {lt}, {f})", "data", {"inputs"})] + target_side + [dec_stack]
             + [_Box(f"linear: Linear({d} → {f})", "wrapper", {"head"}),
                _Box(f"prediction (N, {lt}, {f})", "data", {"outputs"})])
    masks = [_Box("masks, True = blocked:\nsource keep-mask (N, 1, L_s) →\nkey_padding_mask (N, L_s)\n"
                  f"causal_blocked_mask ({lt}, {lt})", "wrapper", {"mask"})]
    enc_at, dec_at = len(left) - 2, len(right) - 3
    links = [((0, len(left) - 1), (1, dec_at), "memory"),
             ((2, 0), (0, enc_at), "key_padding_mask"), ((2, 0), (1, dec_at), "both masks")]
    title = f"TransformerModel around nn.Transformer: d_model = {d}, {heads}"
    return [left, right, masks], links, [], title  # the masks go between the two sides


def _todays_block_lines(model, layer):
    """Chapter 12's options where they differ from the 2017 block: the attention's KV heads, the
    feed-forward network, the norm, the biases; the lines the stack box adds, and the norm's name."""
    attention = layer.self_attn_heads
    heads = _heads(layer.n_heads)
    if attention.n_kv_heads != attention.n_heads:
        kind = "multi-query" if attention.n_kv_heads == 1 else "grouped-query"
        heads += f", {attention.n_kv_heads} KV head{'s' if attention.n_kv_heads > 1 else ''}: {kind}"
    mlp = {"relu": "feed-forward", "gelu": "GELU feed-forward", "gelu_tanh": "GELU (tanh) feed-forward",
           "swiglu": "SwiGLU feed-forward"}[getattr(layer, "mlp_kind", "relu")]
    norm = "RMSNorm" if isinstance(model.norm if model.norm is not None else layer.sublayers[0].norm, RMSNorm) \
        else "LayerNorm"
    extras = ([] if norm == "LayerNorm" else [f"norm = {norm}"]) + \
        ([] if attention.linear_query.bias is not None else ["no biases"])
    return heads, mlp, extras, norm


def _decoder_only_spec(model):
    layer = model.layers[0]
    d, v = model.d_model, model.vocab_size
    heads, mlp, extras, norm = _todays_block_lines(model, layer)
    rope = ""  # RoPE turns the queries and keys inside every attention layer, not the residual stream
    if model.position_scheme == "rope":
        pairs = "" if model.rotary.pairing == "interleaved" else f", {model.rotary.pairing} pairs"
        rope = f"\nqueries, keys rotated by position (RoPE{pairs})"
    positions = {"sinusoidal": "+ sinusoidal positions", "learned": "+ learned positions",
                 "alibi": "ALiBi: − slope × distance on the scores", "rope": None,
                 "none": "no positions (only the causal mask)"}[model.position_scheme]
    pad = "" if model.pad_id is None else f"\npadding (id {model.pad_id}) never attended to"
    extra = "".join(f"\n{line}" for line in extras)
    layer_parts = {"decoder"} | _layer_parts(model.norm_first, False) | ({"positions"} if rope else set())
    boxes = [_Box("token ids (N, L)", "data", {"inputs"}),
             _Box(f"embed: Embedding(V = {v} → d_model = {d})", "decoder", {"embedding"})]
    if positions is not None:
        boxes.append(_Box(positions, "decoder", {"positions"}))
    boxes.append(_Box(f"{model.n_layers} × decoder-only layer\ncausal self-attention ({heads}){rope}{pad}\n"
                      f"{mlp} ({d} → {layer.ff_units} → {d})\n{_wrapper_rule(model.norm_first)}{extra}",
                      "decoder", layer_parts))
    if model.norm is not None:
        boxes.append(_Box(f"final {norm}", "decoder", {"norm", "decoder"}))
    head = len(boxes)
    tied = ", tied to embed" if model.tie_weights else ""
    no_bias = ", no bias" if model.head.bias is None else ""
    boxes += [_Box(f"head: Linear({d} → V = {v}){no_bias}{tied}", "decoder", {"head"}),
              _Box(f"next-token logits (N, L, V = {v})", "data", {"outputs"})]
    sides = [(0, 1, head, "tied")] if model.tie_weights else []
    return [boxes], [], sides, f"DecoderOnlyTransformer: d_model = {d}, {_heads(layer.n_heads)}, {model.n_layers} layers"


def _vit_spec(model):
    embed, encoder = model.embed, model.encoder
    d, p, c, size = model.d_model, embed.patch_size, embed.in_channels, embed.img_size
    n = embed.n_patches
    boxes = [_Box(f"images (N, {c}, {size}, {size})", "data", {"inputs"}),
             _Box(f"patch embedding: Conv2d {p}×{p}, stride {p}\n(N, {n}, {d})", "encoder", {"embedding"}),
             _Box(f"prepend the CLS token\n(N, {1 + n}, {d})", "encoder", {"cls"})]
    if model.pos_embed is not None:
        boxes.append(_Box("+ learned positions (pos_embed)", "encoder", {"positions", "pos_embed"}))
    boxes += _stack_boxes(encoder, "encoder")
    boxes += [_Box(f"the CLS token's state (N, {d})", "data", {"cls"}),
              _Box(f"mlp: Linear({d} → {model.n_outputs})", "encoder", {"head"}),
              _Box(f"logits (N, {model.n_outputs})", "data", {"outputs"})]
    layer = encoder.layers[0]
    return [boxes], [], [], f"ViT: {n} patches of {p}×{p}, d_model = {d}, {_heads(layer.n_heads)}"


_SPECS = (
    ((EncoderLayer, DecoderLayer), _layer_spec),
    ((EncoderTransf, DecoderTransf), _stack_spec),
    ((EncoderDecoderTransf,), _transformer_spec),
    ((EncoderSelfAttn, EncoderPe, DecoderSelfAttn, DecoderPe, EncoderDecoderSelfAttn), _self_attn_spec),
    ((TransformerModel,), _torch_spec),
    ((DecoderOnlyTransformer,), _decoder_only_spec),
    ((ViT,), _vit_spec),
)


# ----------------------------------------------------------------------------- drawing
def _draw_box(ax, x, y, box, highlighted):
    color = HIGHLIGHT if highlighted else COLORS[box.kind]
    box.artist = ax.text(x, y, box.text, ha="center", va="center", fontsize=8.5, multialignment="center",
                         bbox=dict(boxstyle="round,pad=0.45", facecolor=color,
                                   edgecolor="black" if highlighted else "gray", lw=1.6 if highlighted else 0.8))


def _arrow(ax, start, end, label=None):
    ax.annotate("", xy=end.artist.get_position(), xytext=start.artist.get_position(),
                arrowprops=dict(arrowstyle="-|>", color="dimgray", lw=1.1, shrinkA=0, shrinkB=0,
                                patchA=start.artist.get_bbox_patch(), patchB=end.artist.get_bbox_patch()))
    if label:  # along the arrow, a few points above it, so the text never covers the line
        (x0, y0), (x1, y1) = start.artist.get_position(), end.artist.get_position()
        (u0, v0), (u1, v1) = ax.transData.transform([(x0, y0), (x1, y1)])  # in display units
        angle = math.atan2(v1 - v0, u1 - u0)
        if abs(angle) > math.pi / 2:  # keep the text upright
            angle -= math.copysign(math.pi, angle)
        ax.annotate(label, ((x0 + x1) / 2, (y0 + y1) / 2), xytext=(-4 * math.sin(angle), 4 * math.cos(angle)),
                    textcoords="offset points", rotation=math.degrees(angle), rotation_mode="anchor", ha="center",
                    va="bottom", fontsize=8, color="dimgray", style="italic")


def _side_link(ax, fig, column, start, end, kind):
    """A line beside the boxes ``start`` to ``end`` of ``column``: a residual (left, arrow into the add
    box) or tied weights (right, dashed, no direction)."""
    renderer = fig.canvas.get_renderer()
    to_data = ax.transData.inverted()
    extents = [to_data.transform(b.artist.get_bbox_patch().get_window_extent(renderer)) for b in column[start:end + 1]]
    (y0, y1) = column[start].artist.get_position()[1], column[end].artist.get_position()[1]
    if kind == "residual":
        x = min(e[0, 0] for e in extents) - 0.03
        x0, x1, color, style, label, ha = extents[0][0, 0], extents[-1][0, 0], "tab:purple", "-", "residual", "right"
    else:
        x = max(e[1, 0] for e in extents) + 0.03
        x0, x1 = extents[0][1, 0], extents[-1][1, 0]
        color, style, label, ha = "tab:brown", "--", "the same matrix", "left"
    ax.plot([x0, x, x], [y0, y0, y1], color=color, lw=1.1, linestyle=style)
    arrow = "-|>" if kind == "residual" else "-"
    ax.annotate("", xy=(x1, y1), xytext=(x, y1),
                arrowprops=dict(arrowstyle=arrow, color=color, lw=1.1, linestyle=style, shrinkA=0, shrinkB=0))
    ax.text(x + (-0.01 if ha == "right" else 0.01), (y0 + y1) / 2, label, rotation=90, ha=ha, va="center",
            fontsize=7.5, color=color)


def _spec(model, name="model"):
    for types, spec in _SPECS:
        if isinstance(model, types):
            return spec
    names = ", ".join(t.__name__ for types, _ in _SPECS for t in types)
    raise TypeError(f"architecture_diagram draws the course's models ({names}), got {name} {type(model).__name__}")


def _mark_changes(columns, reference):
    """Prefix ``MARK`` to every line of ``columns``' boxes that no box of ``reference``'s diagram holds."""
    known = {line for column in reference for box in column for line in box.text.split("\n")}
    for column in columns:
        for box in column:
            box.text = "\n".join(line if line in known else f"{MARK} {line}" for line in box.text.split("\n"))


def architecture_diagram(model, highlight=(), title=None, changed_from=None, removed=()):
    """Draw ``model``'s architecture bottom to top, its sizes read from it; returns the Figure.

    Args:
        model: one of the course's models (see the module's docstring).
        highlight: parts to fill in ``HIGHLIGHT``, any of ``PARTS`` (e.g. ``("cross-attention",)``);
            a box is highlighted when it belongs to one of them.
        title: replaces the default title (the model's class and sizes).
        changed_from: another model of the same kind: each line that its diagram does not have is
            marked with ``MARK`` (what changed, line by line, rather than whole boxes).
        removed: lines of ``changed_from``'s diagram that ``model``'s drops, named under the diagram
            (a line missing from one and present in the other: a box that vanished shows nowhere else).
    """
    spec = _spec(model)
    if changed_from is not None and _spec(changed_from, "changed_from") is not spec:
        raise TypeError(f"changed_from must be drawn like model ({type(model).__name__}), "
                        f"got {type(changed_from).__name__}")
    if isinstance(highlight, str):
        highlight = (highlight,)
    highlight = set(highlight)
    unknown = highlight - set(PARTS)
    if unknown:
        raise ValueError(f"highlight must name parts among {', '.join(PARTS)}, got {sorted(unknown)}")
    columns, links, sides, default_title = spec(model)
    if isinstance(removed, str):
        removed = (removed,)
    if removed:
        if changed_from is None:
            raise ValueError("removed names lines of changed_from's diagram: pass changed_from too")
        before = {line for column in spec(changed_from)[0] for box in column for line in box.text.split("\n")}
        after = {line for column in columns for box in column for line in box.text.split("\n")}
        wrong = [line for line in removed if line not in before - after]
        if wrong:
            raise ValueError(f"removed must be lines of changed_from's diagram that model's does not have, got {wrong}")
    if changed_from is not None:
        _mark_changes(columns, spec(changed_from)[0])

    n_rows = max(len(column) for column in columns)
    tallest = max(box.text.count("\n") + 1 for column in columns for box in column)  # lines in one box
    width = {1: 5.2, 2: 9.0, 3: 11.0}[len(columns)]
    height = 0.9 + 0.62 * n_rows + 0.25 * math.ceil(n_rows / 4) + 0.4 * max(0, tallest - 5)  # room for a tall box
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    xs = {1: [0.55], 2: [0.27, 0.73], 3: [0.17, 0.83, 0.5]}[len(columns)]
    for x, column in zip(xs, columns):
        n = len(column)
        ys = [0.5] if n == 1 else [0.04 + 0.92 * i / (n_rows - 1) for i in range(n)]
        if len(columns) == 3 and column is columns[2]:
            ys = [0.04 + 0.92 * (n_rows - 3.5) / (n_rows - 1)]  # below the stacks, beside the norms
        for y, box in zip(ys, column):
            _draw_box(ax, x, y, box, bool(box.parts & highlight))
    for column in columns[:2] if len(columns) == 3 else columns:
        for start, end in zip(column[:-1], column[1:]):
            _arrow(ax, start, end)
    for (c0, i0), (c1, i1), label in links:
        _arrow(ax, columns[c0][i0], columns[c1][i1], label=label)
    if sides:
        fig.canvas.draw()  # the boxes' sizes are known once drawn
        for c, start, end, kind in sides:
            _side_link(ax, fig, columns[c], start, end, kind)
    kinds = []
    for column in columns:
        for box in column:
            if box.kind not in kinds and box.kind != "data":
                kinds.append(box.kind)
    names = {"encoder": "encoder side", "decoder": "decoder side", "torch": "PyTorch's nn.Transformer",
             "wrapper": "added by TransformerModel"}
    # the colours' key only where they tell sides apart: one stack alone has no other side
    handles = [Patch(facecolor=COLORS[k], edgecolor="gray", label=names[k]) for k in kinds] if len(kinds) > 1 else []
    if highlight:
        handles.append(Patch(facecolor=HIGHLIGHT, edgecolor="black", label="built in this chapter"))
    if changed_from is not None:
        handles.append(Patch(facecolor="none", edgecolor="none", label=f"{MARK} a line that changed"))
    handles += [Patch(facecolor="none", edgecolor="none", label=f"removed: {line}") for line in removed]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False)
    ax.set_title(title if title is not None else default_title, fontsize=10)
    return fig
