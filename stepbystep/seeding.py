"""Seeds and random states: set every generator at once, snapshot them, put them back.

Training is reproducible only when every random stream is under control: PyTorch's (CPU and
each accelerator), NumPy's legacy global generator, Python's ``random`` and, when a DataLoader
shuffles with its own ``torch.Generator``, that generator too. The snapshots here hold only
tensors, lists and numbers, so they fit in a checkpoint loaded with ``weights_only=True``.
"""
import random

import numpy as np
import torch

from .checks import check_non_negative_int

__all__ = ["set_seed", "get_rng_state", "set_rng_state", "loader_generator"]


def loader_generator(loader):
    """The ``torch.Generator`` a DataLoader shuffles with, or ``None`` when it uses the global one."""
    if loader is None:
        return None
    generator = getattr(loader, "generator", None)
    if generator is None:
        generator = getattr(getattr(loader, "sampler", None), "generator", None)
    return generator


def set_seed(seed=42, loader=None):
    """Seed PyTorch (every device), NumPy, Python and ``loader``'s own generator with ``seed``.

    Also asks cuDNN for deterministic kernels, so seeded runs on a GPU repeat too.
    """
    check_non_negative_int("seed", seed)
    torch.manual_seed(seed)  # seeds the CPU and every CUDA/MPS device
    np.random.seed(seed)
    random.seed(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    generator = loader_generator(loader)
    if generator is not None:
        generator.manual_seed(seed)


def _numpy_state():
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}


def _set_numpy_state(state):
    keys = state["keys"].cpu().numpy().astype(np.uint32)
    np.random.set_state((state["kind"], keys, state["pos"], state["has_gauss"], state["cached_gaussian"]))


def _python_state():
    version, internal, gauss = random.getstate()
    return {"version": version, "internal": list(internal), "gauss": gauss}


def _set_python_state(state):
    random.setstate((state["version"], tuple(state["internal"]), state["gauss"]))


def get_rng_state(loader=None):
    """Snapshot every random state (see the module docstring) as a checkpoint-safe dict."""
    state = {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "mps": torch.mps.get_rng_state() if torch.backends.mps.is_available() else None,
        "numpy": _numpy_state(),
        "python": _python_state(),
        "loader": None,
    }
    generator = loader_generator(loader)
    if generator is not None:
        state["loader"] = generator.get_state()
    return state


def set_rng_state(state, loader=None):
    """Put back a snapshot from ``get_rng_state`` (states of absent devices are skipped)."""
    torch.set_rng_state(state["torch"].cpu())
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
    if state["mps"] is not None and torch.backends.mps.is_available():
        torch.mps.set_rng_state(state["mps"].cpu())
    _set_numpy_state(state["numpy"])
    _set_python_state(state["python"])
    generator = loader_generator(loader)
    if generator is not None and state["loader"] is not None:
        generator.set_state(state["loader"].cpu())
