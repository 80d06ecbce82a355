"""Site-generator markup in Markdown, read as markdown-it tokens so that it can be translated
rather than leak into the text: Hugo shortcodes (``{{< name args >}}``, ``{{% name %}}``, paired
or not), Liquid tags (``{% name %}`` … ``{% endname %}``), MkDocs admonitions (``!!! note``) and
Docusaurus admonitions (``:::note``).

Block markup becomes a ``markup_block`` token (raw body, for code) or ``markup_open`` /
``markup_close`` around body tokens parsed as Markdown; inline shortcodes become ``markup_inline``
tokens. :mod:`docbuild.readers.commonmark` renders them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline

RAW_BODY = frozenset({"code-toggle", "highlight", "code", "hl", "raw", "verbatim"})
"""Paired markup whose body is code or text kept as it is, not Markdown."""
LIQUID_RAW = frozenset({"highlight", "raw", "code", "codeblock"})
MAX_TAG_LINES = 20  # a tag's arguments may span lines, up to this many


@dataclass
class Markup:
    """One shortcode, Liquid tag or admonition: its name, positional and named arguments."""

    name: str
    args: list[str] = field(default_factory=list)
    named: dict[str, str] = field(default_factory=dict)
    kind: str = "hugo"  # hugo, liquid, mkdocs, docusaurus

    @property
    def first(self) -> str:
        """The first positional argument, or ''."""
        return self.args[0] if self.args else ""


def parse_tag(inner: str, kind: str) -> Markup:
    """``name arg key=value "quoted arg"`` as a :class:`Markup`."""
    try:
        words = shlex.split(inner, posix=True)
    except ValueError:
        words = inner.split()
    name = words[0] if words else ""
    markup = Markup(name.lower(), kind=kind)
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if sep and key.isidentifier():
            markup.named[key] = value
        else:
            markup.args.append(word)
    return markup


@dataclass
class Tag:
    """A tag found at a position: what it is, whether it closes, self-closes, and its end."""

    markup: Markup
    closing: bool
    self_closing: bool
    end: int


OPENERS = (("{{<", ">}}", "hugo"), ("{{%", "%}}", "hugo"), ("{%", "%}", "liquid"))


def read_tag(text: str, pos: int) -> Tag | None:
    """The shortcode or Liquid tag starting at ``text[pos]``, if one does."""
    for opener, closer, kind in OPENERS:
        if not text.startswith(opener, pos):
            continue
        end = text.find(closer, pos + len(opener))
        if end < 0 or "\n" in text[pos:end]:
            return None
        inner = text[pos + len(opener) : end].strip().strip("-").strip()
        if inner.startswith("/*") or not inner:  # {{</* x */>}}: a shortcode shown, not run
            return None
        self_closing = inner.endswith("/")
        inner = inner.rstrip("/").strip()
        closing = inner.startswith("/") or (kind == "liquid" and inner.startswith("end"))
        inner = inner.lstrip("/").strip()
        if kind == "liquid" and closing:
            inner = inner[3:]
        return Tag(parse_tag(inner, kind), closing, self_closing, end + len(closer))
    return None


def only_attributes(rest: str) -> bool:
    """Whether what follows a tag on its line is nothing, or a Goldmark attribute list
    (``{class="wide"}``), which styles the output and says nothing to a reader."""
    rest = rest.strip()
    return not rest or (rest.startswith("{") and rest.endswith("}") and "\n" not in rest)


def _line(state: StateBlock, line: int) -> str:
    start = state.bMarks[line] + state.tShift[line]
    return state.src[start : state.eMarks[line]]


def _find_close(state: StateBlock, start: int, end: int, name: str, kind: str) -> int | None:
    """The line of the tag closing ``name`` (nested ones of the same name counted), if any."""
    depth = 0
    for line in range(start, end):
        text = _line(state, line).strip()
        tag = read_tag(text, 0) if text.startswith("{") else None
        if tag is None or tag.markup.name != name or tag.markup.kind != kind:
            continue
        if tag.closing and tag.end == len(text):
            if depth == 0:
                return line
            depth -= 1
        elif not tag.self_closing:
            depth += 1
    return None


def markup_block(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A line holding only a shortcode or Liquid tag (and, when paired, its body and close)."""
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    text = _line(state, start).strip()
    if not text.startswith("{"):
        return False
    last = start  # a tag may run over several lines: {{< figure\n  src="..."\n>}}
    while read_tag(text, 0) is None and last + 1 < min(end, start + MAX_TAG_LINES):
        if not text.startswith(tuple(opener for opener, _, _ in OPENERS)):
            return False
        last += 1
        text += " " + _line(state, last).strip()
    tag = read_tag(text, 0)
    if tag is None or tag.closing or not only_attributes(text[tag.end :]):
        return False
    if silent:
        return True
    name, kind = tag.markup.name, tag.markup.kind
    close = None if tag.self_closing else _find_close(state, last + 1, end, name, kind)
    if close is None:  # a single tag: rendered on its own
        token = state.push("markup_block", "", 0)
        token.meta = {"markup": tag.markup, "body": None}
        token.map = [start, last + 1]
        state.line = last + 1
        return True
    raw = name in (LIQUID_RAW if kind == "liquid" else RAW_BODY)
    if raw:
        first = state.bMarks[last + 1] if last + 1 < close else state.bMarks[close]
        body = state.src[first : state.bMarks[close]]
        token = state.push("markup_block", "", 0)
        token.meta = {"markup": tag.markup, "body": body}
        token.map = [start, close + 1]
    else:
        token = state.push("markup_open", "", 1)
        token.meta = {"markup": tag.markup}
        token.map = [start, close + 1]
        old_max = state.lineMax
        state.lineMax = close
        state.md.block.tokenize(state, last + 1, close)
        state.lineMax = old_max
        state.push("markup_close", "", -1)
    state.line = close + 1
    return True


