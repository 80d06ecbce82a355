"""Helpers for the Markdown every reader writes and the chunker reads: fences, headings and
their anchors, page URLs and titles. Imports nothing else of the project."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from docbuild.documents import Section
from docbuild.links import url_of_path

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
CUSTOM_ID = re.compile(r"\s*\{#([\w-]+)\}\s*$")


HTML_TAGS = frozenset(
    [
        "a",
        "abbr",
        "b",
        "blockquote",
        "br",
        "caption",
        "center",
        "code",
        "col",
        "colgroup",
        "dd",
        "del",
        "details",
        "div",
        "dl",
        "dt",
        "em",
        "figcaption",
        "figure",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "i",
        "iframe",
        "img",
        "input",
        "ins",
        "kbd",
        "label",
        "li",
        "mark",
        "ol",
        "p",
        "picture",
        "pre",
        "s",
        "samp",
        "section",
        "small",
        "source",
        "span",
        "strong",
        "sub",
        "summary",
        "sup",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "u",
        "ul",
        "video",
        "audio",
    ]
)
"""HTML elements: their tags are dropped from Markdown text (a ``<file>`` placeholder is not one)."""


@dataclass
class Fence:
    """An open fenced code block: its marker character and length."""

    char: str
    length: int
    line: int

    def closes(self, line: str) -> bool:
        """True if ``line`` closes this fence."""
        stripped = line.strip()
        return len(stripped) >= self.length and set(stripped) == {self.char}


def open_fence(line: str, number: int) -> Fence | None:
    """Return the fence that ``line`` opens, if it opens one."""
    match = FENCE.match(line)
    if not match:
        return None
    marker = match.group("fence")
    if marker[0] == "`" and "`" in match.group("info"):
        return None  # an inline code span such as ```a``` is not a fence
    return Fence(marker[0], len(marker), number)


def fenced(code: str, language: str = "") -> str:
    """``code`` as a fenced block, its fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def code_span(text: str) -> str:
    """``text`` as inline code, its backtick run longer than any inside it."""
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def code_words(text: str) -> str:
    """``text`` on one line as inline code (nothing for blank text): code quoted in running
    text, where line breaks and runs of spaces are layout."""
    words = " ".join(text.split())
    return code_span(words) if words else ""


ALIGNMENTS = {"left": ":---", "right": "---:", "center": ":---:"}


def pipe_table(rows: list[list[str]], aligns: list[str] | None = None) -> str:
    """Rows of cell text as a Markdown pipe table, the first row its header: each cell on one
    line with its ``|`` escaped, short rows padded; ``aligns`` (``left``, ``right``, ``center``
    or ``""``) per column."""
    width = max(len(row) for row in rows)

    def line(cells: list[str]) -> str:
        cells = [re.sub(r"(?<!\\)\|", r"\\|", c.replace("\n", " ").strip()) for c in cells]
        return "| " + " | ".join(cells + [""] * (width - len(cells))) + " |"

    aligns = [*(aligns or []), *[""] * width][:width]
    rule = "|" + "|".join(ALIGNMENTS.get(a, "---") for a in aligns) + "|"
    return "\n".join([line(rows[0]), rule, *map(line, rows[1:])])


def slugify(heading: str) -> str:
    """GitHub-style anchor for a heading."""
    text = re.sub(r"[`*_~\[\]()]", "", heading.lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r"\s", "-", text.strip())


def plain_heading(text: str) -> tuple[str, str]:
    """Return (heading text without markup or custom id, anchor)."""
    custom = CUSTOM_ID.search(text)
    if custom:
        text = text[: custom.start()]
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).strip()
    anchor = custom.group(1) if custom else slugify(text)
    return text, anchor


def merge_heading_only(sections: list[Section]) -> list[Section]:
    """Fold a section that holds only its heading into the section that follows it."""
    merged: list[Section] = []
    pending: str | None = None
    for section in sections:
        text = f"{pending}\n\n{section.text}" if pending else section.text
        pending = None
        if heading_only(text):
            pending = text.strip()
            continue
        merged.append(Section(section.hierarchy, text, section.anchor, section.page))
    if pending and merged:
        merged[-1].text += f"\n\n{pending}"
    return merged


def heading_only(text: str) -> bool:
    """True when every line of ``text`` that is not blank is a heading; reads only as far as the
    first line that is not (a section's second line, mostly), not the whole text."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line.strip() and not ATX_HEADING.match(line):
            return False
        start = end + 1
    return True


def document_url(
    url_base: str | None, relative: str, metadata: dict[str, object], suffix: str = ""
) -> str | None:
    """The published URL of a page made from a source file (Markdown, reStructuredText, ...).

    ``url_base`` + the path without its extension; with ``suffix`` (``url_suffix`` in the config,
    e.g. ``.html`` for a Sphinx site) that suffix is appended, otherwise ``index`` pages map to
    their folder. A front-matter ``slug`` replaces the file name (or the whole path if absolute).
    """
    if not url_base:
        return None
    slug = metadata.get("slug")
    if isinstance(slug, str) and slug.startswith("/"):
        return url_of_path(url_base, slug)
    stem = (
        str(PurePosixPath(relative).with_suffix(""))
        if "." in PurePosixPath(relative).name
        else relative
    )
    if isinstance(slug, str) and slug:
        stem = f"{stem.rsplit('/', 1)[0]}/{slug}" if "/" in stem else slug
    if suffix:
        return url_of_path(url_base, stem + suffix)
    if stem == "index" or stem.endswith("/index") or stem.endswith("/_index"):
        stem = stem.rsplit("index", 1)[0].rstrip("_").rstrip("/")
    return url_of_path(url_base, stem).rstrip("/")
