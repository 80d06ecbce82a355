"""reStructuredText (Sphinx sources): parsed by docutils, written out as clean Markdown sections.

Sections follow the document's section tree; each section's anchor is its docutils id, the id
Sphinx gives the section in the built HTML. Directives and roles are understood by
:mod:`docbuild.readers.sphinx_rst`; parser notes are reported, never written into the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from docutils import nodes

from docbuild.confine import refused_include, source_root
from docbuild.documents import (
    Document,
    FileProblem,
    Page,
    Section,
    SkipFile,
    title_from_path,
    wrap,
)
from docbuild.readers.markdown_text import code_words, merge_heading_only, pipe_table
from docbuild.readers.source import SourceReader
from docbuild.readers.sphinx_rst import Message, parse
from docbuild.readers.text import read_text

MAX_NOTES = 3
AUTO_ID = re.compile(r"id\d+")
PYTHON = {"python", "python3", "py", "py3", "default"}
UNWRITTEN = {"comment", "pending", "system_message", "raw", "substitution_definition"}
"""Nodes never written: comments, parser messages, raw HTML and the like."""
SKIPPED_BLOCKS = {*UNWRITTEN, "title", "target", "transition", "image", "colspec", "meta"}
"""Blocks not written (titles are written by their parents)."""


def fence(code: str, language: str) -> str:
    """A fenced code block, its fence longer than any backtick run inside."""
    runs = [len(run) for run in re.findall(r"`{3,}", code)]
    marker = "`" * max([3, *(n + 1 for n in runs)])
    body = code.strip("\n")
    return f"{marker}{language}\n{body}\n{marker}"


def indent(marker: str, blocks: list[str]) -> str:
    """A list item: ``marker`` before the first line, the rest aligned under it."""
    pad = " " * len(marker)
    lines = "\n\n".join(blocks).split("\n")
    return "\n".join([marker + lines[0], *(pad + line if line else "" for line in lines[1:])])


def plain(node: nodes.Node) -> str:
    """A node's text on one line (for breadcrumbs)."""
    return " ".join(node.astext().split()).replace("---", "\N{EM DASH}")


def anchor(section: nodes.section) -> str | None:
    """The id Sphinx gives the section's HTML element: its first id, unless that is an automatic
    ``idN`` (the title clashed with a label) and a label's id follows."""
    named = [i for i in section["ids"] if not AUTO_ID.fullmatch(i)]
    return (named or section["ids"] or [None])[0]


