"""Reading a page in order: its heading tree from the chunks' breadcrumbs, and one section's chunks.

Every chunk carries its full breadcrumb, so the tree is the distinct breadcrumb prefixes in order
of first appearance; a section's chunks are those whose breadcrumb starts with its path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .catalog import FilterError, words


@dataclass
class HeadingSpan:
    """One heading of a page and the chunks under it (its subsections included)."""

    heading: str
    level: int  # 1 for the top heading of the breadcrumb
    path: list[str]  # the headings leading to it, itself included
    first_chunk: int
    last_chunk: int
    url: str | None


def sections_of(rows: list[dict[str, Any]]) -> list[HeadingSpan]:
    """The heading tree of a page from its chunks (in reading order), outermost first."""
    found: dict[tuple[str, ...], HeadingSpan] = {}
    for row in rows:
        hierarchy = tuple(h for h in row["section_hierarchy"] or [] if h)
        for depth in range(1, len(hierarchy) + 1):
            key = hierarchy[:depth]
            section = found.get(key)
            if section is None:
                url = row["section_url"] if depth == len(hierarchy) else None
                found[key] = HeadingSpan(
                    key[-1], depth, list(key), row["chunk_index"], row["chunk_index"], url
                )
            else:
                section.last_chunk = max(section.last_chunk, row["chunk_index"])
                if depth == len(hierarchy) and section.url is None:
                    section.url = row["section_url"]
    return list(found.values())


def find_section(sections: list[HeadingSpan], wanted: str) -> tuple[HeadingSpan, list[HeadingSpan]]:
    """The section ``wanted`` names (a heading, case-insensitive, or words in it; ``A > B`` for a
    path), and the other sections that matched as well."""
    target = [part.strip().lower() for part in wanted.replace("›", ">").split(">") if part.strip()]
    if not target:
        raise FilterError("section is empty: pass a heading of the page (see outline)")

    def exact(section: HeadingSpan) -> bool:
        tail = [h.lower() for h in section.path[-len(target) :]]
        return tail == target

    def loose(section: HeadingSpan) -> bool:
        return set(words(" ".join(target))) <= set(words(section.heading))

    for test in (exact, loose):
        matches = [s for s in sections if test(s)]
        if matches:
            return matches[0], matches[1:]
    headings = ", ".join(repr(s.heading) for s in sections[:15])
    more = f" and {len(sections) - 15} more" if len(sections) > 15 else ""
    raise FilterError(f"no heading matches {wanted!r}; this page's headings: {headings}{more}")


@dataclass
class DocumentInfo:
    """A document in a listing."""

    path: str
    title: str
    version: str | None
    url: str | None
    sections: int
    chunks: int


@dataclass
class OutlineAnswer:
    """``outline``: the documents (paged), or one page's heading tree."""

    version: str | None  # the version listed; None: every version (or none labelled)
    documents: list[DocumentInfo]  # the listing (empty for one page)
    total: int  # documents matching, or sections of the page
    offset: int
    next_offset: int | None  # where the listing continues (None: nothing left)
    path: str | None = None  # one page: its path, title, URL and heading tree
    title: str | None = None
    url: str | None = None
    sections: list[HeadingSpan] | None = None


@dataclass
class DocumentAnswer:
    """``get_document``: a page, or one section of it, in reading order."""

    path: str
    title: str
    version: str | None
    url: str | None
    section: list[str] | None  # the headings leading to the section read (None: the whole page)
    content: str
    chunk_range: list[int]  # first and last chunk_index included
    offset: int  # chunks of the page (or section) skipped before this part
    next_offset: int | None  # pass as offset to read on (None: this is the end)
    total_chunks: int  # chunks in the page (or section)
