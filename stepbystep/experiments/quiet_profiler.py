"""Running PyTorch's profiler without its library's chatter (chapters 06 and 14 read kernels and
allocations from it)."""
import contextlib
import os
import sys

__all__ = ["quiet_stderr"]


@contextlib.contextmanager
def quiet_stderr():
    """Send the process's stderr (file descriptor 2) to the null device: the profiler's library
    writes a line there each time it starts and stops."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
