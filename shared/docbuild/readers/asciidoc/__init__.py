"""AsciiDoc (``.adoc``, ``.asciidoc``, ``.asc``): a focused line-oriented reader to Markdown.

asciidoc-py (the implementation git uses) was measured as a library first: about 160 ms a file
on git's documentation, before any HTML to Markdown step, several times the build's budget.

The reader is a package: :mod:`.syntax` (the patterns), :mod:`.preprocess`, :mod:`.blocks` and
:mod:`.inline`; this module makes the document. The preprocessor expands ``include::`` relative to the including file (a missing ``.txt``
target is also looked up as ``.adoc``, the name git's sources have since 2.45; a missing file,
a cycle or nesting deeper than ``MAX_INCLUDE_DEPTH`` is reported with its line and left out),
evaluates ``ifdef``/``ifndef``/``endif`` against the attributes defined so far (``ifeval`` keeps
its content), records ``:name: value`` entries, and drops ``////`` comment blocks and the mail
header of git's how-tos (keeping its ``Abstract``).

The block reader turns titles (``= Title`` and underlined ones: ``=`` level 0, ``-`` 1, ``~`` 2,
``^`` 3, ``+`` 4) into ATX headings, listing, source and literal blocks and indented paragraphs
into fenced code, bulleted, numbered and labeled lists (``term::``) into Markdown lists with
their ``+`` continuations indented under the item, ``[verse]`` into lines kept as they are,
quote blocks into ``>`` quotes, admonitions into ``**Note:** ...``, block titles into a bold
line, and ``|===`` tables into pipe tables (the first row as header). Inline markup becomes
Markdown; macros become their text (``linkgit:git-reset[1]`` → ``git-reset(1)``, ``link:`` and
URL macros → their text, ``<<id,text>>`` → text or the title of section ``id``); images,
comments, passthrough blocks and index terms are dropped; unknown attribute references are kept
as written. No typographic replacements are made (``--`` stays ``--``).

Section anchors are the explicit ``[[id]]`` or the id asciidoc-py's HTML backend generates
(``_options``), so URLs agree with git's HTML pages. A file that another file of the same tree
includes is skipped as a fragment: it is indexed as part of the pages that include it.
"""

from __future__ import annotations

import re
from pathlib import Path

from docbuild.confine import refused_include, source_root
from docbuild.documents import Document, FileProblem, Page, Section, SkipFile, title_from_path, wrap
from docbuild.readers.asciidoc.blocks import BlockReader, Event, Heading
from docbuild.readers.asciidoc.inline import Context, inline, underline_level
from docbuild.readers.asciidoc.preprocess import (
    Preprocessor,
    fragment_includers,
    mail_header,
)
from docbuild.readers.asciidoc.syntax import ATTRIBUTE_LIST, BLOCK_ANCHOR, ONE_LINE_TITLE
from docbuild.readers.markdown_text import merge_heading_only
from docbuild.readers.source import SourceReader
from docbuild.readers.text import read_text


def _anchor_titles(lines: list[str], context: Context) -> dict[str, str]:
    """Titles of the sections that carry an explicit anchor, for ``<<id>>`` references."""
    titles: dict[str, str] = {}
    for n, line in enumerate(lines):
        anchor = BLOCK_ANCHOR.match(line) or re.match(r"^\[#(?P<id>[\w:.-]+)\]$", line)
        if not anchor:
            continue
        k = n + 1
        while k < len(lines) and (ATTRIBUTE_LIST.match(lines[k]) or BLOCK_ANCHOR.match(lines[k])):
            k += 1
        following = lines[k] if k < len(lines) else ""
        one = ONE_LINE_TITLE.match(following)
        if one:
            titles[anchor["id"]] = inline(one["title"], context, plain=True)
        elif k + 1 < len(lines) and underline_level(following, lines[k + 1]) is not None:
            titles[anchor["id"]] = inline(following.strip(), context, plain=True)
    return titles


def summarize(notes: list[str], shown: int = 5) -> str:
    """Best-effort notes of one file as one reason, the first few in full."""
    more = f"; and {len(notes) - shown} more" if len(notes) > shown else ""
    return "; ".join(notes[:shown]) + more


def _promote_title(events: list[Event]) -> str | None:
    """Without a level-0 title, a first title above every other one becomes the page title."""
    first = events[0] if events else None
    if not isinstance(first, Heading):
        return None
    if any(isinstance(e, Heading) and e.level <= first.level for e in events[1:]):
        return None
    events.pop(0)
    return first.text


def build_sections(events: list[Event], title: str, named: bool) -> list[Section]:
    """Sections from blocks and headings; the page title heads the first section."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    blocks: list[str] = [f"# {title}"] if named else []
    anchor: str | None = None

    def flush() -> None:
        text = "\n\n".join(blocks).strip("\n")
        if text.strip():
            sections.append(Section([title, *(t for _, t in stack)], text, anchor))

    for event in events:
        if isinstance(event, Heading):
            flush()
            blocks.clear()
            while stack and stack[-1][0] >= event.level:
                stack.pop()
            stack.append((event.level, event.text))
            anchor = event.anchor
            blocks.append(f"{'#' * min(event.level + 1, 6)} {event.markdown}")
        else:
            blocks.append(event)
    flush()
    return merge_heading_only(sections)


class AsciidocReader(SourceReader):
    """Parse AsciiDoc files (git's documentation among them)."""

    format = "asciidoc"

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read one file (with what it includes); a fragment others include is skipped."""
        root = source_root(path, relative)
        includers = fragment_includers(root, path)
        if includers:
            names = [p.relative_to(root.resolve()).as_posix() for p in includers]
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise SkipFile(f"include fragment (included by {shown})", [str(p) for p in includers])
        return self.parse(read_text(path), relative, path)

    def parse(
        self, text: str, relative: str, path: Path
    ) -> tuple[list[Document], list[FileProblem]]:
        """Parse AsciiDoc ``text`` read from ``path`` (includes resolve next to it)."""
        lines = text.split("\n")
        skip, abstract = mail_header(lines)
        reader = Preprocessor(attributes={}, root=source_root(path, relative))
        reader.read("\n".join([""] * skip + lines[skip:]), path.resolve(), relative)
        reader.finish()
        anchors = _anchor_titles(reader.lines, Context(dict(reader.attributes)))
        context = Context({}, anchors)
        blocks = BlockReader(reader.lines, reader.origins, context)
        events = blocks.parse()
        if blocks.title is None:
            blocks.title = _promote_title(events)
        if abstract:
            events.insert(0, inline(abstract, context))
        title = blocks.title or title_from_path(relative)
        sections = build_sections(events, title, named=blocks.title is not None)
        notes = reader.problems + blocks.problems
        problems = [FileProblem(relative, summarize(notes), skipped=False)] if notes else []
        problems += [refused_include(relative, target) for target in reader.refused]
        url = self.url(relative)
        page = Page(sections, blocks.title, url, dependencies=sorted(reader.dependencies))
        return ([wrap(page, relative)] if sections else []), problems
