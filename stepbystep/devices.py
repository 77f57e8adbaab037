"""Where and how a model runs: picking a device, moving whole batches onto it, evaluating."""
import os
from contextlib import contextmanager

import torch
from torch import nn

from .checks import check_instance, check_positive_int
from .containers import map_structure

__all__ = ["default_device", "as_device", "model_device", "model_dtype", "move_to", "evaluating", "torch_threads",
           "usable_cores", "environment"]


def default_device():
    """The best device available: CUDA, then Apple's MPS, then the CPU."""
    if torch.cuda.is_available():
        return as_device("cuda")
    if torch.backends.mps.is_available():
        return as_device("mps")
    return torch.device("cpu")


def as_device(device):
    """``device`` (``'cuda'``, ``'cuda:1'``, ``0``, a ``torch.device``) as the ``torch.device`` a tensor put
    there reports: with its index (``cuda`` -> ``cuda:<current>``, ``mps`` -> ``mps:0``), so it compares
    equal to ``model_device`` and ``tensor.device``; the CPU has none."""
    device = torch.device(device)
    if device.index is None and device.type == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    if device.index is None and device.type == "mps":
        return torch.device("mps", 0)
    return device


def model_device(model):
    """The device ``model``'s parameters and buffers live on (the CPU for a model with neither).

    Its inputs must go there: a module's ``forward`` does not move them, so a helper that
    takes a model and data calls ``move_to(data, model_device(model))`` first, as the trainer does.
    """
    check_instance("model", model, nn.Module, "an nn.Module")
    devices = {t.device for t in (*model.parameters(), *model.buffers())}
    if len(devices) > 1:
        raise ValueError(f"model must live on one device, got tensors on {sorted(map(str, devices))}")
    return devices.pop() if devices else torch.device("cpu")


def model_dtype(model):
    """The dtype of ``model``'s float parameters, which its float inputs must have (None: no float parameters)."""
    check_instance("model", model, nn.Module, "an nn.Module")
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), None)


def move_to(batch, device):
    """Move every tensor in ``batch`` to ``device``, keeping the nesting and the dtypes.

    Tuples (named ones included), lists and dicts are walked recursively; anything that is not a
    tensor (an int, a string, ``None``) is passed through untouched.
    """
    return map_structure(lambda leaf: leaf.to(device) if isinstance(leaf, torch.Tensor) else leaf, batch)


@contextmanager
def evaluating(model):
    """Run the ``with`` block with ``model`` in eval mode and gradients off, then put it back.

    Dropout is off and batch norm uses its running statistics inside the block. On leaving
    (even through an error) every submodule gets back the mode it had, so a model that was
    training, or one with a frozen submodule kept in eval mode, continues as it was. Unlike
    ``torch.inference_mode``, the outputs are ordinary tensors that later code may use freely.
    """
    check_instance("model", model, nn.Module, "an nn.Module")
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for module, training in modes:
            module.training = training


@contextmanager
def torch_threads(n_threads):
    """Run the ``with`` block with PyTorch on ``n_threads`` threads (``None``: as it is), then restore
    the count: tiny tensors only wait for each other across busy cores, and timings compare on one."""
    if n_threads is not None:
        check_positive_int("n_threads", n_threads)
    before = torch.get_num_threads()
    torch.set_num_threads(n_threads or before)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def usable_cores():
    """How many logical CPUs this process may run on: its CPU affinity where the system reports one, else
    every logical CPU. PyTorch's own default counts physical cores: half this on a processor that runs two
    threads per core."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def environment():
    """What the numbers depend on besides the seed: the torch release, the device, the CPU's kernels, threads."""
    return {"torch": torch.__version__, "device": "cuda" if torch.cuda.is_available() else "cpu",
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}