def admonition_block(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """MkDocs ``!!! note "Title"`` (and ``???``) with an indented body, or a Docusaurus
    ``:::note Title`` … ``:::`` container."""
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    text = _line(state, start).rstrip()
    if text.startswith(("!!!", "???")):
        kind, inner, fenced = "mkdocs", text[3:].strip().lstrip("+").strip(), False
    elif text.startswith(":::") and text[3:4].isalpha():
        kind, inner, fenced = "docusaurus", text[3:].strip(), True
    else:
        return False
    if silent:
        return True
    words = inner.split(None, 1)
    markup = Markup((words[0] if words else "note").lower(), kind=kind)
    if len(words) > 1:
        markup.named["title"] = words[1].strip().strip('"')
    last = start + 1
    if fenced:
        while last < end and _line(state, last).strip() != ":::":
            last += 1
        body_start, body_end, after = start + 1, last, min(last + 1, end)
        token = state.push("markup_open", "", 1)
        token.meta = {"markup": markup}
        token.map = [start, after]
        old_max = state.lineMax
        state.lineMax = body_end
        state.md.block.tokenize(state, body_start, body_end)
        state.lineMax = old_max
    else:
        while last < end and (state.isEmpty(last) or state.sCount[last] >= state.blkIndent + 4):
            last += 1
        while last > start + 1 and state.isEmpty(last - 1):
            last -= 1
        after = last
        token = state.push("markup_open", "", 1)
        token.meta = {"markup": markup}
        token.map = [start, after]
        old_indent, old_max = state.blkIndent, state.lineMax
        state.blkIndent += 4
        state.lineMax = after
        state.md.block.tokenize(state, start + 1, after)
        state.blkIndent, state.lineMax = old_indent, old_max
    state.push("markup_close", "", -1)
    state.line = after
    return True


def markup_inline(state: StateInline, silent: bool) -> bool:
    """A shortcode or Liquid tag inside a line of text."""
    if state.src[state.pos] != "{":
        return False
    tag = read_tag(state.src, state.pos)
    if tag is None:
        return False
    if not silent:
        token = state.push("markup_inline", "", 0)
        token.meta = {"markup": tag.markup, "closing": tag.closing}
    state.pos = tag.end
    return True


def site_markup_plugin(md: MarkdownIt) -> None:
    """Teach ``md`` shortcodes, Liquid tags and admonitions (see the module doc)."""
    md.block.ruler.before(
        "paragraph", "markup_block", markup_block, {"alt": ["paragraph", "blockquote", "list"]}
    )
    md.block.ruler.before(
        "paragraph", "admonition", admonition_block, {"alt": ["paragraph", "blockquote", "list"]}
    )
    md.inline.ruler.before("text", "markup_inline", markup_inline)
