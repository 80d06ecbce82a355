"""One build of a server at a time: an OS file lock on ``servers/NAME/build/.lock``.

The lock is held for the whole build (or rollback) and its holder's pid is written inside, so a
second build can say who holds it. The operating system releases the lock when its holder
exits, however it exits, so a build that was killed never blocks the next one. The lock is
``flock`` on Linux and macOS and ``msvcrt.locking`` on Windows (not covered by the tests). It
guards one server folder: clones that share a PostgreSQL catalog each have their own.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = ".lock"
POLL_SECONDS = 0.5  # how often a waiting build tries again
PID_READ_SECONDS = 1.0  # how long to wait for a new holder to write its pid

if sys.platform == "win32":
    import msvcrt

    LOCK_OFFSET = 1 << 20  # locked bytes cannot be read on Windows: lock one past the pid

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class BuildLocked(RuntimeError):
    """Another build of the same server holds the lock."""

    def __init__(self, name: str, pid: int | None) -> None:
        self.pid = pid
        super().__init__(
            f"another build of {name} is running ({_holder(pid)}); wait for it or pass --wait"
        )


def _holder(pid: int | None) -> str:
    return f"pid {pid}" if pid is not None else "pid unknown"


def _read_pid(fd: int) -> int | None:
    """The pid the holder wrote into the lock file (None until it has written one)."""
    deadline = time.monotonic() + PID_READ_SECONDS
    while True:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
        if text.isdigit():
            return int(text)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def _write_pid(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()}\n".encode("ascii"))


@contextmanager
def build_lock(
    work_dir: Path,
    name: str,
    wait: bool = False,
    say: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the build lock of server ``name`` (in ``work_dir``) while the block runs.

    Raises :class:`BuildLocked` at once when another process holds it, unless ``wait``: then
    ``say`` is told who holds it and the lock is taken as soon as that build ends.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(work_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd):
            pid = _read_pid(fd)
            if not wait:
                raise BuildLocked(name, pid)
            if say is not None:
                say(
                    f"another build of {name} is running ({_holder(pid)}); waiting for it to "
                    "finish (Ctrl-C stops)"
                )
            while not _try_lock(fd):
                time.sleep(POLL_SECONDS)
        _write_pid(fd)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # a finished build leaves no pid behind
            _unlock(fd)
    finally:
        os.close(fd)
