"""HTML: one page of a built documentation site, its main content only, as Markdown sections.

The page is parsed with lxml (broken markup is repaired, never lost). The main content is found
by the shapes documentation generators produce (Sphinx ``div[role=main]``/``div.body``, asciidoc
``div#header`` + ``div#content``, ``main``, ``article``, else ``body``); site furniture inside it
(navigation, sidebars, headers, footers, search, cookie banners, tables of contents, permalink
marks, scripts) is dropped. Headings split sections; code, tables, lists, definition lists, API
signatures and admonitions become Markdown. Pages with no content of their own (Sphinx's
general index, module index and search page, pages made only of links) can be skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

import lxml.etree
import lxml.html
from lxml.html import HtmlElement

from docbuild.documents import Document, FileProblem, Page, Section, SkipFile, title_from_path, wrap
from docbuild.links import url_of_path
from docbuild.readers.markdown_text import code_words, fenced, merge_heading_only, pipe_table
from docbuild.readers.text import read_text

if TYPE_CHECKING:
    from docbuild.config import ProcessingConfig

HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


BLOCK_TAGS = _names(
    "address article aside blockquote body caption center dd details dialog dir div dl dt"
    " fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li main"
    " menu nav noscript ol p pre section summary table tbody td tfoot th thead tr ul"
)
DROP_TAGS = _names(
    "audio button canvas embed form head iframe img input link map meta noscript object picture"
    " script select style svg template textarea title video"
)
DROP_CLASSES = _names(
    "headerlink permalink anchorjs-link hash-link viewcode-link viewcode-back linenos lineno"
    " linenodiv copybutton sr-only visually-hidden screen-reader-text skip-link skip-to-content"
)
CONTAINERS = _names("aside details dialog div dl footer form header menu nav ol section table ul")
"""Elements whose class or id can mark them as furniture (not ``dt``: ``cmdoption-skip``)."""
FURNITURE_WORDS = _names(
    "nav navbar navigation sidebar sidenav menu menubar breadcrumb breadcrumbs toc toctree"
    " footer header masthead search searchbox cookie cookies consent gdpr related skip"
    " skiplink pagination pager prevnext"
)
"""Words in a block's class or id (whole, or one part of a ``-``/``_`` name) that mark furniture."""
FURNITURE_STEMS = ("sidebar", "breadcrumb", "navbar", "cookie", "searchbox", "tableofcontents")
"""Furniture words also found inside longer names (``sphinxsidebar``, ``table-of-contents``)."""
FURNITURE_ROLES = _names(
    "navigation banner contentinfo search complementary menu menubar dialog alertdialog"
)
CONTENT_ASIDES = frozenset({"footnote", "footnote-list", "topic", "admonition", "note"})
"""``aside`` classes that hold content (docutils footnotes and topics), not a sidebar."""
ADMONITIONS = _names(
    "admonition admonitionblock topic sidebar sidebarblock theme-admonition markdown-alert callout"
)
PERMALINK_TEXT = frozenset({"¶", "§", "#", "🔗", "\uf0c1", ""})
CODE_TAGS = frozenset({"code", "tt", "kbd", "samp"})
LANGUAGE_ALIASES = {
    "python3": "python",
    "py3": "python",
    "py": "python",
    "ipython3": "ipython",
    "none": "",
    "text": "",
    "default": "",
    "plain": "",
    "plaintext": "",
    "nohighlight": "",
}
"""Highlighter names → fence language (``highlight-default`` is Sphinx's "guess": no label)."""
LANGUAGE_PREFIXES = ("language-", "lang-", "highlight-source-", "highlight-")
MAIN_CONTENT = (
    "//*[@role='main']",
    "//main",
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' body ')]",
    "//article",
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' document ')]",
    "//div[@id='content']",
)
"""Where the main content is, most specific first (Sphinx, HTML5, asciidoc, generic)."""
SPHINX_INDEX = "//table[contains(concat(' ', normalize-space(@class), ' '), ' indextable ')]"
LINK_SHARE = 0.8
MAX_RUNNING_WORDS = 40
"""A page is a table of contents when at least ``LINK_SHARE`` of its words are link text and
fewer than ``MAX_RUNNING_WORDS`` words are not."""
WORD = re.compile(r"\w+")
SPACE = re.compile(r"[ \t\n\r\f\v\xa0\u200b]+")
TITLE_SEPARATORS = (" — ", " – ", " | ", " · ", " :: ", " - ")
MARKDOWN_LOOKALIKE = re.compile(r"^(?:`{3,}|~{3,}|#{1,6}(?:\s|$)|(?:={3,}|-{3,})\s*$)")
"""Lines of running text that Markdown would read as a fence, a heading or a setext underline."""


