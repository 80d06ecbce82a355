"""Markdown read with a CommonMark parser (markdown-it-py, with tables, front matter, definition
lists and site-generator markup), then written back as the clean Markdown chunks hold, one
section per heading.

What the reader of a chunk gains: link reference definitions are resolved and never shown;
links to pages of the site read as their text (``[term](g)`` as ``term``), links elsewhere keep
their URL; images read as their alt text; HTML tags are dropped and their text kept; Hugo
shortcodes, Liquid tags and admonitions are translated (:func:`translate`), not left as markup.
Code (fenced, indented, inline) is copied as it is.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urljoin

import lxml.etree
import lxml.html
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from docbuild.documents import Section
from docbuild.readers.markdown_text import (
    HTML_TAGS,
    code_span,
    fenced,
    merge_heading_only,
    pipe_table,
    plain_heading,
)
from docbuild.readers.shortcodes import Markup, site_markup_plugin

_BLOCKS = "p div summary details li dt dd tr table pre blockquote section figure figcaption h1"
BLOCK_ELEMENTS = frozenset(f"{_BLOCKS} h2 h3 h4 h5 h6 ul ol dl".split(" "))
"""Elements whose text is a paragraph of its own when an HTML block is read as text."""
LOOKALIKE = re.compile(r"^(\s*)(`{3,}|~{3,}|#{1,6}(?:\s|$)|(?:={3,}|-{3,})\s*$)")
ALERTS = {"note", "tip", "important", "warning", "caution", "info", "danger", "hint"}
GENERATED = frozenset(
    [
        "render-list-of-pages-in-section",
        "render-table-of-pages-in-section",
        "get-page-desc",
        "quick-reference",
        "datatable",
        "per-lang-config-keys",
        "root-configuration-keys",
        "chroma-lexers",
        "syntax-highlighting-styles",
        "syntax-highlighting-styles-light-with-counterpart",
        "module-mounts-note",
        "current-go-version",
        "newtemplatesystem",
        "eturl",
        "youtube",
        "vimeo",
        "x",
        "instagram",
        "qr",
        "gist",
        "tweet",
        "toc",
    ]
)
"""Shortcodes that stand for generated content or media: nothing a reader of text can use."""
Include = Callable[[str], str | None]
"""Reads an included file (a path as the markup gives it), or None when it cannot."""


@lru_cache(maxsize=1)
def parser() -> MarkdownIt:
    """The parser: CommonMark with tables, strikethrough, front matter, definition lists,
    footnotes, shortcodes, Liquid tags and admonitions; HTML recognised (so that its tags can be
    dropped). Every link is parsed as a link, whatever its scheme: the writer keeps only
    ``http(s)`` targets, so ``[x](javascript:...)`` reads as ``x``, never as link syntax."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.use(front_matter_plugin).use(deflist_plugin).use(footnote_plugin).use(site_markup_plugin)
    md.validateLink = lambda url: True
    return md


