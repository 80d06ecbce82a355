"""Reading text files safely: empty, binary and non-UTF-8 files are refused with a reason."""

from __future__ import annotations

from pathlib import Path

from docbuild.documents import SkipFile


def read_text(path: Path) -> str:
    """Return the file's text, or raise :class:`SkipFile` saying why it cannot be used."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkipFile(f"cannot read file: {exc.strerror or exc}") from None
    if not data.strip():
        raise SkipFile("empty file")
    if b"\x00" in data[:8192]:
        raise SkipFile("binary file (contains NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(
            f"not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")