@dataclass
class Heading:
    """A heading met in the content flow: it starts a section."""

    level: int
    text: str
    anchor: str | None
    is_title: bool


Item = Heading | str


def classes(el: HtmlElement) -> list[str]:
    """The element's class tokens, lower-cased."""
    return (el.get("class") or "").lower().split()


def collapse(text: str | None) -> str:
    """Whitespace runs (newlines included) as single spaces."""
    return SPACE.sub(" ", text or "")


def plain(el: HtmlElement) -> str:
    """The element's text on one line."""
    return collapse(el.text_content()).strip()


def _has_heading(el: HtmlElement) -> bool:
    return next(el.iter(*HEADINGS), None) is not None


def _furniture_words(el: HtmlElement) -> set[str]:
    """Furniture words named by the element's class, id or role."""
    names = classes(el) + ([el.tag] if "-" in el.tag else [])  # custom elements by name
    section_like = el.tag == "section" or any(name.startswith("sect") for name in names)
    if el.get("id") and not section_like:  # section ids are made from their heading's text
        names.append(el.get("id").lower())
    found = {part for name in names for part in re.split(r"[-_]", name) if part in FURNITURE_WORDS}
    joined = [re.sub(r"[-_]", "", name) for name in names]
    found.update(stem for name in joined for stem in FURNITURE_STEMS if stem in name)
    found.update(role for role in (el.get("role") or "").lower().split() if role in FURNITURE_ROLES)
    return found


def _is_permalink(el: HtmlElement) -> bool:
    """A heading's or definition's self-link (``¶``, ``§``, ``#``)."""
    return (el.get("href") or "").startswith("#") and plain(el) in PERMALINK_TEXT


def is_furniture(el: HtmlElement, in_body: bool) -> bool:
    """True for page furniture inside the main content (``in_body``: no main content found)."""
    tag = el.tag
    if tag in DROP_TAGS or el.get("hidden") is not None or el.get("aria-hidden") == "true":
        return True
    names = set(classes(el))
    if names & DROP_CLASSES or (tag == "a" and _is_permalink(el)):
        return True
    if tag in ("nav", "footer"):
        return True
    if "sidebarblock" in names or (
        "sidebar" in names and el.find("p[@class='sidebar-title']") is not None
    ):
        return False  # asciidoc's sidebar block, docutils' sidebar directive: content
    if tag == "aside" and not names & CONTENT_ASIDES:
        return True
    if tag not in CONTAINERS and "-" not in tag:
        return False
    words = _furniture_words(el)
    if tag == "header":
        words.add("header")
    if words == {"header"}:  # a page header holding the title is content; a site header is not
        return in_body or not _has_heading(el)
    return bool(words)


def clean(root: HtmlElement, in_body: bool) -> None:
    """Drop the furniture inside ``root`` (text after a dropped element is kept)."""
    stack = list(root)
    while stack:
        el = stack.pop()
        if not isinstance(el.tag, str):
            continue
        if is_furniture(el, in_body):
            el.drop_tree()
        else:
            stack.extend(el)


