"""AsciiDoc inline markup to Markdown: quotes, passthroughs, macros, attribute references,
cross references; and the ids asciidoc-py's HTML backend gives section titles."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

import lxml.html

from docbuild.readers.asciidoc.syntax import (
    ANGLE_URL,
    ATTRIBUTE_REF,
    BARE_URL,
    BIBLIO_ANCHOR,
    BLOCK_TITLE,
    BUILTIN_ATTRIBUTES,
    CODE,
    DELIMITER,
    EMAIL,
    EMPHASIS,
    ENTITY,
    ESCAPE,
    FOOTNOTE,
    INDEX_TERM,
    INLINE_ANCHOR,
    INLINE_IMAGE,
    LINKGIT,
    LITERAL,
    NAMED_LINK,
    PASS_MACRO,
    PASS_TRIPLE,
    PLACEHOLDER,
    STRONG,
    UI_MACRO,
    UNDERLINES,
    XREF,
)
from docbuild.readers.markdown_text import code_span


def _constrained(left: str, right: str) -> re.Pattern[str]:
    """asciidoc-py's constrained quote: a word boundary on both sides."""
    lq, rq = re.escape(left), re.escape(right)
    return re.compile(rf"(?s)(?<![\w;:}}])(?:\[[^\[\]]+?\])?{lq}(?P<text>\S|\S.*?\S){rq}(?=\W|$)")


def _unconstrained(mark: str) -> re.Pattern[str]:
    """asciidoc-py's unconstrained quote: anywhere, even inside a word."""
    quoted = re.escape(mark)
    return re.compile(rf"(?s)(?:\[[^\[\]]+?\])?{quoted}(?P<text>.+?){quoted}")


QUOTES: list[tuple[re.Pattern[str], str]] = [
    (_unconstrained("**"), "strong"),
    (_constrained("*", "*"), "strong"),
    (_constrained("``", "''"), "double"),
    (_constrained("'", "'"), "emphasis"),
    (_constrained("`", "'"), "single"),
    (_unconstrained("++"), "code"),
    (_constrained("+", "+"), "code"),
    (_unconstrained("__"), "emphasis"),
    (_constrained("_", "_"), "emphasis"),
]
"""Quoted text in asciidoc-py's order (``asciidoc.conf`` ``[quotes]``)."""

HTML_QUOTES = {"strong": "strong", "emphasis": "em", "code": "code"}
TYPOGRAPHY = [  # asciidoc-py replacements that leave entity digits in generated ids
    (re.compile(r"(\w)--(?=\w)"), r"\1&#8212;&#8203;"),
    (re.compile(r"(^|\s)--(\s|$)"), r"&#8201;&#8212;&#8201;"),
    (re.compile(r"(\w)'(?=\w)"), r"\1&#8217;"),
    (re.compile(r"\.\.\."), "&#8230;"),
    (re.compile(r"\(C\)"), "&#169;"),
    (re.compile(r"\(R\)"), "&#174;"),
    (re.compile(r"\(TM\)"), "&#8482;"),
]