@dataclass
class Writer:
    """Writes tokens back as Markdown; ``include`` reads the files Hugo's ``include`` names."""

    include: Include | None = None
    page_url: str | None = None  # the page's published URL: site links are made absolute
    depth: int = 0
    included: list[str] = field(default_factory=list)  # paths of the files included

    def blocks(self, tokens: list[Token]) -> list[tuple[Token | None, str]]:
        """Top-level blocks, each as (its heading token, or None; its Markdown)."""
        out: list[tuple[Token | None, str]] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            end = close_of(tokens, i)
            if token.type == "heading_open":
                out.append((token, self.heading(token, tokens[i + 1])))
            elif token.type == "markup_block" and token.meta["markup"].name == "include":
                out.extend(self.included_blocks(token.meta["markup"]))
            else:
                text = self.block(tokens[i : end + 1])
                if text.strip():
                    out.append((None, text))
            i = end + 1
        return out

    def heading(self, token: Token, inline: Token) -> str:
        return "#" * int(token.tag[1]) + " " + self.inline(inline.children or []).strip()

    def included_blocks(self, markup: Markup) -> list[tuple[Token | None, str]]:
        """The blocks of an included file (front matter dropped; its headings still start
        sections at the top level), or none."""
        if self.include is None or self.depth > 3 or not markup.first:
            return []
        text = self.include(markup.first)
        if text is None:
            return []
        self.included.append(markup.first)
        nested = Writer(self.include, self.page_url, self.depth + 1, self.included)
        return [(h, body) for h, body in nested.blocks(parser().parse(text)) if body.strip()]

    def block(self, tokens: list[Token]) -> str:
        """One block (and what it contains) as Markdown."""
        token = tokens[0]
        kind = token.type
        if kind == "paragraph_open":
            return escape_lines(self.inline(tokens[1].children or []))
        if kind == "heading_open":
            return self.heading(token, tokens[1])
        if kind in ("fence", "code_block"):
            info = token.info.strip().split()[0] if token.info.strip() else ""
            return fenced(token.content, info)
        if kind in ("bullet_list_open", "ordered_list_open"):
            return self.list(tokens)
        if kind == "blockquote_open":
            return self.quote(tokens[1:-1])
        if kind == "table_open":
            return self.table(tokens)
        if kind == "dl_open":
            return self.definitions(tokens[1:-1])
        if kind == "footnote_block_open":
            return self.footnotes(tokens[1:-1])
        if kind == "html_block":
            return html_text(token.content)
        if kind == "hr":
            return "* * *"
        if kind == "markup_block" and token.meta["markup"].name == "include":
            return "\n\n".join(text for _, text in self.included_blocks(token.meta["markup"]))
        if kind == "markup_block":
            return self.markup_block(token.meta["markup"], token.meta["body"])
        if kind == "markup_open":
            return self.markup(token.meta["markup"], tokens[1:-1])
        return ""  # front matter, and anything unknown

    def children(self, tokens: list[Token], tight: bool = False) -> str:
        """Consecutive blocks, separated by a blank line (or none, in a tight list)."""
        parts: list[str] = []
        i = 0
        while i < len(tokens):
            end = close_of(tokens, i)
            text = self.block(tokens[i : end + 1])
            if text.strip():
                parts.append(text)
            i = end + 1
        return ("\n" if tight else "\n\n").join(parts)

    def list(self, tokens: list[Token]) -> str:
        ordered = tokens[0].type == "ordered_list_open"
        number = int(tokens[0].attrs.get("start", 1) or 1)
        tight = any(t.type == "paragraph_open" and t.hidden for t in tokens)
        items: list[str] = []
        i = 1
        while i < len(tokens) - 1:
            end = close_of(tokens, i)
            marker = f"{number}. " if ordered else "- "
            body = self.children(tokens[i + 1 : end], tight)
            items.append(indent_after_first(body, marker))
            number += 1
            i = end + 1
        return ("\n" if tight else "\n\n").join(items)

    def quote(self, tokens: list[Token]) -> str:
        body = self.children(tokens)
        match = re.match(r"^\[!(\w+)\]\s*", body)
        if match and match.group(1).lower() in ALERTS:  # GitHub and Hugo alerts: > [!NOTE]
            body = f"{match.group(1).capitalize()}: {body[match.end() :]}"
        return "\n".join(f"> {line}".rstrip() for line in body.split("\n"))

    def table(self, tokens: list[Token]) -> str:
        rows: list[list[str]] = []
        aligns: list[str] = []
        row: list[str] = []
        for i, token in enumerate(tokens):
            if token.type in ("th_open", "td_open"):
                row.append(self.inline(tokens[i + 1].children or []))
                if token.type == "th_open":
                    style = str(token.attrs.get("style") or "")
                    aligns.append(style.removeprefix("text-align:"))
            elif token.type == "tr_close":
                rows.append(row)
                row = []
        return pipe_table(rows, aligns) if rows else ""

    def definitions(self, tokens: list[Token]) -> str:
        parts: list[str] = []
        i = 0
        while i < len(tokens):
            end = close_of(tokens, i)
            if tokens[i].type == "dt_open":
                parts.append(self.inline(tokens[i + 1].children or []).strip())
            elif tokens[i].type == "dd_open":
                parts.append(indent_after_first(self.children(tokens[i + 1 : end]), ": "))
            i = end + 1
        return "\n".join(parts)

    def footnotes(self, tokens: list[Token]) -> str:
        """Footnotes at the end of the page, each as ``[label] text``."""
        notes: list[str] = []
        i = 0
        while i < len(tokens):
            end = close_of(tokens, i)
            if tokens[i].type == "footnote_open":
                body = self.children(tokens[i + 1 : end])
                notes.append(indent_after_first(body, f"[{tokens[i].meta['label']}] "))
            i = end + 1
        return "\n".join(notes)

    def markup_block(self, markup: Markup, body: str | None) -> str:
        """A block shortcode or Liquid tag with a raw body (code), or alone."""
        if body is not None:
            language = markup.first if markup.name in ("highlight", "code", "hl") else ""
            if markup.name == "code-toggle":
                language = config_language(body)
            return fenced(body.strip("\n"), markup.named.get("lang", language))
        return translate(markup)

    def markup(self, markup: Markup, tokens: list[Token]) -> str:
        """A paired shortcode, Liquid tag or admonition around Markdown: its text, titled."""
        body = self.children(tokens)
        label = label_of(markup)
        if not label:
            return body
        return f"{label}: {body}" if body else label

    def link_target(self, href: str) -> str | None:
        """The URL a link keeps: an absolute one as it is, a link to another page of the site
        made absolute against the page's URL when it has one; None (the link reads as its
        text) otherwise, for a glossary link ``(g)`` or a link within the page, and for any URL
        that is not ``http(s)`` (``javascript:``, ``data:``, ``mailto:``)."""
        if href.startswith(("http://", "https://")):
            return href
        if not self.page_url or href in ("", "g") or href.startswith("#"):
            return None
        path, sep, anchor = href.partition("#")
        stem, dot, extension = path.rpartition(".")
        if dot and extension.lower() in ("md", "mdx", "markdown"):  # a link to a source file
            path = stem.removesuffix("_index").removesuffix("index")
        target = urljoin(self.page_url, path) + sep + anchor
        return target if target.startswith(("http://", "https://")) else None

    def inline(self, children: list[Token]) -> str:
        """Inline tokens as Markdown text (see the module doc for links and images)."""
        out: list[str] = []
        links: list[str | None] = []  # each open link's URL when kept, else None
        for child in children:
            kind = child.type
            if kind == "text":
                out.append(child.content)
            elif kind in ("softbreak", "hardbreak"):
                out.append("\n")
            elif kind == "code_inline":
                out.append(code_span(child.content))
            elif kind in ("em_open", "em_close", "strong_open", "strong_close"):
                out.append(child.markup)
            elif kind in ("s_open", "s_close"):
                out.append("~~")
            elif kind == "link_open":
                href = str(child.attrs.get("href") or "")
                kept = self.link_target(href)
                links.append(kept)
                if kept:
                    out.append("[")
            elif kind == "link_close":
                kept = links.pop() if links else None
                if kept:
                    out.append(f"]({kept})")
            elif kind == "image":
                out.append(self.inline(child.children or []))
            elif kind == "html_inline":
                out.append(html_inline(child.content))
            elif kind == "footnote_ref":
                out.append(f"[{child.meta['label']}]")
            elif kind == "markup_inline" and not child.meta["closing"]:
                out.append(translate(child.meta["markup"]))
        return "".join(out)


