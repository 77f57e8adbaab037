"""Writing checkpoints atomically and reading them back without running anyone's code."""
import os
import pickle
import tempfile
from pathlib import Path

import numpy as np
import torch

__all__ = ["atomic_save", "safe_load"]


def atomic_save(obj, path):
    """``torch.save`` ``obj`` to ``path`` through a temporary file renamed into place.

    A crash or an error mid-write leaves any previous file at ``path`` intact and no temporary
    file behind: the rename is the only step that touches ``path``, and it is atomic.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save(obj, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# The book's checkpoints store their losses as NumPy float scalars. Unpickling one calls NumPy's
# scalar reconstructor with a dtype; both are allowed, under the reconstructor's NumPy 1 and
# NumPy 2 names, and only for the float dtypes. No other NumPy object (arrays included) is.
_NUMPY_SCALAR = np.float64(0).__reduce__()[0]
_NUMPY_SCALAR_GLOBALS = [
    (_NUMPY_SCALAR, "numpy.core.multiarray.scalar"),
    (_NUMPY_SCALAR, "numpy._core.multiarray.scalar"),
    np.dtype,
    *(type(np.dtype(float_type)) for float_type in (np.float16, np.float32, np.float64)),
]


def safe_load(path, map_location):
    """Load a checkpoint with ``weights_only=True`` onto ``map_location``.

    Only tensors, numbers (NumPy float scalars too), strings and containers of them are
    accepted: a file that would import or call anything else while unpickling is refused with
    ``pickle.UnpicklingError``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {str(path)!r}")
    try:
        with torch.serialization.safe_globals(_NUMPY_SCALAR_GLOBALS):
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        raise pickle.UnpicklingError(
            f"refusing to load {str(path)!r}: it holds objects other than tensors, numbers, "
            f"strings and containers, and loading those could run code ({error})"
        ) from error
