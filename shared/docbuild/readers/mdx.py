"""MDX: Markdown plus ESM imports/exports and JSX, removed by a code-aware scanner.

Fenced code blocks and inline code spans are copied verbatim. Outside them a ``<`` starts a
tag only when a complete JSX/HTML tag parses there and follows whitespace or a tag, so
``a < b``, ``x<y`` and ``List<Int>`` in prose or tables survive. Lower-case names are removed
only when they are HTML elements, so placeholders such as ``<file>`` are kept. Admonitions
(``:::note``) become plain text labels.
"""

from __future__ import annotations

import re

from docbuild.readers.markdown import MarkdownReader
from docbuild.readers.markdown_text import HTML_TAGS, Fence, open_fence

BLOCK_TAGS = frozenset(
    [
        "br",
        "div",
        "figure",
        "figcaption",
        "p",
        "table",
        "tr",
        "li",
        "ul",
        "ol",
        "details",
        "summary",
        "section",
        "hr",
        "img",
        "pre",
        "blockquote",
    ]
)
ESM_START = re.compile(r"^(import|export)\s")
ADMONITION = re.compile(r"^(\s*):::\s*(\w+)?\s*(.*)$")
TAG_NAME = re.compile(r"[A-Za-z][\w.:-]*")
ATTR_NAME = re.compile(r"[^\s=/>{}\"'<]+")


def clean_mdx(body: str) -> str:
    """Remove imports, exports, JSX and comments from MDX, keeping code and prose intact."""
    out: list[str] = []
    prose: list[str] = []
    lines = body.split("\n")
    fence: Fence | None = None
    i = 0

    def flush() -> None:
        if prose:
            out.extend(strip_tags("\n".join(prose)).split("\n"))
            prose.clear()

    while i < len(lines):
        line = lines[i]
        if fence is not None:
            out.append(line)
            fence = None if fence.closes(line) else fence
            i += 1
            continue
        fence = open_fence(line, i)
        if fence is not None:
            flush()
            out.append(line)
            i += 1
            continue
        if ESM_START.match(line):
            i = _skip_esm(lines, i)
            continue
        admonition = ADMONITION.match(line)
        if admonition:
            indent, kind, label = admonition.groups()
            if kind:
                prose.append(f"{indent}**{kind.capitalize()}{': ' + label if label else ''}**")
                prose.append("")
            i += 1
            continue
        prose.append(line)
        i += 1
    flush()
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out))


def _skip_esm(lines: list[str], start: int) -> int:
    """Return the index after an import/export statement that may span lines."""
    depth = 0
    i = start
    while i < len(lines):
        line = lines[i]
        depth += line.count("{") + line.count("(") + line.count("[")
        depth -= line.count("}") + line.count(")") + line.count("]")
        i += 1
        ended = line.rstrip().endswith(";") or re.search(r"""\bfrom\s+['"][^'"]+['"]""", line)
        if depth <= 0 and (ended or i >= len(lines) or not lines[i].strip()):
            return i
        if depth <= 0 and not line.rstrip().endswith((",", "{", "(", "=", "=>")):
            nxt = lines[i].lstrip()
            if not nxt.startswith(("from", "}", ")", ".", "+", "-", "?", ":")):
                return i
    return i


def strip_tags(text: str) -> str:
    """Remove JSX/HTML tags and comments from prose, leaving inline code untouched."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            ticks = text[i : i + run]
            close = text.find(ticks, i + run)
            end = close + run if close != -1 else i + run
            out.append(text[i:end])
            i = end
            continue
        if text.startswith("{/*", i):
            close = text.find("*/}", i)
            if close != -1:
                i = close + 3
                continue
        if text.startswith("<!--", i):
            close = text.find("-->", i)
            if close != -1:
                i = close + 3
                continue
        if ch == "<" and _tag_may_start(text, i):
            end, name = parse_tag(text, i)
            if end is not None and _removable(name):
                if name.lower() in BLOCK_TAGS or name[:1].isupper():
                    out.append("\n" if name.lower() in {"br", "p", "li", "tr"} else "")
                i = end
                continue
        out.append(ch)
        i += 1
    cleaned = "".join(out)
    cleaned = re.sub(r"[ \t]+\n", "\n", cleaned)
    return re.sub(r"\n{3,}", "\n\n", cleaned)


def _tag_may_start(text: str, i: int) -> bool:
    """A closing tag may follow anything; an opening tag never follows a word (``List<Int>``)."""
    return i == 0 or text.startswith("</", i) or not (text[i - 1].isalnum() or text[i - 1] in "_$")


def _removable(name: str) -> bool:
    return name == "" or name[:1].isupper() or name.lower() in HTML_TAGS


def parse_tag(text: str, start: int) -> tuple[int | None, str]:
    """Parse a JSX/HTML tag at ``text[start] == '<'``; return (end index, tag name) or (None, '')."""
    i = start + 1
    if text.startswith("/", i):
        i += 1
    if text.startswith(">", i):  # fragment <> or </>
        return i + 1, ""
    name = TAG_NAME.match(text, i)
    if not name:
        return None, ""
    i = name.end()
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if text.startswith("/>", i):
            return i + 2, name.group()
        if text.startswith(">", i):
            return i + 1, name.group()
        if text.startswith("{", i):
            i = _skip_braces(text, i)
            if i < 0:
                return None, ""
            continue
        attr = ATTR_NAME.match(text, i)
        if not attr:
            return None, ""
        i = attr.end()
        if text.startswith("=", i):
            i += 1
            if i < len(text) and text[i] in "\"'":
                close = text.find(text[i], i + 1)
                if close == -1:
                    return None, ""
                i = close + 1
            elif text.startswith("{", i):
                i = _skip_braces(text, i)
                if i < 0:
                    return None, ""
            else:
                value = ATTR_NAME.match(text, i)
                if not value:
                    return None, ""
                i = value.end()
    return None, ""


def _skip_braces(text: str, i: int) -> int:
    """Index after the balanced ``{...}`` at ``i`` (strings respected), or -1."""
    depth = 0
    quote: str | None = None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'`":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


class MdxReader(MarkdownReader):
    """Parse ``.mdx`` files."""

    format = "mdx"

    def clean(self, body: str) -> str:
        """Strip MDX-only syntax before sectioning."""
        return clean_mdx(body)
