"""What a site says about its pages: links and canonical URLs in HTML, ``llms.txt`` links,
sitemap entries. Each is read with a parser (lxml for HTML and XML, markdown-it for llms.txt)."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass, field

import lxml.etree
import lxml.html
from markdown_it import MarkdownIt

from docbuild.readers.html import main_content

SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
_XML = lxml.etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, recover=True)


@dataclass
class PageLinks:
    """What one HTML page links to."""

    links: list[str] = field(default_factory=list)  # hrefs of <a> and <area>, as written
    canonical: str | None = None  # <link rel=canonical href>, as written
    base: str | None = None  # <base href>, which relative links are resolved against
    text: str = ""  # a digest of the main content's words: two URLs of one page share it


def html_links(body: bytes) -> PageLinks:
    """The links, canonical URL and base of an HTML page (broken markup is repaired)."""
    try:
        root = lxml.html.document_fromstring(body)
    except (lxml.etree.ParserError, ValueError):
        return PageLinks()
    found = PageLinks()
    for el in root.iter("a", "area", "link", "base"):
        href = el.get("href")
        if not href:
            continue
        rel = (el.get("rel") or "").lower().split()
        if el.tag == "link":
            if "canonical" in rel and found.canonical is None:
                found.canonical = href
        elif el.tag == "base":
            found.base = found.base or href
        elif "nofollow" not in rel and not el.get("download"):
            found.links.append(href)
    found.text = text_digest(" ".join(r.text_content() for r in main_content(root)[0]))
    return found


def text_digest(text: str) -> str:
    """A digest of ``text``'s words (spacing and line breaks ignored)."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def llms_links(text: str) -> list[str]:
    """The link targets of an ``llms.txt`` file (Markdown), in order."""
    links: list[str] = []
    for token in MarkdownIt("commonmark").parse(text):
        for child in token.children or []:
            if child.type == "link_open" and child.attrs.get("href"):
                links.append(str(child.attrs["href"]))
    return links


def page_of_markdown(url: str) -> str:
    """The page a Markdown alternate stands for, by the ``llms.txt`` convention (the page's URL
    with ``.md`` appended; ``index.html.md`` for a folder's page)."""
    if url.endswith("/index.html.md"):
        return url[: -len("index.html.md")]
    return url[: -len(".md")] if url.endswith(".md") else url


@dataclass
class Sitemap:
    """One sitemap file: page URLs, or (a sitemap index) more sitemaps."""

    pages: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)


def read_sitemap(body: bytes) -> Sitemap:
    """The ``<loc>`` entries of a sitemap or sitemap index (gzip-compressed or not)."""
    if body[:2] == b"\x1f\x8b":
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError):
            return Sitemap()
    try:
        root = lxml.etree.fromstring(body, _XML)
    except lxml.etree.XMLSyntaxError:
        return Sitemap()
    if root is None:
        return Sitemap()
    found = Sitemap()
    is_index = lxml.etree.QName(root).localname == "sitemapindex"
    for loc in root.iter(f"{SITEMAP_NS}loc", "loc"):
        if loc.text and loc.text.strip():
            (found.sitemaps if is_index else found.pages).append(loc.text.strip())
    return found
