"""Chapter 17: chapter 12's KV-cache calculator for every kind of attention (multi-head,
grouped-query, multi-query, latent) and for sliding windows with attention sinks, with published
configurations marked and a menu that fills them in."""
import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..checks import check_choice, check_int_range, check_non_negative_int, check_positive_int
from ..models import kv_cache_bytes, latent_cache_bytes, published_attention, published_cache_bytes
from ..plots import cache_kinds_memory
from ._figure_box import FigureBox, show
from .ch12_cache import CACHE_DTYPES, _size

__all__ = ["ATTENTION_KINDS", "MARKED_CONFIGS", "memory_state", "memory_explorer"]

ATTENTION_KINDS = ("multi-head", "grouped-query", "multi-query", "latent")
MARKED_CONFIGS = ("DeepSeek-V3", "Mistral 7B v0.1", "Gemma 3 4B", "Qwen3 8B")  # the points on the plot, the menu's
OWN = "(your own)"


def _kv_heads(kind, n_heads, n_kv_heads):
    return {"multi-head": n_heads, "multi-query": 1}.get(kind, n_kv_heads)


def memory_state(kind="grouped-query", n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, kv_latent_dim=512,
                 rope_head_dim=64, window=0, sinks=0, full_layers=0, context=8192, dtype="bfloat16", n_points=65):
    """What the memory widget shows (defaults: Llama 3 8B in bfloat16).

    ``kind`` one of ``ATTENTION_KINDS``: ``"multi-head"`` caches ``n_heads`` key-value heads,
    ``"multi-query"`` one, ``"grouped-query"`` ``n_kv_heads`` (dividing ``n_heads``), each
    ``head_dim`` wide (``kv_cache_bytes``); ``"latent"`` caches ``kv_latent_dim + rope_head_dim``
    numbers per layer (``latent_cache_bytes``). ``window`` (``0``: none): all layers but
    ``full_layers`` hold at most ``sinks + window`` tokens (not with ``"latent"``).

    Returns a dict: ``per_token_bytes`` (one token, the bytes each token adds while the windows are
    not full), ``context_bytes`` (``context`` tokens), ``contexts`` ``(n_points,)`` from 0 to
    ``context`` and ``curve`` (the bytes at each), ``mha_curve`` and ``mha_bytes`` (a key-value head
    of ``head_dim`` per query head in every layer, no window), ``published`` ``{name: (context,
    bytes)}`` for ``MARKED_CONFIGS`` at their context in this dtype, and the arguments given.
    """
    check_choice("kind", kind, ATTENTION_KINDS)
    for name, value in (("n_layers", n_layers), ("n_heads", n_heads), ("n_kv_heads", n_kv_heads),
                        ("head_dim", head_dim), ("context", context), ("n_points", n_points)):
        check_positive_int(name, value)
    for name, value in (("window", window), ("sinks", sinks), ("full_layers", full_layers)):
        check_non_negative_int(name, value)
    check_choice("dtype", dtype, tuple(CACHE_DTYPES))
    torch_dtype = CACHE_DTYPES[dtype]
    if kind == "grouped-query" and n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads must divide n_heads, got n_heads={n_heads} and n_kv_heads={n_kv_heads}")
    if window:
        if kind == "latent":
            raise ValueError("the course's latent attention has no window: set window=0 for kind='latent'")
        if full_layers > n_layers:
            raise ValueError(f"full_layers must be at most n_layers ({n_layers}), got {full_layers}")
    elif sinks or full_layers:
        raise ValueError(f"sinks and full_layers need a window, got window=0, sinks={sinks}, full_layers={full_layers}")
    if kind == "latent":
        check_positive_int("kv_latent_dim", kv_latent_dim)
        check_positive_int("rope_head_dim", rope_head_dim)

    def cache_bytes(n_tokens):
        if kind == "latent":
            return latent_cache_bytes(n_layers, kv_latent_dim, rope_head_dim, n_tokens, dtype=torch_dtype)
        heads = _kv_heads(kind, n_heads, n_kv_heads)
        if not window:
            return kv_cache_bytes(n_layers, heads, head_dim, n_tokens, dtype=torch_dtype)
        windowed = n_layers - full_layers
        full = kv_cache_bytes(full_layers, heads, head_dim, n_tokens, dtype=torch_dtype) if full_layers else 0
        return full + (kv_cache_bytes(windowed, heads, head_dim, n_tokens, dtype=torch_dtype, window=window,
                                      sinks=sinks) if windowed else 0)

    contexts = torch.linspace(0, context, n_points).round().long()  # (n_points,)
    mha_per_token = kv_cache_bytes(n_layers, n_heads, head_dim, 1, dtype=torch_dtype)
    return {
        "per_token_bytes": cache_bytes(1),
        "context_bytes": cache_bytes(context),
        "mha_bytes": mha_per_token * context,
        "contexts": contexts,
        "curve": torch.tensor([cache_bytes(int(n)) for n in contexts]),  # (n_points,)
        "mha_curve": contexts * mha_per_token,  # (n_points,)
        "published": {name: (published_attention(name)["context"],
                             published_cache_bytes(name, published_attention(name)["context"], dtype=torch_dtype))
                      for name in MARKED_CONFIGS},
        "kind": kind, "context": context, "dtype": dtype, "window": window, "sinks": sinks,
    }


