"""Chapter 12: the KV cache's memory for any configuration, with published models marked."""
import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from ..checks import check_choice, check_int_range, check_positive_int
from ..models import PUBLISHED_CACHES, kv_cache_bytes
from ..plots import kv_cache_memory
from ._figure_box import FigureBox, show

__all__ = ["CACHE_DTYPES", "kv_cache_state", "kv_cache_explorer"]

CACHE_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
                "float8_e4m3fn": torch.float8_e4m3fn}

HEAD_DIMS = (32, 64, 80, 96, 128, 256)  # the head sizes the widget offers


def kv_cache_state(n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, context=8192, batch_size=1,
                   dtype="bfloat16", n_points=65):
    """What the cache widget shows (defaults: Llama 3 8B in bfloat16).

    ``n_kv_heads`` must divide ``n_heads``; ``dtype`` one of ``CACHE_DTYPES``. Returns a dict:
    ``per_token_bytes``, ``per_sequence_bytes`` (``context`` tokens) and ``batch_bytes``
    (``batch_size`` sequences) from ``kv_cache_bytes``; ``contexts`` ``(n_points,)`` from 0 to
    ``context`` and the curves ``per_sequence_curve``, ``batch_curve`` over them; ``published``
    ``{name: (context, bytes)}``, each of ``PUBLISHED_CACHES`` at its context in this dtype;
    ``mha_bytes`` what the same model would cache with a key-value head per query head;
    ``batch_size`` and ``dtype`` as given, ``context`` too.
    """
    for name, value in (("n_heads", n_heads), ("n_kv_heads", n_kv_heads), ("context", context),
                        ("n_points", n_points)):
        check_positive_int(name, value)
    if n_heads % n_kv_heads != 0:
        raise ValueError(f"n_kv_heads must divide n_heads, got n_heads={n_heads} and n_kv_heads={n_kv_heads}")
    check_choice("dtype", dtype, tuple(CACHE_DTYPES))
    torch_dtype = CACHE_DTYPES[dtype]
    per_token = kv_cache_bytes(n_layers, n_kv_heads, head_dim, 1, dtype=torch_dtype)
    contexts = torch.linspace(0, context, n_points).round().long()  # (n_points,)
    published = {name: (c["context"], kv_cache_bytes(c["n_layers"], c["n_kv_heads"], c["head_dim"], c["context"],
                                                     dtype=torch_dtype))
                 for name, c in PUBLISHED_CACHES.items()}
    return {
        "per_token_bytes": per_token,
        "per_sequence_bytes": kv_cache_bytes(n_layers, n_kv_heads, head_dim, context, dtype=torch_dtype),
        "batch_bytes": kv_cache_bytes(n_layers, n_kv_heads, head_dim, context, batch_size, dtype=torch_dtype),
        "mha_bytes": kv_cache_bytes(n_layers, n_heads, head_dim, context, batch_size, dtype=torch_dtype),
        "contexts": contexts,
        "per_sequence_curve": contexts * per_token,
        "batch_curve": contexts * per_token * batch_size,
        "published": published,
        "context": context,
        "batch_size": batch_size,
        "dtype": dtype,
    }


def _size(n_bytes):
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:,.2f} {unit}"
    return f"{n_bytes} bytes"


# each slider's (min, max): the explorer refuses starting values its sliders could not show
SLIDER_RANGES = {"n_layers": (1, 128), "n_heads": (1, 128), "n_kv_heads": (1, 128), "context": (256, 131072),
                 "batch_size": (1, 256)}


def kv_cache_explorer(n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, context=8192, batch_size=1,
                      dtype="bfloat16"):
    """Sliders for layers, heads, KV heads, head size, context, batch size and a dtype menu: the
    cache's memory per token, per sequence and for the batch (``kv_cache_state``), drawn against
    the context with published models marked (``plots.kv_cache_memory``). A KV-head count that does
    not divide the heads is reported, not drawn. Returns a ``FigureBox``; its controls are
    attributes (``n_layers``, ``n_heads``, ``n_kv_heads``, ``head_dim``, ``context``,
    ``batch_size``, ``dtype``), ``summary`` the text and ``state`` the last state drawn."""
    values = {"n_layers": n_layers, "n_heads": n_heads, "n_kv_heads": n_kv_heads, "context": context,
              "batch_size": batch_size}
    for name, (low, high) in SLIDER_RANGES.items():
        check_int_range(name, values[name], low, high)
    check_choice("head_dim", head_dim, HEAD_DIMS)
    check_choice("dtype", dtype, tuple(CACHE_DTYPES))
    style = {"description_width": "90px"}

    def slider(name, description, **options):
        low, high = SLIDER_RANGES[name]
        return widgets.IntSlider(value=values[name], min=low, max=high, description=description, style=style, **options)

    controls = {
        "n_layers": slider("n_layers", "layers"),
        "n_heads": slider("n_heads", "query heads"),
        "n_kv_heads": slider("n_kv_heads", "KV heads"),
        "head_dim": widgets.Dropdown(options=list(HEAD_DIMS), value=head_dim, description="head size",
                                     style=style),
        "context": slider("context", "context", step=256),
        "batch_size": slider("batch_size", "batch"),
        "dtype": widgets.Dropdown(options=list(CACHE_DTYPES), value=dtype, description="dtype", style=style),
    }
    for control in controls.values():
        control.continuous_update = False
    summary = widgets.HTML()
    output = widgets.Output()
    figure = Figure(figsize=(8, 3.8), layout="constrained")
    box = FigureBox([widgets.HBox([controls["n_layers"], controls["n_heads"], controls["n_kv_heads"]]),
                     widgets.HBox([controls["head_dim"], controls["context"], controls["batch_size"]]),
                     controls["dtype"], summary, output], figure)

    def redraw(_change=None):
        values = {name: control.value for name, control in controls.items()}
        if values["n_heads"] % values["n_kv_heads"]:
            summary.value = (f"<b>{values['n_kv_heads']} KV heads do not divide {values['n_heads']} query heads</b>: "
                             "each KV head must serve a whole group of query heads")
            return
        state = box.state = kv_cache_state(**values)
        summary.value = (f"{_size(state['per_token_bytes'])} per token, {_size(state['per_sequence_bytes'])} per "
                         f"sequence of {values['context']:,} tokens, {_size(state['batch_bytes'])} for the batch "
                         f"(with a KV head per query head: {_size(state['mha_bytes'])})")
        kv_cache_memory(state, fig=figure)
        show(output, figure)

    for name, control in controls.items():
        control.observe(redraw, names="value")
        setattr(box, name, control)
    box.summary, box.state = summary, None
    redraw()
    return box
