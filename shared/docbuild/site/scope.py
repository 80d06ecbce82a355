"""Which URLs of a site are its documentation pages, and the file each page is kept in."""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urldefrag, urljoin, urlsplit, urlunsplit

from docbuild.config import CrawlConfig

_NOT_PAGES = (
    ".png .jpg .jpeg .gif .svg .webp .ico .bmp .tif .tiff .avif .mp3 .mp4 .webm .ogg .wav"
    " .mov .zip .tar .gz .tgz .bz2 .xz .7z .rar .whl .egg .exe .dmg .msi .deb .rpm .jar"
    " .iso .bin .woff .woff2 .ttf .otf .eot .css .js .mjs .map .json .xml .rss .atom"
    " .epub .mobi .doc .docx .xls .xlsx .ppt .pptx .csv .ps"
)
SKIPPED_EXTENSIONS = frozenset(_NOT_PAGES.split(" "))
"""Extensions that are never documentation pages: such links are not even requested."""
KINDS = {"text/html": "html", "application/xhtml+xml": "html", "text/markdown": "md"}
"""Content types kept, and the format each is stored as (see :func:`kind_of`)."""
PDF = "application/pdf"


@lru_cache(maxsize=1 << 16)  # a site's pages link to the same pages over and over
def normalize(url: str) -> str:
    """``url`` without its fragment, with a lower-case scheme and host and no default port."""
    url, _ = urldefrag(url.strip())
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port
    if port and (parts.scheme.lower(), port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), host, parts.path or "/", parts.query, ""))


@lru_cache(maxsize=1 << 16)
def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``."""
    parts = urlsplit(normalize(url))
    return f"{parts.scheme}://{parts.netloc}"


def folder_of(url: str) -> str:
    """The folder a start URL stands for: itself when it ends in ``/`` or its last segment has no
    dot (``/guide`` is the guide), else the folder holding the page (``/guide/intro.html``)."""
    url = normalize(url)
    parts = urlsplit(url)
    path = parts.path
    last = path.rsplit("/", 1)[-1]
    if last and "." not in last:
        path += "/"
    elif last:
        path = path[: -len(last)]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def kind_of(content_type: str | None, url: str) -> str | None:
    """How a response is kept: ``html``, ``md`` or ``pdf``; None for anything else. Markdown
    served as ``text/plain`` (as many ``.md`` files are) counts as Markdown."""
    mime = (content_type or "").split(";")[0].strip().lower()
    if mime in KINDS:
        return KINDS[mime]
    if mime == PDF:
        return "pdf"
    if mime in ("text/plain", "text/x-markdown") and urlsplit(url).path.endswith((".md", ".mdx")):
        return "md"
    return None


@dataclass(frozen=True)
class Scope:
    """The pages a sync may fetch: under ``prefix`` (same origin), matching the globs."""

    start: str
    prefix: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, start: str, crawl: CrawlConfig) -> Scope:
        """The scope of a site source: its start URL and its crawl settings."""
        start = normalize(start)
        prefix = normalize(crawl.stay_under) if crawl.stay_under else folder_of(start)
        return cls(start, prefix, tuple(crawl.include), tuple(crawl.exclude))

    @property
    def origin(self) -> str:
        """The one origin the sync talks to."""
        return origin(self.prefix)

    def relative(self, url: str) -> str | None:
        """``url``'s path below the prefix (``""`` for the prefix itself); None when outside."""
        url = normalize(url)
        if origin(url) != self.origin:
            return None
        path = urlsplit(url).path
        base = urlsplit(self.prefix).path
        if path == base.rstrip("/"):
            return ""
        if not path.startswith(base):
            return None
        return unquote(path[len(base) :])

    def contains(self, url: str) -> bool:
        """Whether ``url`` is a page of this site: under the prefix, not an obvious non-page
        (an image, an archive, a stylesheet), matching ``include`` and not ``exclude``."""
        relative = self.relative(url)
        if relative is None:
            return False
        if posixpath.splitext(relative)[1].lower() in SKIPPED_EXTENSIONS:
            return False
        if self.include and not matches(relative, url, self.include):
            return False
        return not matches(relative, url, self.exclude)

    def link(self, base: str, href: str) -> str | None:
        """``href`` (as found on page ``base``) made absolute and normalized, if it is a page of
        this site."""
        href = href.strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "tel:", "data:")):
            return None
        url = normalize(urljoin(base, href))
        if urlsplit(url).scheme not in ("http", "https"):
            return None
        return url if self.contains(url) else None

    def file_for(self, url: str, kind: str) -> str:
        """The file (relative to the source folder) that keeps page ``url`` read as ``kind``:
        ``guide/`` → ``guide/index.html``, ``guide/intro`` → ``guide/intro.html``; a Markdown
        alternate keeps its name; a query string becomes part of the name."""
        relative = self.relative(url)
        if relative is None:
            raise ValueError(f"{url} is not under {self.prefix}")
        parts = [p for p in relative.split("/") if p not in ("", ".", "..")]
        if not parts or relative.endswith("/"):
            parts.append("index")
        stem, extension = posixpath.splitext(parts[-1])
        wanted = {"html": (".html", ".htm"), "md": (".md",), "pdf": (".pdf",)}[kind]
        query = urlsplit(normalize(url)).query
        if query:
            stem = f"{stem}{extension}_{hashlib.sha1(query.encode()).hexdigest()[:8]}"
            extension = ""
        if extension.lower() not in wanted:
            stem, extension = stem + extension, wanted[0]
        parts[-1] = safe_name(stem) + extension
        return (
            "/".join(safe_name(p) for p in parts[:-1]) + ("/" if len(parts) > 1 else "") + parts[-1]
        )


def safe_name(part: str) -> str:
    """One path segment as a file name: no separators, no control characters, not hidden."""
    cleaned = "".join("_" if c in '\\:*?"<>|' or ord(c) < 32 else c for c in part)
    return cleaned.lstrip(".") or "_"


def matches(relative: str, url: str, patterns: tuple[str, ...]) -> bool:
    """Whether a glob matches the page's path below the prefix (``api/**``) or, for a pattern
    that starts with ``http``, its whole URL."""
    for pattern in patterns:
        target = url if pattern.startswith(("http://", "https://")) else relative
        if fnmatch.fnmatch(target, pattern):
            return True
        if pattern.startswith("**/") and fnmatch.fnmatch(target, pattern[3:]):
            return True
    return False
