"""Chapter 06's figures: one mask in three conventions, and our model against PyTorch's."""
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from ..checks import check_choice, check_instance, check_tensor
from ..models import to_additive_mask, to_key_padding_mask, to_torch_attn_mask
from ._arrays import _as_numpy
from ._heatmaps import MASK, heatmap

__all__ = ["mask_conventions", "model_comparison", "timing_bars"]


def _mask_kind(mask):
    """``"target"`` for ``(L_q, L_k)`` / ``(1, L_q, L_k)`` masks, ``"source"`` for ``(N, 1, L)``."""
    check_tensor("mask", mask, dtype=torch.bool)
    if mask.dim() == 2 or (mask.dim() == 3 and mask.shape[0] == 1):
        return "target"
    if mask.dim() == 3 and mask.shape[1] == 1:
        return "source"
    raise ValueError(
        "mask must be a target mask (1, L_q, L_k) or (L_q, L_k), or a source mask "
        f"(N, 1, L), got shape {tuple(mask.shape)}"
    )


def _draw_cells(ax, keep, labels, title, xlabel, ylabel):
    """Colour ``keep`` ``(rows, cols)`` (light = may attend) and write each cell's ``labels``."""
    heatmap(ax, keep.astype(int), MASK, annot=np.array(labels), fmt="", square=True)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)


def _labels(values, fmt):
    return [[fmt(value) for value in row] for row in values.tolist()]


def _float_label(value):
    return "-inf" if value == float("-inf") else f"{value:g}"


def mask_conventions(mask):
    """One keep-mask in the three conventions: ours, PyTorch's boolean and PyTorch's additive.

    ``mask`` is ours (``True`` = may attend): a target mask ``(1, L_q, L_k)`` or ``(L_q, L_k)``
    becomes PyTorch's ``attn_mask`` ``(L_q, L_k)``; a source mask ``(N, 1, L)`` becomes its
    ``key_padding_mask`` ``(N, L)``. The conversions are the package's (``to_torch_attn_mask``
    or ``to_key_padding_mask``, then ``to_additive_mask``). Every panel colours the cells the
    same way (light = may attend, dark = blocked) and writes the value each convention
    stores there. Returns the Figure with three axes.
    """
    kind = _mask_kind(mask)
    if kind == "target":
        keep = mask[0] if mask.dim() == 3 else mask  # (L_q, L_k)
        blocked = to_torch_attn_mask(mask)  # (L_q, L_k), True = blocked
        ours_title = f"ours: target mask {tuple(mask.shape)}\nTrue = may attend"
        torch_title = f"PyTorch attn_mask {tuple(blocked.shape)}\nTrue = blocked"
        ylabel = "query"
    else:
        keep = mask[:, 0, :]  # (N, L)
        blocked = to_key_padding_mask(mask)  # (N, L), True = padding
        ours_title = f"ours: source mask {tuple(mask.shape)}\nTrue = may attend"
        torch_title = f"PyTorch key_padding_mask {tuple(blocked.shape)}\nTrue = blocked"
        ylabel = "sequence"
    additive = to_additive_mask(keep.bool())  # (rows, cols): 0 keep, -inf block
    keep = _as_numpy(keep.bool())
    fig, axes = plt.subplots(1, 3, figsize=(3 * (1.2 + 0.45 * keep.shape[1]), 1.8 + 0.45 * keep.shape[0]),
                             layout="constrained")
    _draw_cells(axes[0], keep, _labels(keep, lambda v: "T" if v else "F"), ours_title, "key", ylabel)
    _draw_cells(axes[1], keep, _labels(_as_numpy(blocked), lambda v: "T" if v else "F"),
                torch_title, "key", ylabel)
    _draw_cells(axes[2], keep, _labels(_as_numpy(additive), _float_label),
                f"additive float mask {tuple(additive.shape)}\n0 = keep, -inf = blocked", "key", ylabel)
    return fig


def _check_names(name, values, names):
    expected = f"a dict with the runs' names {names} in that order"
    check_instance(name, values, dict, expected)
    if list(values) != names:
        raise ValueError(f"{name} must be {expected}, got {list(values)}")