class MarkdownWriter:
    """Renders a docutils doctree as Markdown sections."""

    def __init__(self, document: nodes.document) -> None:
        self.document = document
        self.language = "python"  # Sphinx's default highlight language ("default" = python3)
        self.substituting: set[str] = set()

    def sections(self, title: str) -> list[Section]:
        """One section per docutils section; content before the first joins the first."""
        lead = self.blocks(self.document, skip_fields=True)
        top = [child for child in self.document.children if isinstance(child, nodes.section)]
        if not top:
            return [Section([title], "\n\n".join(lead))] if lead else []
        found: list[Section] = []
        for section in top:
            self.section(section, title, [], 1, found, lead)
            lead = []
        return found

    def section(
        self,
        node: nodes.section,
        root: str,
        parents: list[str],
        level: int,
        found: list[Section],
        lead: list[str],
    ) -> None:
        heading = plain(node[0]) if isinstance(node[0], nodes.title) else ""
        crumbs = [*parents, heading] if heading else parents
        hierarchy = crumbs if crumbs[:1] == [root] else [root, *crumbs]
        line = f"{'#' * min(level, 6)} {self.inline(node[0])}"
        text = "\n\n".join([line, *lead, *self.blocks(node)])
        found.append(Section(hierarchy, text, anchor(node)))
        for child in node.children:
            if isinstance(child, nodes.section):
                self.section(child, root, crumbs, level + 1, found, [])

    # Blocks ---------------------------------------------------------------------------------

    def blocks(self, node: nodes.Element, skip_fields: bool = False) -> list[str]:
        """The Markdown blocks of ``node``'s children (sections excluded)."""
        out: list[str] = []
        for child in node.children:
            if isinstance(child, nodes.section) or child.tagname in SKIPPED_BLOCKS:
                continue
            if skip_fields and isinstance(child, nodes.field_list):
                continue  # Sphinx's file-wide metadata (:tocdepth:, :orphan:)
            out.extend(block for block in self.block(child) if block.strip())
        return out

    def block(self, node: nodes.Node) -> list[str]:
        """The Markdown blocks of one node."""
        handler: Callable[[nodes.Node], list[str]] | None = getattr(
            self, f"block_{node.tagname}", None
        )
        if handler is not None:
            return handler(node)
        if isinstance(node, nodes.Text | nodes.TextElement):
            return [self.inline(node)]
        return self.blocks(node) if isinstance(node, nodes.Element) else []

    def block_highlightlang(self, node: nodes.Element) -> list[str]:
        self.language = node["lang"]
        return []

    def block_literal_block(self, node: nodes.Element) -> list[str]:
        code = node.astext()
        language = node.get("language") or self.language
        if language in PYTHON:
            language = "pycon" if code.lstrip().startswith(">>>") else "python"
        return [fence(code, "" if language == "none" else language)]

    def block_doctest_block(self, node: nodes.Element) -> list[str]:
        return [fence(node.astext(), "pycon")]

    def block_math_block(self, node: nodes.Element) -> list[str]:
        return [fence(node.astext(), "math")]

    def block_bullet_list(self, node: nodes.Element) -> list[str]:
        return ["\n".join(indent("- ", self.blocks(item) or [""]) for item in node.children)]

    def block_enumerated_list(self, node: nodes.Element) -> list[str]:
        start = node.get("start", 1)
        items = [
            indent(f"{start + n}. ", self.blocks(item) or [""])
            for n, item in enumerate(node.children)
        ]
        return ["\n".join(items)]

    def block_definition_list(self, node: nodes.Element) -> list[str]:
        out: list[str] = []
        for item in node.children:
            terms = [self.inline(c) for c in item.children if c.tagname in ("term", "classifier")]
            body = [b for c in item.children if c.tagname == "definition" for b in self.blocks(c)]
            head = f"**{' : '.join(terms)}**"
            out.extend([f"{head}\n{body[0]}", *body[1:]] if body else [head])
        return out

    def block_field_list(self, node: nodes.Element) -> list[str]:
        items = []
        for field in node.children:
            name, body = field.children
            items.append(indent("- ", self.labelled(self.inline(name), self.blocks(body))))
        return ["\n".join(items)]

    def block_option_list(self, node: nodes.Element) -> list[str]:
        items = []
        for item in node.children:
            group, description = item.children
            options = ", ".join(code_words(option.astext()) for option in group.children)
            items.append(indent("- ", self.labelled(options, self.blocks(description))))
        return ["\n".join(items)]

    def block_admonition(self, node: nodes.Element) -> list[str]:
        has_title = len(node) and isinstance(node[0], nodes.title)
        label = plain(node[0]) if has_title else node.tagname.capitalize()
        return self.labelled(label, self.blocks(node))

    def labelled(self, label: str, blocks: list[str]) -> list[str]:
        """``label: first paragraph`` then the rest; ``label.`` alone when there is no body."""
        if not blocks:
            return [f"{label}."]
        if blocks[0][:1] in ("`", "-", "|", "*") or blocks[0][:1].isdigit():
            return [f"{label}:", *blocks]
        return [f"{label}: {blocks[0]}", *blocks[1:]]

    def block_footnote(self, node: nodes.Element) -> list[str]:
        label = node[0].astext() if len(node) and isinstance(node[0], nodes.label) else "*"
        return self.labelled(f"[{label}]", self.blocks(node))

    block_citation = block_footnote

    def block_label(self, node: nodes.Element) -> list[str]:
        return []

    def block_line_block(self, node: nodes.Element) -> list[str]:
        lines = [self.inline(line) if isinstance(line, nodes.line) else "" for line in node]
        return ["\n".join(lines)]

    def block_topic(self, node: nodes.Element) -> list[str]:
        if len(node) and isinstance(node[0], nodes.title):
            return [self.inline(node[0]), *self.blocks(node)]
        return self.blocks(node)

    block_sidebar = block_topic

    def block_attribution(self, node: nodes.Element) -> list[str]:
        return [f"\N{EM DASH} {self.inline(node)}"]

    def block_table(self, node: nodes.Element) -> list[str]:
        title = [self.inline(c) for c in node.children if isinstance(c, nodes.title)]
        group = next((c for c in node.children if isinstance(c, nodes.tgroup)), None)
        if group is None:
            return title
        columns = int(group.get("cols", 0)) or 1
        head = [r for c in group.children if isinstance(c, nodes.thead) for r in c.children]
        body = [r for c in group.children if isinstance(c, nodes.tbody) for r in c.children]
        grid = self.grid([*head, *body], columns)
        if not grid:
            return title
        header_rows = max(1, len(head))
        header = [" ".join(filter(None, cells)) for cells in zip(*grid[:header_rows], strict=True)]
        return [*title, pipe_table([header, *grid[header_rows:]])]

    def grid(self, rows: list[nodes.Element], columns: int) -> list[list[str]]:
        """Cell texts row by row, spanned cells left empty."""
        taken: set[tuple[int, int]] = set()
        grid: list[list[str]] = []
        for r, row in enumerate(rows):
            cells = [""] * columns
            col = 0
            for entry in row.children:
                while (r, col) in taken:
                    col += 1
                if col >= len(cells):
                    cells.extend([""] * (col + 1 - len(cells)))
                cells[col] = self.cell(entry)
                wide, tall = entry.get("morecols", 0) + 1, entry.get("morerows", 0) + 1
                taken.update((r + dr, col + dc) for dr in range(tall) for dc in range(wide))
                col += wide
            grid.append(cells[:columns])
        return grid

    def cell(self, entry: nodes.Element) -> str:
        """One table cell on one line, pipes escaped."""
        parts = []
        for child in entry.children:
            if isinstance(child, nodes.literal_block | nodes.doctest_block):
                parts.append(code_words(child.astext()))
            else:
                parts.extend(self.block(child))
        return " ".join(" ".join(parts).split())

    # Inline ---------------------------------------------------------------------------------

    def inline(self, node: nodes.Node) -> str:
        """``node``'s inline content as one line of Markdown."""
        if isinstance(node, nodes.Text):
            return node.astext().replace("\n", " ").replace("---", "\N{EM DASH}")
        tag = node.tagname
        if tag in UNWRITTEN:
            return ""
        if tag in ("literal", "math"):
            return code_words(node.astext())
        if tag == "image":
            return node.get("alt", "")
        if tag in ("footnote_reference", "citation_reference"):
            return f"[{node.astext() or '*'}]"
        if tag == "substitution_reference":
            return self.substitution(node)
        inner = "".join(self.inline(child) for child in node.children)
        stripped = inner.strip()
        if tag in ("emphasis", "title_reference") and stripped:
            return f"*{stripped}*"
        if tag == "strong" and stripped:
            return f"**{stripped}**"
        return " ".join(inner.split()) if isinstance(node, nodes.paragraph | nodes.title) else inner

    def substitution(self, node: nodes.Element) -> str:
        """A substitution's replacement text, or its name when it is not defined here."""
        name = node["refname"]
        known = self.document.substitution_names.get(nodes.fully_normalize_name(name))
        definition = self.document.substitution_defs.get(known) if known else None
        if definition is None or name in self.substituting:
            return node.astext()
        self.substituting.add(name)
        try:
            return "".join(self.inline(child) for child in definition.children)
        finally:
            self.substituting.discard(name)


