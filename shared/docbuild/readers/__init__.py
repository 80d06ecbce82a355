"""One reader per source format, found by file extension or ``format`` name in :data:`READERS`.

A reader turns one file into :class:`~docbuild.documents.Page` s and wraps each with
:func:`~docbuild.documents.wrap` into the document every stage sees; :func:`read_file` is
what the parse stage calls.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from docbuild.documents import Document, FileProblem
from docbuild.formats import FORMATS, format_of

if TYPE_CHECKING:
    from docbuild.config import ProcessingConfig


class Reader(Protocol):
    """Turns one file into documents, reporting what needed care; raises
    :class:`~docbuild.documents.SkipFile` for a file it cannot use at all."""

    format: str

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]: ...


READERS: dict[str, str] = {
    "md": "markdown:MarkdownReader",
    "mdx": "mdx:MdxReader",
    "pdf": "pdf:PdfReader",
    "jsonl": "jsonl:JsonlReader",
    "html": "html:HtmlReader",
    "rst": "rst:RstReader",
    "asciidoc": "asciidoc:AsciidocReader",
    "notebook": "notebook:NotebookReader",
}
"""Format name → ``module:class`` of its reader in this package (imported when first needed,
so a build loads only the parsers its sources use)."""


def reader_for(path: Path, config: ProcessingConfig | None = None) -> Reader:
    """The reader for ``path`` (by its extension, else the configured format), set up from the
    build's config."""
    from docbuild.config import ProcessingConfig, SourceConfig

    config = config or ProcessingConfig("", Path(), SourceConfig(Path()))
    kind = format_of(path, config.format)
    if kind not in READERS:
        raise ValueError(
            f"no reader for {path.suffix or 'files without an extension'} ({path.name}): "
            f"set format to one of {', '.join(f for f in FORMATS if f != 'auto')} to read it"
        )
    module, name = READERS[kind].split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name).from_config(config)


def read_file(
    path: Path, relative: str, config: ProcessingConfig | None = None
) -> tuple[list[Document], list[FileProblem]]:
    """The documents of one source file and what needed care in reading it."""
    return reader_for(path, config).read(path, relative)
