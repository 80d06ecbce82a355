"""The document model shared by every processor, and the report of files that needed care."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Section:
    """A run of text under one heading breadcrumb (or one PDF page)."""

    hierarchy: list[str]
    text: str
    anchor: str | None = None
    page: int | None = None


@dataclass
class Document:
    """One source document, split into sections, ready for chunking."""

    document_id: str
    path: str
    title: str
    sections: list[Section]
    url: str | None = None
    metadata: dict[str, object] = field(default_factory=dict)
    title_from_path: bool = False  # made from the file name: shown and searchable, not embedded


@dataclass
class FileProblem:
    """A file that was skipped (``skipped=True``) or parsed best-effort, with the reason."""

    path: str
    reason: str
    skipped: bool = True


class SkipFile(Exception):
    """Raised by a processor when a file cannot be used at all."""
