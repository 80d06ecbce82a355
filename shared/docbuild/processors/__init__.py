"""One processor per source format, chosen by file extension."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from docbuild.config import JsonlConfig
from docbuild.documents import Document, FileProblem
from docbuild.processors.jsonl import JsonlProcessor
from docbuild.processors.markdown import MarkdownProcessor
from docbuild.processors.mdx import MdxProcessor
from docbuild.processors.pdf import PdfProcessor

EXTENSIONS: dict[str, str] = {
    ".md": "md",
    ".markdown": "md",
    ".mdx": "mdx",
    ".pdf": "pdf",
    ".jsonl": "jsonl",
}

DEFAULT_PATTERNS: dict[str, list[str]] = {
    "md": ["**/*.md", "**/*.markdown"],
    "mdx": ["**/*.mdx", "**/*.md"],
    "pdf": ["**/*.pdf"],
    "jsonl": ["**/*.jsonl"],
    "auto": ["**/*.md", "**/*.markdown", "**/*.mdx", "**/*.pdf", "**/*.jsonl"],
}
FORMATS = tuple(DEFAULT_PATTERNS)


class Processor(Protocol):
    """Turns one file into documents, reporting what needed care."""

    format: str

    def process(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]: ...


def processor_for(path: Path, url_base: str | None, jsonl: JsonlConfig | None = None) -> Processor:
    """Return the processor for ``path`` by its extension."""
    kind = EXTENSIONS.get(path.suffix.lower())
    if kind == "md":
        return MarkdownProcessor(url_base)
    if kind == "mdx":
        return MdxProcessor(url_base)
    if kind == "pdf":
        return PdfProcessor(url_base)
    if kind == "jsonl":
        return JsonlProcessor(url_base, jsonl)
    raise ValueError(
        f"no processor for {path.suffix or 'files without an extension'} ({path.name})"
    )
