"""The document model shared by every processor, and the report of files that needed care."""

from __future__ import annotations

from collections.abc import Iterable
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
    dependencies: list[str] = field(default_factory=list)  # other files read (includes), absolute
    version: str | None = None  # the documentation version's label; None when unversioned


@dataclass
class FileProblem:
    """A file that was skipped (``skipped=True``) or parsed best-effort, with the reason."""

    path: str
    reason: str
    skipped: bool = True


class SkipFile(Exception):
    """Raised by a processor when a file cannot be used at all.

    ``dependencies`` are other files the decision rests on (say, the page that includes a
    fragment): when one of them changes, the file is read again.
    """

    def __init__(self, reason: str, dependencies: Iterable[str] = ()) -> None:
        super().__init__(reason)
        self.dependencies = list(dependencies)