def best_effort(relative: str, messages: list[Message]) -> list[FileProblem]:
    """At most a few "parsed best-effort" notes for a file's parser messages."""
    problems = []
    for n, (line, text) in enumerate(messages[:MAX_NOTES]):
        where = f"line {line}: " if line else ""
        more = len(messages) - MAX_NOTES
        tail = f" (and {more} more)" if n == MAX_NOTES - 1 and more > 0 else ""
        problems.append(FileProblem(relative, f"parsed best-effort: {where}{text}{tail}", False))
    return problems


def first_title(document: nodes.document) -> str | None:
    """The title of the document's first section."""
    section = next((c for c in document.children if isinstance(c, nodes.section)), None)
    return plain(section[0]) if section is not None and len(section) else None


class RstReader(SourceReader):
    """Parse ``.rst``/``.rest`` files (Sphinx sources in particular)."""

    format = "rst"

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read one file; returns its document and any best-effort notes."""
        text = read_text(path)
        document, messages, context = parse(text, path, source_root(path, relative))
        named = first_title(document)
        title = named or title_from_path(relative)
        sections = merge_heading_only(MarkdownWriter(document).sections(title))
        url = self.url(relative)
        page = Page(sections, named, url, context.synopsis, dependencies=context.dependencies)
        doc = wrap(page, relative)
        if not doc.sections:
            raise SkipFile(
                "no content of its own (table of contents only)"
                if context.has_toctree
                else "no text content"
            )
        refused = [refused_include(relative, target) for target in context.refused]
        return [doc], best_effort(relative, messages) + refused
