"""Page furniture and markup that must never reach a chunk, found line by line.

Used by the build summary (share of chunks with furniture, goal 0) and by the processor tests.
Fenced code and inline code spans are not inspected: code may legitimately hold ``----``,
``.. x::`` or ``<div>``.
"""

from __future__ import annotations

import re

from docbuild.processors.markdown import Fence, open_fence

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
]
TRIGGERS = ("¶", ".. ", ":`", "System Message", "Unknown ", "/1)", "/2)", "/3)", "/4)", "linkgit:")
TRIGGERS += ("include::", "<", "===", "---", "~~~", "^^^", "+++")
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
