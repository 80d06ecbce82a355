"""One processor per source format, chosen by file extension."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from docbuild.documents import Document, FileProblem
from docbuild.formats import FORMATS, format_of

if TYPE_CHECKING:
    from docbuild.config import ProcessingConfig


class Processor(Protocol):
    """Turns one file into documents, reporting what needed care."""

    format: str

    def process(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]: ...


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
