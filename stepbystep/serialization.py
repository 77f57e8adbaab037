"""Writing checkpoints atomically and reading them back without running anyone's code."""
import io
import os
import pickle
import pickletools
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import torch

__all__ = ["atomic_save", "safe_load"]


def atomic_save(obj, path):
    """``torch.save`` ``obj`` to ``path`` through a temporary file renamed into place.

    A crash or an error mid-write leaves any previous file at ``path`` intact and no temporary
    file behind: the rename is the only step that touches ``path``, and it is atomic. A file
    already at ``path`` is replaced; a file where a folder of ``path`` should be is a ValueError.
    The file gets the permissions ``torch.save`` would give it (the process's umask), not the
    owner-only ones of a temporary file.
    """
    path = Path(path)
    blocking = next((parent for parent in path.parents if parent.exists() and not parent.is_dir()), None)
    if blocking is not None:
        raise ValueError(f"cannot save to {str(path)!r}: {str(blocking)!r} is a file, not a folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save(obj, file)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask():
    """The process's file-creation mask (reading it means setting it, so set it straight back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
    ``pickle.UnpicklingError``. A file that is no ``torch.save`` file at all (empty, truncated,
    text, a NumPy array...) raises a ``ValueError`` naming it and what it looks like.
    """
    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(f"no checkpoint at {str(path)!r}: it is a directory; give the checkpoint file's path")
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {str(path)!r}")
    try:
        with torch.serialization.safe_globals(_NUMPY_SCALAR_GLOBALS):
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        if _refused_as_code(path):
            raise pickle.UnpicklingError(
                f"refusing to load {str(path)!r}: it holds objects other than tensors, numbers, "
                f"strings and containers, and loading those could run code ({error})"
            ) from error
        raise _not_a_checkpoint(path, error) from error
    except (RuntimeError, OSError, EOFError, KeyError, IndexError, ValueError, AttributeError) as error:
        raise _not_a_checkpoint(path, error) from error


# torch.save's older format: five pickles (this magic number first, then the protocol version, the
# system's sizes, the object, the storage keys) and the storages' bytes
_LEGACY_MAGIC = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2)[:-1]  # without STOP


def _refused_as_code(path):
    """Whether ``torch.load``'s refusal of ``path`` is one of code, judged from the file's structure
    without running it: a torch.save file (zip with one ``data.pkl``, or the older format's five
    pickles) whose pickles are whole, or a plain pickle that imports or calls something. A truncated
    or damaged file, or a plain pickle of data, is no checkpoint rather than a danger."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            entries = [name for name in archive.namelist() if name.endswith("data.pkl")]
            try:
                return len(entries) == 1 and _opcodes(io.BytesIO(archive.read(entries[0])), 1) is not None
            except (zipfile.BadZipFile, OSError, EOFError):
                return False
    with open(path, "rb") as file:
        stream = io.BytesIO(file.read())
    if stream.getvalue().startswith(_LEGACY_MAGIC):
        return _opcodes(stream, 5) is not None
    return bool((_opcodes(stream, 1) or set()) & _CODE_OPCODES)


_CODE_OPCODES = {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "NEWOBJ", "NEWOBJ_EX", "BUILD", "EXT1", "EXT2", "EXT4"}


def _opcodes(stream, count):
    """The names of the opcodes in the next ``count`` pickles of ``stream``, read without running
    them; None where the data stops before a pickle's end (or holds no pickle)."""
    names = set()
    try:
        for _ in range(count):
            names.update(opcode.name for opcode, _, _ in pickletools.genops(stream))
    except ValueError:
        return None
    return names


def _not_a_checkpoint(path, error):  # error: torch.load's, chained by the caller
    """A ``ValueError`` saying that ``path`` is no ``torch.save`` file, and what it looks like."""
    with open(path, "rb") as file:
        head = file.read(len(_LEGACY_MAGIC))
    if not head:
        looks = "it is empty (0 bytes)"
    elif head.startswith(b"\x93NUMPY"):
        looks = "it is a NumPy .npy file (read it with numpy.load)"
    elif head.startswith(b"PK"):
        looks = "it is a damaged or truncated torch.save file (an interrupted copy or download?)"
    elif head == _LEGACY_MAGIC:
        looks = "it is a damaged or truncated torch.save file, in PyTorch's older format (an interrupted copy?)"
    elif head.startswith(b"\x80"):
        looks = "it is a plain pickle, not a torch.save file"
    else:
        looks = f"it is not in torch.save's format (it starts with {head[:8]!r})"
    return ValueError(f"{str(path)!r} is not a readable checkpoint: {looks}; expected a file written by "
                      f"save_checkpoint (torch.load said {type(error).__name__})")