def model_comparison(runs, parameters=None, seconds=None, val_label="test"):
    """Several models trained the same way: loss curves, and optionally parameter counts and times.

    Args:
        runs: maps a model's name to ``(train_losses, val_losses)``, per-epoch sequences.
        parameters: ``None``, or maps the same names, in the same order, to parameter counts.
            Equal counts are said in the title rather than drawn as equal bars.
        seconds: ``None``, or maps the same names to training wall times in seconds (a panel of bars).
        val_label: what the second curve of each run was measured on (``"validation"`` or
            ``"test"``), used in the legend and the title.

    Every loss curve goes on one log-scale axes, with labelled ticks at 1, 2 and 5 times each
    power of ten (training solid, the other dashed, one colour a model, the legend, outside
    the data, giving each final value). Returns the Figure.
    """
    check_instance("runs", runs, dict, "a dict of name -> (train, test) losses")
    if not runs:
        raise ValueError("runs must be a non-empty dict of name -> (train, test) losses, got an empty dict")
    names = list(runs)
    bars = []
    if parameters is not None:
        _check_names("parameters", parameters, names)
        if len(set(parameters.values())) > 1:
            bars.append((parameters, "parameters", "{:,.0f}", "parameter count"))
    if seconds is not None:
        _check_names("seconds", seconds, names)
        bars.append((seconds, "seconds", "{:.1f} s", "training wall time"))
    fig, axes = plt.subplots(1, 1 + len(bars), figsize=(7.5 + 2.6 * len(bars), 3.8), layout="constrained",
                             gridspec_kw={"width_ratios": [2.6] + [1] * len(bars)}, squeeze=False)
    loss_ax, *bar_axes = axes[0]
    colors = [f"C{index}" for index in range(len(names))]
    for name, color in zip(names, colors):
        if len(runs[name]) != 2:
            raise ValueError(f"run {name!r} must be a pair (train_losses, test_losses), got {len(runs[name])} items")
        train, test = (_as_numpy(curve, float) for curve in runs[name])
        loss_ax.plot(np.arange(1, len(train) + 1), train, color=color, label=f"{name}: training")
        if len(test):
            loss_ax.plot(np.arange(1, len(test) + 1), test, color=color, ls="--",
                         label=f"{name}: {val_label} (last {test[-1]:.4f})")
    loss_ax.set_yscale("log")
    loss_ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    loss_ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    loss_ax.yaxis.set_minor_formatter(NullFormatter())
    loss_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    loss_ax.set_xlabel("epoch")
    loss_ax.set_ylabel("loss (log scale)")
    title = f"training and {val_label} losses"
    if parameters is not None and len(set(parameters.values())) == 1:
        title += f" (each model: {next(iter(parameters.values())):,} parameters)"
    loss_ax.set_title(title, fontsize=10)
    loss_ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    positions = np.arange(len(names))
    for ax, (values, label, fmt, ax_title) in zip(bar_axes, bars):
        heights = [values[name] for name in names]
        drawn = ax.bar(positions, heights, color=colors)
        ax.bar_label(drawn, labels=[fmt.format(h) for h in heights], fontsize=8)
        ax.set_xticks(positions, names, fontsize=8)
        ax.set_ylabel(label)
        ax.margins(y=0.15)
        ax.set_title(ax_title, fontsize=10)
    return fig


def timing_bars(seconds, title="time per call", unit="ms"):
    """Horizontal bars, one per measured path: ``seconds`` maps a label to a time in seconds.

    Each bar is labelled with its time in ``unit`` (``"s"``, ``"ms"`` or ``"µs"``) and its
    ratio to the fastest path. Returns the Figure.
    """
    scales = {"s": 1.0, "ms": 1e3, "µs": 1e6}
    check_choice("unit", unit, scales)
    check_instance("seconds", seconds, dict, "a dict of label -> seconds")
    if not seconds:
        raise ValueError("seconds must be a non-empty dict of label -> seconds, got an empty dict")
    times = np.asarray(list(seconds.values()), dtype=float)
    if not np.all(times > 0):
        raise ValueError(f"seconds must hold positive times, got {seconds}")
    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.5 * len(times)), layout="constrained")
    positions = np.arange(len(times))
    bars = ax.barh(positions, times * scales[unit], color=[f"C{i}" for i in range(len(times))])
    ax.bar_label(bars, labels=[f"{t * scales[unit]:.2f} {unit} (×{t / times.min():.1f})" for t in times],
                 fontsize=8, padding=3)
    ax.set_yticks(positions, list(seconds))
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    ax.margins(x=0.3)
    ax.set_title(title)
    return fig
