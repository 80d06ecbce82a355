"""The links a build writes: only ``http(s)`` or relative URLs are stored (a ``javascript:`` or
``data:`` URL from a source would run, or mislead, wherever the link is shown), and a document's
path is percent-encoded when it becomes part of a URL."""

from __future__ import annotations

import re
from urllib.parse import quote

from docbuild.documents import Document, FileProblem

WEB_SCHEMES = frozenset({"http", "https"})
SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
IGNORED_BY_BROWSERS = re.compile(r"[\t\n\r]")  # removed from a URL before its scheme is read
PATH_SAFE = "/:@!$&'()*+,;="  # RFC 3986 allows these in a path as they are
C0_AND_SPACE = "".join(map(chr, range(0x21)))  # stripped from a URL's ends by browsers


def is_safe_url(url: str) -> bool:
    """Whether ``url`` is an ``http(s)`` URL or a relative one (no other scheme, however
    disguised by case, controls or whitespace, as a browser would read it)."""
    cleaned = IGNORED_BY_BROWSERS.sub("", url).strip(C0_AND_SPACE)
    scheme = SCHEME.match(cleaned)
    return scheme is None or scheme.group(1).lower() in WEB_SCHEMES


def url_of_path(base: str, path: str) -> str:
    """``base`` followed by ``path``, percent-encoded where a path may not hold a character as it
    is (``?``, ``#``, ``%``, spaces, non-ASCII), so the URL leads to that path."""
    return f"{base.rstrip('/')}/{quote(path.lstrip('/'), safe=PATH_SAFE)}"


def drop_unsafe_urls(documents: list[Document], relative: str) -> list[FileProblem]:
    """Remove each document's URL that is neither ``http(s)`` nor relative; a note for each,
    naming the file (and the document, when the file holds several)."""
    notes = []
    for doc in documents:
        if doc.url and not is_safe_url(doc.url):
            where = f" of document {doc.document_id!r}" if doc.document_id != relative else ""
            shown = doc.url if len(doc.url) <= 60 else doc.url[:57] + "..."
            reason = f"URL {shown!r}{where} dropped: only http(s) and relative links are kept"
            notes.append(FileProblem(relative, reason, skipped=False))
            doc.url = None
    return notes
