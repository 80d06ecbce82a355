"""The rule every reader of a build keeps: nothing is read whose real path (symbolic links and
``..`` resolved) lies outside the source root. A server folder is copied to end users, so a link
out of the source would ship whatever it points at on the maintainer's machine."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from docbuild.documents import FileProblem

OUTSIDE = "outside the source folder (a symbolic link or '..' leads out of it); not read"
DANGLING = "a symbolic link to nothing (dangling); not read"


def source_root(path: Path, relative: str) -> Path:
    """The folder ``relative`` is relative to, given the file's ``path``."""
    root = path
    for _ in PurePosixPath(relative).parts:
        root = root.parent
    return root


def inside(root: Path, target: Path) -> bool:
    """Whether ``target``'s real path lies within ``root``'s (both with links resolved)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(target)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def shown(name: str) -> str:
    """A file name for a report: bytes that are not UTF-8 written as escapes."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def refused_include(relative: str, target: str) -> FileProblem:
    """The report line of an include that leads out of the source folder."""
    return FileProblem(f"{shown(relative)} (includes {shown(target)})", OUTSIDE)