class Stash:
    """Text set aside from further substitution, put back at the end."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def put(self, text: str) -> str:
        """A placeholder for ``text``."""
        self.parts.append(text)
        return f"\x00{len(self.parts) - 1}\x00"

    def restore(self, text: str) -> str:
        """``text`` with every placeholder replaced by what it stands for."""
        return PLACEHOLDER.sub(lambda m: self.restore(self.parts[int(m.group(1))]), text)


@dataclass
class Context:
    """What inline conversion needs: attributes defined so far and titles of anchors."""

    attributes: dict[str, str]
    anchors: dict[str, str] = field(default_factory=dict)


def _pass_text(text: str) -> str:
    """Passthrough content as text; markup in it (HTML) parsed away."""
    if "</" in text or "/>" in text or "<br>" in text:
        return lxml.html.fragment_fromstring(text, create_parent="div").text_content()
    return text


def _attribute(match: re.Match[str], context: Context, stash: Stash) -> str:
    name = match["name"].lower()
    if name in context.attributes:
        return _passthroughs(context.attributes[name], stash)
    if name in BUILTIN_ATTRIBUTES:
        return stash.put(BUILTIN_ATTRIBUTES[name])
    return stash.put(match[0])  # unknown: left as written


def _link_text(match: re.Match[str], context: Context, stash: Stash) -> str:
    name, target, text = match["name"], match["target"], match["text"].strip()
    if "=" in text:  # an attribute list: the text is its first entry
        text = text.split(",", 1)[0]
    text = text.strip().strip('"').rstrip("^")
    if text:
        return text
    if name == "xref":
        return context.anchors.get(target, stash.put(f"[{target}]"))
    if name in ("link", "mailto"):
        return stash.put(target)
    return stash.put(f"{name}:{target}")


def _xref_text(match: re.Match[str], context: Context, stash: Stash) -> str:
    if match["text"]:
        return match["text"].strip().strip('"')
    target = match["id"].strip('"')
    return context.anchors.get(target, stash.put(f"[{target}]"))


def _footnote(match: re.Match[str]) -> str:
    text = match["text"]
    if match["name"] == "footnoteref":
        text = text.split(",", 1)[1] if "," in text else ""
    return f" ({text.strip()})" if text.strip() else ""


def _ui_text(match: re.Match[str]) -> str:
    if match["name"] == "menu":
        return " > ".join(p.strip() for p in [match["target"], *match["text"].split(">")] if p)
    return match["text"]


def _macros(text: str, context: Context, stash: Stash) -> str:
    """Inline macros as their text: links, cross references, footnotes; images dropped."""
    text = LINKGIT.sub(
        lambda m: stash.put(f"{m['target']}({m['section']})" if m["section"] else m["target"]),
        text,
    )
    text = INLINE_IMAGE.sub("", text)
    text = NAMED_LINK.sub(lambda m: _link_text(m, context, stash), text)
    text = ANGLE_URL.sub(lambda m: stash.put(m["url"]), text)
    text = BARE_URL.sub(lambda m: stash.put(m["url"]), text)
    text = EMAIL.sub(lambda m: stash.put(m[0]), text)
    text = XREF.sub(lambda m: _xref_text(m, context, stash), text)
    text = BIBLIO_ANCHOR.sub(lambda m: stash.put(f"[{m['id']}]"), text)
    text = INLINE_ANCHOR.sub("", text)
    text = FOOTNOTE.sub(_footnote, text)
    text = UI_MACRO.sub(_ui_text, text)
    return INDEX_TERM.sub(lambda m: m["term"] or "", text)


def _quote(kind: str, text: str, stash: Stash) -> str:
    if kind == "strong":
        return f"{STRONG}{text}{STRONG}"
    if kind == "emphasis":
        return f"{EMPHASIS}{text}{EMPHASIS}"
    if kind == "code":
        return f"{CODE}{text}{CODE}"
    mark = stash.put('"' if kind == "double" else "'")
    return f"{mark}{text}{mark}"


def _passthroughs(text: str, stash: Stash) -> str:
    """Passthroughs, inline literals and escaped characters, set aside untouched."""
    text = PASS_TRIPLE.sub(lambda m: stash.put(_pass_text(m["text"] or m["text2"] or "")), text)
    text = PASS_MACRO.sub(lambda m: stash.put(_pass_text(m["text"])), text)
    text = LITERAL.sub(lambda m: stash.put(m[0][1:] if m["escape"] else code_span(m["text"])), text)
    return ESCAPE.sub(lambda m: stash.put(m["char"]), text)


def inline(text: str, context: Context, plain: bool = False) -> str:
    """AsciiDoc inline markup as Markdown (or, with ``plain``, as text without markers)."""
    stash = Stash()
    text = ENTITY.sub(lambda m: stash.put(html.unescape(m[0])), text)
    text = _passthroughs(text, stash)
    text = ATTRIBUTE_REF.sub(lambda m: _attribute(m, context, stash), text)
    text = _macros(text, context, stash)
    for pattern, kind in QUOTES:
        text = pattern.sub(lambda m, kind=kind: _quote(kind, m["text"], stash), text)
    text = stash.restore(text)
    marks = {STRONG: "**", EMPHASIS: "*", CODE: "`"}
    for marker, markdown in marks.items():
        text = text.replace(marker, "" if plain else markdown)
    if plain:
        text = re.sub(r"`([^`]*)`", r"\1", text)
    return text


def html_title(title: str, context: Context) -> str:
    """A title roughly as asciidoc-py's HTML backend renders it (section ids are made from it)."""
    stash = Stash()
    text = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = LITERAL.sub(lambda m: stash.put(f"<code>{m['text']}</code>"), text)
    text = LINKGIT.sub(
        lambda m: stash.put(f'<a href="{m["target"]}.html">{m["target"]}({m["section"]})</a>'),
        text,
    )
    text = NAMED_LINK.sub(lambda m: stash.put(_html_link(m)), text)
    text = BARE_URL.sub(lambda m: stash.put(f'<a href="{m["url"]}">{m["url"]}</a>'), text)
    text = EMAIL.sub(lambda m: stash.put(f'<a href="mailto:{m[0]}">{m[0]}</a>'), text)
    text = INLINE_ANCHOR.sub(lambda m: f'<a id="{m["id"]}"></a>', text)
    text = ATTRIBUTE_REF.sub(lambda m: _entity_attribute(m, context), text)
    for pattern, kind in QUOTES:
        text = pattern.sub(lambda m, kind=kind: _html_quote(kind, m["text"]), text)
    for pattern, replacement in TYPOGRAPHY:
        text = pattern.sub(replacement, text)
    return stash.restore(text)


def _html_link(match: re.Match[str]) -> str:
    target = match["target"]
    href = target if match["name"] in ("link", "xref") else f"{match['name']}:{target}"
    return f'<a href="{href}">{match["text"] or href}</a>'


def _entity_attribute(match: re.Match[str], context: Context) -> str:
    name = match["name"].lower()
    if name in context.attributes:
        return context.attributes[name]
    value = BUILTIN_ATTRIBUTES.get(name)
    return match[0] if value is None else "".join(f"&#{ord(c)};" for c in value)


def _html_quote(kind: str, text: str) -> str:
    if kind == "double":
        return f"&#8220;{text}&#8221;"
    if kind == "single":
        return f"&#8216;{text}&#8217;"
    tag = HTML_QUOTES[kind]
    return f"<{tag}>{text}</{tag}>"


def auto_id(title: str, context: Context, used: set[str]) -> str:
    """asciidoc-py's generated section id: ``_`` + the rendered title in lower case, non-word
    runs as ``_``, and ``_2``, ``_3``... for repeats."""
    base = "_" + re.sub(r"\W+", "_", html_title(title, context)).strip("_").lower()
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}_{n}"
    used.add(candidate)
    return candidate


def underline_level(title: str, underline: str) -> int | None:
    """The level of a two-line title, or None when these lines are not one."""
    if len(underline) < 2 or underline[0] not in UNDERLINES or set(underline) != {underline[0]}:
        return None
    if abs(len(title) - len(underline)) > 2 or not re.search(r"\w", title):
        return None
    if title[0].isspace() or DELIMITER.match(title) or BLOCK_TITLE.match(title):
        return None
    return UNDERLINES.index(underline[0])