def close_of(tokens: list[Token], i: int) -> int:
    """Index of the token closing ``tokens[i]`` (itself for a token that opens nothing)."""
    if tokens[i].nesting != 1:
        return i
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def translate(markup: Markup) -> str:
    """A shortcode or tag with no body, as the text a reader should see ('' when none)."""
    name = markup.name
    if name in ("new-in", "newin"):
        return f"New in {markup.first}".strip()
    if name in ("deprecated-in", "deprecated"):
        return f"Deprecated in {markup.first}".strip()
    if name in ("glossary-term", "term", "abbr"):
        return markup.first
    if name in ("param", "site-param"):
        return f"`{markup.first}`" if markup.first else ""
    if name in ("img", "figure", "image"):
        return markup.named.get("caption") or markup.named.get("alt") or ""
    if name in ("kbd", "key"):
        return f"`{markup.first}`" if markup.first else ""
    return ""  # generated content, media, includes that cannot be read, unknown tags


def label_of(markup: Markup) -> str:
    """The words a paired markup's body is introduced with ('' for none)."""
    title = markup.named.get("title") or markup.named.get("summary") or ""
    if markup.kind in ("mkdocs", "docusaurus") or markup.name in ALERTS | {"admonition"}:
        kind = markup.name.capitalize()
        return f"{kind}: {title}" if title else kind
    if markup.name == "details":
        return title
    if markup.name in ("deprecated-in", "deprecated", "new-in"):
        return translate(markup)
    return title


def config_language(body: str) -> str:
    """The language of a Hugo ``code-toggle`` body: TOML, YAML or JSON."""
    stripped = body.strip()
    if stripped.startswith("{"):
        return "json"
    first = stripped.split("\n", 1)[0]
    if first.startswith("[") or re.match(r"^[\w.-]+\s*=", first):
        return "toml"
    return "yaml"


