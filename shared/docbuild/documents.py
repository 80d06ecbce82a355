"""The document model shared by every reader: what a reader makes of a file (:class:`Page`), the
:class:`Document` every stage sees (made by :func:`wrap`), and the report of files that needed
care."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


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
class Page:
    """What a reader makes of one document of a file, before :func:`wrap` turns it into the
    :class:`Document` every stage sees."""

    sections: list[Section]
    title: str | None = None  # its own title; None: one is made from the file name
    url: str | None = None
    description: str | None = None  # a one-line summary (front matter, a module synopsis)
    metadata: dict[str, object] = field(default_factory=dict)
    dependencies: Iterable[str] = ()  # other files read (includes), absolute
    document_id: str | None = None  # None: the file's path (a JSONL record has its own id)


def wrap(page: Page, relative: str) -> Document:
    """The document every stage sees for ``page``, read from the file at ``relative``: a title
    (made from the file name when the page has none), the description kept as the opening's
    first paragraph, an id, and the files it was read from, each once."""
    title = page.title or title_from_path(relative)
    return Document(
        page.document_id or relative,
        relative,
        title,
        with_description(page.sections, title, page.description),
        page.url,
        page.metadata,
        title_from_path=not page.title,
        dependencies=list(dict.fromkeys(page.dependencies)),
    )


def title_from_path(relative: str) -> str:
    """A readable title from a file name: ``decorators/always-inline.mdx`` → ``Always inline``."""
    stem = Path(relative).stem
    if stem in {"index", "_index", "README"}:
        stem = Path(relative).parent.name or stem
    return stem.replace("-", " ").replace("_", " ").strip().capitalize()


@dataclass
class FileProblem:
    """A file that was skipped (``skipped=True``) or parsed best-effort, with the reason."""

    path: str
    reason: str
    skipped: bool = True


class SkipFile(Exception):
    """Raised by a reader when a file cannot be used at all.

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
