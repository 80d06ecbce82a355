"""One processor per source format, chosen by file extension."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from docbuild.documents import Document, FileProblem

if TYPE_CHECKING:
    from docbuild.config import ProcessingConfig

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
"""File extension → format. Other files reach a processor only through ``include`` patterns:
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


class Processor(Protocol):
    """Turns one file into documents, reporting what needed care."""

    format: str

    def process(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]: ...


def format_of(path: Path, configured: str = "auto") -> str | None:
    """The format ``path`` is read as: by extension, else the configured format (not ``auto``)."""
    return EXTENSIONS.get(path.suffix.lower()) or (None if configured == "auto" else configured)


def processor_for(path: Path, config: ProcessingConfig | None = None) -> Processor:
    """Return the processor for ``path`` (by its extension) set up from the build's config."""
    from docbuild.config import ProcessingConfig, SourceConfig

    config = config or ProcessingConfig("", Path(), SourceConfig(Path()))
    kind = format_of(path, config.format)
    url_base, suffix = config.url_base, config.url_suffix
    if kind == "md":
        from docbuild.processors.markdown import MarkdownProcessor

        return MarkdownProcessor(url_base, suffix)
    if kind == "mdx":
        from docbuild.processors.mdx import MdxProcessor

        return MdxProcessor(url_base, suffix)
    if kind == "pdf":
        from docbuild.processors.pdf import PdfProcessor

        return PdfProcessor(url_base)
    if kind == "jsonl":
        from docbuild.processors.jsonl import JsonlProcessor

        return JsonlProcessor(url_base, config.jsonl)
    if kind == "html":
        from docbuild.processors.html import HtmlProcessor

        return HtmlProcessor(url_base, config.html.skip_index_pages)
    if kind == "rst":
        from docbuild.processors.rst import RstProcessor

        return RstProcessor(url_base, suffix)
    if kind == "asciidoc":
        from docbuild.processors.asciidoc import AsciidocProcessor

        return AsciidocProcessor(url_base, suffix)
    if kind == "notebook":
        from docbuild.processors.notebook import NotebookProcessor

        return NotebookProcessor(url_base, suffix)
    raise ValueError(
        f"no processor for {path.suffix or 'files without an extension'} ({path.name}): "
        f"set format to one of {', '.join(f for f in FORMATS if f != 'auto')} to read it"
    )
