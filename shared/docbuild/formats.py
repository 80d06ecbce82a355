"""The source formats: file extensions, format names and the files each reads by default.
Imports nothing else of the project, so that configuration and readers can both use it."""

from __future__ import annotations

from pathlib import Path

EXTENSIONS: dict[str, str] = {
    ".md": "md",
    ".markdown": "md",
    ".mdx": "mdx",
    ".pdf": "pdf",
    ".jsonl": "jsonl",
    ".html": "html",
    ".htm": "html",
    ".rst": "rst",
    ".rest": "rst",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    ".asc": "asciidoc",
    ".ipynb": "notebook",
}
"""File extension → format. Other files reach a reader only through ``include`` patterns:
they are then read as the configured ``format`` (Sphinx's ``.txt`` sources as ``rst``, say)."""


def _patterns(*formats: str) -> list[str]:
    return [f"**/*{ext}" for ext, fmt in EXTENSIONS.items() if fmt in formats]


DEFAULT_PATTERNS: dict[str, list[str]] = {
    "md": _patterns("md"),
    "mdx": _patterns("mdx", "md"),
    "pdf": _patterns("pdf"),
    "jsonl": _patterns("jsonl"),
    "html": _patterns("html"),
    "rst": _patterns("rst"),
    "asciidoc": _patterns("asciidoc"),
    "notebook": _patterns("notebook"),
    "auto": list(map("**/*{}".format, EXTENSIONS)),
}
FORMATS = tuple(DEFAULT_PATTERNS)

SITE_ASSETS = ["**/_static/**", "**/_images/**", "**/_sources/**", "**/_downloads/**"]
"""Folders of a built site that hold assets and page sources, never pages: not crawled."""
DEFAULT_EXCLUDES: dict[str, list[str]] = {"html": SITE_ASSETS, "auto": SITE_ASSETS}


def format_of(path: Path, configured: str = "auto") -> str | None:
    """The format ``path`` is read as: by extension, else the configured format (not ``auto``)."""
    return EXTENSIONS.get(path.suffix.lower()) or (None if configured == "auto" else configured)