def main_content(doc: HtmlElement) -> tuple[list[HtmlElement], bool]:
    """The elements holding the page's own content, and whether that is the whole ``body``."""
    header = doc.find(".//body/div[@id='header']")
    content = doc.find(".//body/div[@id='content']")
    generator = " ".join(doc.xpath("//meta[@name='generator']/@content")).lower()
    if header is not None and content is not None and "asciidoc" in generator:
        # asciidoc puts the title (and a man page's NAME section) in the header
        notes = doc.find(".//body/div[@id='footnotes']")
        return [el for el in (header, content, notes) if el is not None], False
    for query in MAIN_CONTENT:
        found = doc.xpath(query)
        if found:
            return [found[0]], False
    body = doc.find("body")
    return [body if body is not None else doc], True


def page_title(doc: HtmlElement) -> str:
    """The ``<title>`` without a site suffix such as `` — Python 3.11 documentation``."""
    title = collapse(doc.findtext(".//title")).strip()
    for separator in TITLE_SEPARATORS:
        if separator in title:
            return title.rsplit(separator, 1)[0].strip()
    return title


def code_language(pre: HtmlElement) -> str:
    """The fence language from the highlighter's classes on the block or its wrappers."""
    candidates = [pre, *pre.iterchildren("code"), *list(pre.iterancestors())[:5]]
    found, doctest = "", False
    for el in candidates:
        doctest = doctest or "doctest" in classes(el)
        names = classes(el)
        if el.get("data-lang"):
            names.append(f"language-{el.get('data-lang').lower()}")
        for name in names:
            prefix = next((p for p in LANGUAGE_PREFIXES if name.startswith(p)), None)
            if prefix and not found and name != prefix:
                found = name[len(prefix) :]
    language = LANGUAGE_ALIASES.get(found, found)
    if not language and doctest:
        language = "pycon"
    return language if re.fullmatch(r"[\w+#.-]*", language) else ""


def code_text(pre: HtmlElement) -> str:
    """The block's code verbatim: highlighter spans dissolved, ``<br>`` as a line break."""
    for br in pre.iter("br"):
        br.tail = "\n" + (br.tail or "")
    return pre.text_content().replace("\xa0", " ").strip("\n").rstrip()


def heading_anchor(heading: HtmlElement) -> str | None:
    """The heading's id, its section's id (Sphinx), or a named anchor inside it (DocBook)."""
    if heading.get("id"):
        return heading.get("id")
    for ancestor in list(heading.iterancestors())[:3]:
        section = ancestor.tag == "section" or "section" in classes(ancestor)
        if section and ancestor.get("id") and next(ancestor.iter(*HEADINGS)) is heading:
            return ancestor.get("id")
    named = heading.xpath(".//a[@name or @id]")
    return (named[0].get("id") or named[0].get("name")) if named else None


def paragraph(text: str) -> str:
    """Inline text as one Markdown block: lines trimmed, Markdown look-alikes escaped."""
    lines = [re.sub(r" {2,}", " ", line).strip() for line in text.split("\n")]
    return "\n".join(
        "\\" + line if MARKDOWN_LOOKALIKE.match(line) else line for line in lines if line
    )


def bold(text: str) -> str:
    """``text`` in bold, its surrounding spaces kept outside the markers."""
    inner = text.strip()
    if not inner or "\n" in inner:
        return text
    return f"{' ' if text[:1].isspace() else ''}**{inner}**{' ' if text[-1:].isspace() else ''}"


def indent_item(marker: str, blocks: list[str]) -> str:
    """One list item: the marker before the first block, later lines indented under it."""
    text = blocks[0]
    for block in blocks[1:]:
        list_start = re.match(r"(?:- |\d+\. )", block)
        text += ("\n" if list_start else "\n\n") + block
    pad = " " * len(marker)
    lines = [pad + line if line else line for line in text.split("\n")]
    if text.startswith(("```", "~~~", "|")):  # a fence or table must start its own line
        return marker.rstrip() + "\n" + "\n".join(lines)
    return marker + "\n".join(lines)[len(pad) :]


