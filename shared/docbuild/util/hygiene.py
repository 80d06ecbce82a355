"""Chunk quality figures: token lengths, balanced fences, breadcrumbs, and page furniture and
markup that must never reach a chunk, site generators' included (found line by line).

Used by the build summary (share of chunks with furniture, goal 0) and by the reader tests.
Fenced code and inline code spans are not inspected: code may legitimately hold ``----``,
``.. x::`` or ``<div>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from docserve.tokens import TokenCounter

from docbuild.chunker import Chunk, embedded_breadcrumb, fence_balanced
from docbuild.readers.markdown_text import Fence, open_fence

RECOUNT_MARGIN = 8  # chunks this close to the token limit are recounted whole (measure_hygiene)

FURNITURE_LINES = {
    "navigation",
    "previous topic",
    "next topic",
    "quick search",
    "this page",
    "show source",
    "report a bug",
    "table of contents",
    "« previous",
    "next »",
}
"""Whole lines that are site chrome (compared case-insensitively, without trailing ``:``)."""

UNDERLINE = re.compile(r"^(={3,}|-{3,}|~{3,}|\^{3,}|\+{3,})\s*$")
"""A setext title's underline, when it follows a line of text (after a blank line, ``---`` is a
Markdown rule)."""

MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("permalink mark ¶", re.compile("¶")),
    ("raw directive", re.compile(r"^\s*\.\. [\w:-]+::")),
    ("raw role", re.compile(r"(?<![\w`]):(?:py:)?[a-z]+:`")),
    ("docutils message", re.compile(r"System Message|Unknown (directive|interpreted text role)")),
    ("docutils message", re.compile(r"\((?:INFO/1|WARNING/2|ERROR/3|SEVERE/4)\)")),
    ("linkgit macro", re.compile(r"linkgit:")),
    ("include directive", re.compile(r"^include::")),
    # a closing tag, or an opening one with attributes: `<style>` alone is a placeholder in prose
    ("HTML tag", re.compile(r"</(?:div|span|a|p|nav|script|style|table|td|tr|dl|dt|dd)>")),
    ("HTML tag", re.compile(r"<(?:div|span|a|p|nav|script|style|table|td|tr|dl|dt|dd)\s+\w+=")),
    ("shortcode", re.compile(r"\{\{[<%]")),
    ("Liquid tag", re.compile(r"\{%-?\s*[a-z]")),
    # not a footnote ("[1]: text", as the reStructuredText reader writes them)
    ("link reference definition", re.compile(r"^ {0,3}\[(?!\^?\d+\])[^\]]+\]:\s*\S")),
    ("glossary link", re.compile(r"\]\(g\)")),
]
TRIGGERS = ("¶", ".. ", ":`", "System Message", "Unknown ", "/1)", "/2)", "/3)", "/4)", "linkgit:")
TRIGGERS += ("include::", "<", "===", "---", "~~~", "^^^", "+++", "{{", "{%", "]:", "](g)")
"""Strings every marker, underline or chrome line holds one of: a text with none is clean, and
most chunks are found clean this way without being read line by line."""

INLINE_CODE = re.compile(r"(?<!:)(`+).+?\1")  # not a raw role's `target`


def furniture(text: str) -> list[str]:
    """The kinds of furniture found in ``text`` (empty when it is clean)."""
    found: list[str] = []
    lowered = text.lower()
    if not any(t in text for t in TRIGGERS) and not any(c in lowered for c in FURNITURE_LINES):
        return found
    fence: Fence | None = None
    previous = ""
    for number, line in enumerate(text.split("\n")):
        if fence is not None:
            fence = None if fence.closes(line) else fence
            continue
        fence = open_fence(line, number)
        if fence is not None:
            continue
        if line.strip().rstrip(":").lower() in FURNITURE_LINES:
            found.append(f"site chrome {line.strip()!r}")
        if UNDERLINE.match(line) and previous.strip() and not previous.lstrip().startswith("|"):
            found.append("setext underline")
        prose = INLINE_CODE.sub("", line)  # documentation may show `<script>` or `:func:` as code
        found.extend(kind for kind, pattern in MARKERS if pattern.search(prose))
        previous = line
    return found


@dataclass
class Hygiene:
    """Chunk quality figures the build reports and the tests assert."""

    chunks: int
    unbalanced_fences: int
    with_hierarchy: int
    max_tokens: int
    over_limit: int
    token_limit: int
    with_furniture: int = 0  # chunks holding page furniture or raw markup (docbuild.util.hygiene)

    @property
    def furniture_share(self) -> float:
        """Share of chunks with page furniture or raw markup in their content."""
        return self.with_furniture / self.chunks if self.chunks else 0.0

    @property
    def hierarchy_share(self) -> float:
        """Share of chunks with a non-empty ``section_hierarchy``."""
        return self.with_hierarchy / self.chunks if self.chunks else 0.0

    def __add__(self, other: Hygiene) -> Hygiene:
        """The figures of both sets of chunks together."""
        return Hygiene(
            chunks=self.chunks + other.chunks,
            unbalanced_fences=self.unbalanced_fences + other.unbalanced_fences,
            with_hierarchy=self.with_hierarchy + other.with_hierarchy,
            max_tokens=max(self.max_tokens, other.max_tokens),
            over_limit=self.over_limit + other.over_limit,
            token_limit=self.token_limit,
            with_furniture=self.with_furniture + other.with_furniture,
        )


def measure_hygiene(chunks: list[Chunk], counter: TokenCounter, limit: int) -> Hygiene:
    """Count unbalanced fences, breadcrumb coverage and token lengths (special tokens included).

    A chunk's length is the chunker's count of its content plus its breadcrumb's (exact for a
    tokenizer that splits at whitespace first, as MiniLM's does). Chunks within
    :data:`RECOUNT_MARGIN` tokens of the limit, which a wrong count could push over it, are
    counted again whole, so a chunk the model would truncate is always reported.
    """
    crumbs = [" > ".join(embedded_breadcrumb(c.section_hierarchy, c)) for c in chunks]
    distinct = list(dict.fromkeys(c for c in crumbs if c))
    crumb_tokens = dict(zip(distinct, counter(distinct), strict=True)) if distinct else {}
    lengths = [
        c.token_count + crumb_tokens.get(crumb, 0) + 2
        for c, crumb in zip(chunks, crumbs, strict=True)
    ]
    near = [i for i, n in enumerate(lengths) if n > limit - RECOUNT_MARGIN]
    for i, n in zip(near, counter([chunks[i].embedding_text for i in near]), strict=True):
        lengths[i] = n + 2
    return Hygiene(
        chunks=len(chunks),
        unbalanced_fences=sum(not fence_balanced(c.content) for c in chunks),
        with_hierarchy=sum(bool(c.section_hierarchy) for c in chunks),
        max_tokens=max(lengths, default=0),
        over_limit=sum(n > limit for n in lengths),
        token_limit=limit,
        with_furniture=sum(bool(furniture(c.content)) for c in chunks),
    )
