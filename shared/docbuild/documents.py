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


def with_description(sections: list[Section], title: str, description: str | None) -> list[Section]:
    """``sections`` with the page's one-line description (front matter, a module synopsis) as
    the first paragraph of its opening (after the title's heading line), unless the opening
    already says it.

    A description often says what a page is for in words its body never uses ("truncating it
    to a maximum length without cutting words" for ``strings.Truncate``): kept, it is read,
    embedded and indexed with the page.
    """
    description = " ".join((description or "").split())
    if not description or any(description in " ".join(s.text.split()) for s in sections[:1]):
        return sections
    if not sections or sections[0].hierarchy != [title] or sections[0].page is not None:
        return [Section([title], description), *sections]
    first = sections[0]
    heading, _, body = first.text.partition("\n")
    if not heading.startswith("#"):  # no heading line of its own to keep first
        heading, body = "", first.text
    text = "\n\n".join(part for part in (heading, description, body.strip("\n")) if part)
    return [Section(first.hierarchy, text, first.anchor), *sections[1:]]