class PageRenderer:
    """Turns cleaned main-content elements into headings and Markdown blocks."""

    def __init__(self, title_heading: HtmlElement | None) -> None:
        self.title_heading = title_heading

    def blocks(self, el: HtmlElement, flow: bool) -> list[Item]:
        """The element's content as blocks; headings become :class:`Heading` when ``flow``."""
        items: list[Item] = []
        inline = [collapse(el.text)]
        for child in el:
            if isinstance(child.tag, str) and (child.tag in BLOCK_TAGS or "-" in child.tag):
                self._flush(inline, items)
                items.extend(self.block(child, flow))
            elif isinstance(child.tag, str):
                inline.append(self.inline(child))
            inline.append(collapse(child.tail))
        self._flush(inline, items)
        return items

    def text_blocks(self, el: HtmlElement) -> list[str]:
        """The element's content as Markdown blocks, headings as bold lines."""
        return [item for item in self.blocks(el, flow=False) if isinstance(item, str)]

    @staticmethod
    def _flush(inline: list[str], items: list[Item]) -> None:
        text = paragraph("".join(inline))
        if text:
            items.append(text)
        inline.clear()

    def block(self, el: HtmlElement, flow: bool) -> list[Item]:
        """One block-level element."""
        tag = el.tag
        if tag in HEADINGS:
            return self.heading(el, flow)
        if tag == "pre":
            code = code_text(el)
            return [fenced(code, code_language(el))] if code.strip() else []
        if tag in ("ul", "ol", "menu", "dir"):
            return self.list_items(el)
        if tag == "dl":
            return self.definitions(el)
        if tag == "table":
            return self.table(el)
        if tag == "hr":
            return []
        if tag in ("div", "aside", "section", "blockquote") and set(classes(el)) & ADMONITIONS:
            return self.admonition(el)
        nested_flow = flow and tag not in ("li", "dd", "dt", "td", "th", "blockquote")
        return self.blocks(el, nested_flow)

    def heading(self, el: HtmlElement, flow: bool) -> list[Item]:
        """A section heading in the flow; elsewhere (a list, a table) a bold line."""
        text = plain(el)
        if not text:
            return []
        if not flow:
            return [f"**{text}**"]
        level = int(el.tag[1])
        return [Heading(level, text, heading_anchor(el), el is self.title_heading)]

    def inline(self, el: HtmlElement) -> str:
        """Inline markup as Markdown text: code in backticks, bold kept, links as their text."""
        tag = el.tag
        if tag == "br":
            return "\n"
        if tag in CODE_TAGS or tag == "pre":
            return code_words(el.text_content())
        inner = collapse(el.text) + "".join(
            self.inline(child) + collapse(child.tail) for child in el if isinstance(child.tag, str)
        )
        if tag in ("strong", "b"):
            return bold(inner)
        return f" {inner} " if tag in BLOCK_TAGS else inner

    def list_items(self, el: HtmlElement) -> list[str]:
        """``- item`` / ``1. item`` lines, nested lists indented under their item."""
        items: list[list[str]] = []
        for child in el:
            if not isinstance(child.tag, str):
                continue
            blocks = self.text_blocks(child)
            if child.tag in ("ul", "ol") and items:  # a list nested without its <li>
                items[-1].extend(blocks)
            else:
                items.append(blocks)
        try:
            start = int(el.get("start") or 1)
        except ValueError:
            start = 1
        rendered = []
        for number, blocks in enumerate((b for b in items if b), start=start):
            marker = f"{number}. " if el.tag == "ol" else "- "
            rendered.append(indent_item(marker, blocks))
        loose = any("\n\n" in item for item in rendered)
        return ["\n\n".join(rendered) if loose else "\n".join(rendered)] if rendered else []

    def definitions(self, el: HtmlElement) -> list[str]:
        """A term line (an API signature as inline code) followed by its description."""
        entries = [child for child in el if isinstance(child.tag, str)]
        entries = [sub for child in entries for sub in (child if child.tag == "div" else [child])]
        api = any(is_signature(entry) for entry in entries if entry.tag == "dt")
        out: list[str] = []
        terms: list[str] = []
        for entry in entries:
            if entry.tag == "dt":
                term = (
                    code_words(plain(entry))
                    if api
                    else bold(paragraph(self.inline(entry)).replace("**", ""))
                )
                terms.extend([term] if term.strip() else [])
                continue
            blocks = self.text_blocks(entry)
            if terms and blocks and not blocks[0].startswith(("```", "~~~")):
                blocks[0] = "\n".join([*terms, blocks[0]])
            elif terms:
                blocks.insert(0, "\n".join(terms))
            out.extend(blocks)
            terms = []
        if terms:
            out.append("\n".join(terms))
        return out

    def table(self, el: HtmlElement) -> list[str]:
        """A Markdown pipe table (first row as header, cells on one line, ``|`` escaped)."""
        if "highlighttable" in classes(el):  # Pygments with line numbers: just the code
            return [block for pre in el.iter("pre") for block in self.block(pre, False)]
        rows = [
            [cell for cell in row if cell.tag in ("td", "th")]
            for row in el.xpath("./tr|./thead/tr|./tbody/tr|./tfoot/tr")
        ]
        rows = [row for row in rows if row]
        if not rows:
            return []
        if is_layout(rows):
            return [block for row in rows for cell in row for block in self.text_blocks(cell)]
        grid = [[text for cell in row for text in self._cell(cell)] for row in rows]
        grid = [row for row in grid if any(row)]
        if not grid:
            return []
        caption = el.find("caption")
        return [*([paragraph(plain(caption))] if caption is not None else []), pipe_table(grid)]

    def _cell(self, cell: HtmlElement) -> list[str]:
        """A cell's text on one line, repeated empty for its extra columns."""
        text = collapse(self.inline(cell)).strip()
        try:
            span = min(max(int(cell.get("colspan") or 1), 1), 50)
        except ValueError:
            span = 1
        return [text] + [""] * (span - 1)

    def admonition(self, el: HtmlElement) -> list[str]:
        """A note, warning, "see also" or topic: ``Title: text``."""
        title_el = next(
            (
                sub
                for sub in el.iterdescendants()
                if isinstance(sub.tag, str)
                and any(name.endswith("title") or "heading" in name for name in classes(sub))
            ),
            None,
        )
        title = plain(title_el) if title_el is not None else ""
        if title_el is not None:
            title_el.drop_tree()
        body = el.find(".//td[@class='content']")  # asciidoc lays admonitions out as a table
        blocks = self.text_blocks(body if body is not None else el)
        if not title:
            return blocks
        label = title if title.endswith(":") else f"{title}:"
        if not blocks or re.match(r"(?:```|~~~|\|)", blocks[0]):  # a fence or table: own line
            return [label, *blocks]
        joint = "\n" if re.match(r"(?:- |\d+\. |\*\*)", blocks[0]) else " "  # a list or term
        return [f"{label}{joint}{blocks[0]}", *blocks[1:]]