def preset(name):
    """The widget's settings for a published configuration (``published_attention``)."""
    a = published_attention(name)
    settings = dict(kind=a["kind"], n_layers=a["n_layers"], n_heads=a["n_heads"], window=a["window"] or 0, sinks=0,
                    full_layers=a["full_layers"] if a["window"] else 0, context=a["context"])
    if a["kind"] == "latent":
        return dict(settings, kv_latent_dim=a["kv_latent_dim"], rope_head_dim=a["rope_head_dim"])
    return dict(settings, n_kv_heads=a["n_kv_heads"], head_dim=a["head_dim"])


# each slider's (min, max): the explorer refuses starting values its sliders could not show
SLIDER_RANGES = {"n_layers": (1, 128), "n_heads": (1, 128), "n_kv_heads": (1, 128), "kv_latent_dim": (16, 2048),
                 "sinks": (0, 16), "full_layers": (0, 128), "context": (256, 262144)}
HEAD_DIMS = (32, 64, 80, 96, 128, 256)
ROPE_DIMS = (16, 32, 64, 128)
WINDOWS = (0, 128, 256, 512, 1024, 2048, 4096, 8192)


def memory_explorer(name="DeepSeek-V3", dtype="bfloat16"):
    """Controls for the attention's kind, layers, query and KV heads, head size, latent and rotary
    sizes, window, sinks and unwindowed layers, context and dtype, and a menu of ``MARKED_CONFIGS``
    that fills them in (``name``, or ``"(your own)"`` for Llama 3 8B's sizes): the bytes per token
    and for the context (``memory_state``), drawn against the context with the published
    configurations marked (``plots.cache_kinds_memory``). A setting ``memory_state`` refuses is
    reported, not drawn. Returns a ``FigureBox``; its controls are attributes (``config`` for the
    menu, then ``memory_state``'s argument names), ``summary`` the text and ``state`` the last state drawn."""
    check_choice("name", name, (OWN,) + MARKED_CONFIGS)
    check_choice("dtype", dtype, tuple(CACHE_DTYPES))
    values = dict(zip(("kind", "n_layers", "n_heads", "n_kv_heads", "head_dim", "kv_latent_dim", "rope_head_dim",
                       "window", "sinks", "full_layers", "context"), memory_state.__defaults__[:11]), dtype=dtype)  # Llama 3 8B
    if name != OWN:
        values.update(preset(name))
    for key, (low, high) in SLIDER_RANGES.items():
        check_int_range(key, values[key], low, high)
    style = {"description_width": "110px"}

    def slider(key, description, **options):
        low, high = SLIDER_RANGES[key]
        return widgets.IntSlider(value=values[key], min=low, max=high, description=description, style=style, **options)

    def menu(key, options, description):
        return widgets.Dropdown(options=list(options), value=values[key], description=description, style=style)

    controls = {
        "kind": menu("kind", ATTENTION_KINDS, "attention"),
        "n_layers": slider("n_layers", "layers"),
        "n_heads": slider("n_heads", "query heads"),
        "n_kv_heads": slider("n_kv_heads", "KV heads"),
        "head_dim": menu("head_dim", HEAD_DIMS, "head size"),
        "kv_latent_dim": slider("kv_latent_dim", "latent rank", step=16),
        "rope_head_dim": menu("rope_head_dim", ROPE_DIMS, "rotary key"),
        "window": menu("window", WINDOWS, "window (0: none)"),
        "sinks": slider("sinks", "sinks"),
        "full_layers": slider("full_layers", "unwindowed layers"),
        "context": slider("context", "context", step=256),
        "dtype": menu("dtype", CACHE_DTYPES, "dtype"),
    }
    config = widgets.Dropdown(options=[OWN, *MARKED_CONFIGS], value=name, description="published",
                              style=style)
    for control in controls.values():
        control.continuous_update = False
    summary = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(8, 3.8), layout="constrained")
    box = FigureBox([config,
                     widgets.HBox([controls["kind"], controls["n_layers"], controls["n_heads"]]),
                     widgets.HBox([controls["n_kv_heads"], controls["head_dim"], controls["kv_latent_dim"]]),
                     widgets.HBox([controls["rope_head_dim"], controls["window"], controls["sinks"]]),
                     widgets.HBox([controls["full_layers"], controls["context"], controls["dtype"]]),
                     summary, output], figure)
    filling = []  # non-empty while the menu sets the controls: one redraw at the end

    def redraw(_change=None):
        if filling:
            return
        settings = {key: control.value for key, control in controls.items()}
        if config.value != OWN and any(settings[key] != value for key, value in preset(config.value).items()):
            filling.append(True)
            config.value = OWN  # a control moved away from the published configuration
            filling.clear()
        try:
            state = memory_state(**settings)
        except ValueError as error:
            summary.value = f"<b>not drawn</b>: {error}"
            return
        box.state = state
        marked = "" if config.value == OWN else f"<b>{config.value}</b> as published: "
        window = (f", windows of {settings['window']:,} (+ {settings['sinks']} sinks) in "
                  f"{settings['n_layers'] - settings['full_layers']} of {settings['n_layers']} layers"
                  if settings["window"] else "")
        summary.value = (f"{marked}{settings['kind']}{window}: {_size(state['per_token_bytes'])} per token, "
                         f"{_size(state['context_bytes'])} for {settings['context']:,} tokens (a KV head per query "
                         f"head, no window: {_size(state['mha_bytes'])})")
        cache_kinds_memory(state, fig=figure)
        show(output, figure)

    def fill(change):
        if filling or change["new"] == OWN:
            return
        filling.append(True)
        for key, value in preset(change["new"]).items():
            controls[key].value = value
        filling.clear()
        redraw()

    for key, control in controls.items():
        control.observe(redraw, names="value")
        setattr(box, key, control)
    config.observe(fill, names="value")
    box.config, box.summary, box.state = config, summary, None
    redraw()
    return box
