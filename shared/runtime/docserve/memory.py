"""Keep a long-running server's resident memory flat: few malloc arenas, freed memory returned.

glibc gives each thread that allocates its own arena (up to eight per core) and keeps what is
freed in them; a server whose calls run on a pool of worker threads fragments those arenas and
grows for hours. Elsewhere than glibc these calls do nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

M_ARENA_MAX = -8  # mallopt parameter (malloc.h)
ARENAS = 2
TRIM_EVERY = 60.0  # seconds


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def limit_arenas(arenas: int = ARENAS) -> None:
    """Allocate from at most ``arenas`` malloc arenas (call before starting threads)."""
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(AttributeError):
            libc.mallopt(M_ARENA_MAX, arenas)


def release_free_memory() -> None:
    """Hand memory that is free inside malloc's arenas back to the system."""
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(AttributeError):
            libc.malloc_trim(0)


def trim_periodically(every: float = TRIM_EVERY) -> None:
    """Return free memory to the system every ``every`` seconds, on a daemon thread."""

    def loop() -> None:
        while not stop.wait(every):
            release_free_memory()

    stop = threading.Event()
    threading.Thread(target=loop, name="memory trim", daemon=True).start()