def is_layout(rows: list[list[HtmlElement]]) -> bool:
    """A table used for layout (one row, one column, or cells holding several blocks)."""
    several_blocks = any(
        sum(1 for sub in cell if sub.tag in BLOCK_TAGS) > 1 for row in rows for cell in row
    )
    return len(rows) == 1 or max(len(row) for row in rows) == 1 or several_blocks


def is_signature(dt: HtmlElement) -> bool:
    """A Sphinx API entry's signature (``dt.sig``, or a ``descname`` inside)."""
    return "sig" in classes(dt) or bool(
        dt.xpath(".//*[contains(@class, 'descname') or contains(@class, 'sig-name')]")
    )


def index_page_reason(doc: HtmlElement, roots: list[HtmlElement]) -> str | None:
    """Why the page has no content of its own, or None when it has some."""
    if doc.xpath(SPHINX_INDEX):
        return "index page (Sphinx general or module index): links only"
    if any(root.xpath(".//*[@id='search-results']") for root in roots):
        return "search page: no content of its own"
    return None


def link_words(roots: list[HtmlElement]) -> tuple[int, int]:
    """Words of the cleaned main content outside headings, and how many of them are link text."""

    def count(elements: Iterable[HtmlElement]) -> int:
        return sum(len(WORD.findall(el.text_content())) for el in elements)

    words = links = 0
    for root in roots:
        headings = list(root.iter(*HEADINGS))
        words += count([root]) - count(headings)
        links += count(root.iter("a")) - count(a for h in headings for a in h.iter("a"))
    return words, links