def html_inline(tag: str) -> str:
    """An inline HTML tag: dropped when it is an HTML element (``<br>`` a line break), kept as
    text otherwise (``<file>`` is a placeholder); comments dropped."""
    if tag.startswith("<!--"):
        return ""
    name = re.match(r"</?\s*([A-Za-z][\w-]*)", tag)
    if name is None:
        return tag
    if name.group(1).lower() == "br":
        return "\n"
    return "" if name.group(1).lower() in HTML_TAGS else tag


def html_text(block: str) -> str:
    """An HTML block's text (comments and scripts dropped), read with lxml."""
    if not block.strip() or (block.lstrip().startswith("<!--") and block.rstrip().endswith("-->")):
        return ""
    try:
        root = lxml.html.fragment_fromstring(block, create_parent="div")
    except (lxml.etree.ParserError, ValueError):
        return ""
    for dropped in root.xpath("//script|//style|//comment()"):
        dropped.drop_tree()
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag in BLOCK_ELEMENTS:
            element.tail = "\n\n" + (element.tail or "")
    text = re.sub(r"[ \t]+\n", "\n", root.text_content())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def escape_lines(text: str) -> str:
    """Text whose lines would read as a fence, a heading or an underline, escaped."""
    if not any(c in text for c in "`~#=-"):
        return text
    return "\n".join(LOOKALIKE.sub(r"\1\\\2", line) for line in text.split("\n"))


def indent_after_first(text: str, marker: str) -> str:
    """``text`` after ``marker``, its following lines indented to line up."""
    pad = " " * len(marker)
    lines = text.split("\n")
    return "\n".join([marker + lines[0], *(pad + line if line else "" for line in lines[1:])])


@dataclass
class Parsed:
    """A Markdown body as sections, with what reading it found."""

    title: str  # the title given, else the first H1, else the fallback
    named: bool  # whether the title came from the document (not the fallback)
    sections: list[Section]
    included: list[str]  # the files Hugo's include shortcode named, as written
    unclosed_fence: int | None  # the line (1-based) of a code fence never closed


def unclosed_fence(tokens: list[Token], lines: list[str]) -> int | None:
    """The first line of a fenced block that runs to the end of the text unclosed, if any."""
    for token in tokens:
        if token.type != "fence" or token.map is None or token.map[1] < len(lines):
            continue
        last = lines[token.map[1] - 1].strip() if token.map[1] - 1 > token.map[0] else ""
        if not (last and set(last) == {token.markup[0]} and len(last) >= len(token.markup)):
            return token.map[0] + 1
    return None


def first_h1(tokens: list[Token], writer: Writer) -> str | None:
    """The text of the first level-1 heading, if any."""
    for heading, inline in itertools.pairwise(tokens):
        if heading.type == "heading_open" and heading.tag == "h1" and heading.level == 0:
            return plain_heading(writer.inline(inline.children or []).strip())[0] or None
    return None


def sections_of(
    body: str,
    title: str | None,
    fallback: str,
    include: Include | None = None,
    page_url: str | None = None,
) -> Parsed:
    """Split Markdown ``body`` into sections by heading, as clean Markdown. Every section's
    hierarchy starts with the document's title: ``title``, else its first H1, else
    ``fallback``; a leading H1 is the title's heading. Links to other pages are made absolute
    against ``page_url`` when given."""
    writer = Writer(include, page_url)
    tokens = parser().parse(body)
    named = title or first_h1(tokens, writer)
    title = named or fallback
    stack: list[tuple[int, str]] = []
    sections: list[Section] = []
    parts: list[str] = []
    anchor: str | None = None
    root = title

    def flush() -> None:
        text = "\n\n".join(parts).strip("\n")
        if text.strip():
            sections.append(Section([root, *(h for _, h in stack)], text, anchor))
        parts.clear()

    for heading, text in writer.blocks(tokens):
        if heading is None:
            parts.append(text)
            continue
        level = int(heading.tag[1])
        name, new_anchor = plain_heading(text.lstrip("#").strip())
        if level == 1 and not stack and not parts:
            root = name or root
        else:
            flush()
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, name))
        anchor = new_anchor if stack else None
        parts.append("#" * level + " " + name)
    flush()
    lines = body.rstrip("\n").split("\n")
    return Parsed(
        title,
        bool(named),
        merge_heading_only(sections),
        writer.included,
        unclosed_fence(tokens, lines),
    )