def sections_of(items: list[Item], title: str) -> list[Section]:
    """Group headings and blocks into sections; every hierarchy starts with the title."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    head, anchor, body = f"# {title}", None, []

    def flush() -> None:
        sections.append(
            Section([title, *(text for _, text in stack)], "\n\n".join([head, *body]), anchor)
        )

    for item in items:
        if isinstance(item, str):
            body.append(item)
            continue
        if item.is_title:  # the page's h1 opens the first section (a new one after content)
            if sections or body:
                flush()
            stack, head, anchor, body = [], f"# {title}", item.anchor, []
            continue
        flush()
        while stack and stack[-1][0] >= item.level:
            stack.pop()
        stack.append((item.level, item.text))
        head, anchor, body = f"{'#' * item.level} {item.text}", item.anchor, []
    flush()
    return merge_heading_only(sections)


def read_page(path: Path) -> str:
    """The page's text: UTF-8, else decoded as libxml2 decides (the charset the page declares in
    ``<meta>``, else HTML's historical default, Latin-1)."""
    try:
        return read_text(path)
    except SkipFile as exc:
        if "UTF-8" not in str(exc):
            raise
    return lxml.html.tostring(lxml.html.document_fromstring(path.read_bytes()), encoding="unicode")


class HtmlReader:
    """Parse ``.html``/``.htm`` pages of a built documentation site."""

    format = "html"

    @classmethod
    def from_config(cls, config: ProcessingConfig) -> Self:
        """The reader set up from a build's config."""
        return cls(config.url_base, config.html.skip_index_pages)

    def __init__(self, url_base: str | None = None, skip_index_pages: bool = True) -> None:
        self.url_base = url_base
        self.skip_index_pages = skip_index_pages

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read one page; returns its document (pages without content raise SkipFile)."""
        return self.parse(read_page(path), relative)

    def parse(self, text: str, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Parse the HTML ``text`` of the page at ``relative``."""
        parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
        try:
            doc = lxml.html.document_fromstring(text.encode("utf-8"), parser=parser)
        except lxml.etree.ParserError:
            raise SkipFile("no HTML content") from None
        roots, in_body = main_content(doc)
        reason = index_page_reason(doc, roots) if self.skip_index_pages else None
        if reason:
            raise SkipFile(reason)
        for root in roots:
            clean(root, in_body)
        if self.skip_index_pages:
            self._skip_link_lists(roots)
        title_heading = next((h for root in roots for h in root.iter("h1") if plain(h)), None)
        named = plain(title_heading) if title_heading is not None else page_title(doc)
        title = named or title_from_path(relative)
        renderer = PageRenderer(title_heading)
        items = [item for root in roots for item in renderer.blocks(root, flow=True)]
        sections = sections_of(items, title)
        if not sections:
            raise SkipFile("no text in the page's main content")
        url = url_of_path(self.url_base, relative) if self.url_base else None
        return [wrap(Page(sections, named or None, url), relative)], []

    @staticmethod
    def _skip_link_lists(roots: list[HtmlElement]) -> None:
        """Raise SkipFile for a table of contents: headings and links, little running text."""
        words, links = link_words(roots)
        if not words:
            raise SkipFile("no text besides headings and navigation (a table of contents page)")
        if links >= LINK_SHARE * words and words - links < MAX_RUNNING_WORDS:
            raise SkipFile(
                f"a table of contents: {links} of its {words} words are link text "
                f"and only {words - links} are not"
            )
