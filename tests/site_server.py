"""A documentation site on 127.0.0.1 for sync tests: a folder of real pages (from the corpora
beside the repository) served under a path, plus what real sites do to crawlers: robots.txt,
sitemap indexes, redirects (and redirect loops), pages made up by the test (or generated from
their query string, as a calendar's are), ETags and ``304 Not Modified``, pages that go away,
slow pages, bodies that trickle in, oversized bodies, ``429 Too Many Requests`` with
``Retry-After``, and a host that dies half-way. Every request is logged, with its headers and
when it started and ended.

:func:`hostile` makes a site with every hostile page at once (see its docstring)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

TYPES = {".html": "text/html; charset=utf-8", ".md": "text/markdown; charset=utf-8"}
LAST_MODIFIED = formatdate(1_700_000_000, usegmt=True)


@dataclass
class Hit:
    """One request the site answered."""

    path: str
    status: int
    headers: dict[str, str]
    started: float
    ended: float = 0.0
    query: str = ""


@dataclass
class Site:
    """What the site serves; tests change these between syncs."""

    mount: str = "/docs/"  # pages of ``folder`` are served under this path
    folder: Path | None = None
    robots: str | None = "User-agent: *\nAllow: /\n"  # None: 404
    pages: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # path -> (type, body)
    redirects: dict[str, str] = field(default_factory=dict)  # path -> Location
    gone: set[str] = field(default_factory=set)  # paths answering 404
    failing: set[str] = field(default_factory=set)  # paths answering 503 (no Retry-After)
    slow: dict[str, float] = field(default_factory=dict)  # path -> seconds before answering
    delay: float = 0.0  # seconds before answering every page
    hold_after: int | None = None  # page bodies sent before the rest wait for ``released``
    released: threading.Event = field(default_factory=threading.Event)
    too_many: dict[str, int] = field(default_factory=dict)  # path -> 429s still to answer
    retry_after: int = 1
    validators: bool = True  # ETag and Last-Modified (and 304 answers); False: neither
    generated: dict[str, Callable[[str], tuple[str, bytes]]] = field(default_factory=dict)
    # path -> a page made from the request's query string (a calendar: ?page=N)
    trickle: dict[str, float] = field(default_factory=dict)  # path -> seconds between bytes
    oversized: dict[str, tuple[int, bool]] = field(default_factory=dict)  # path -> (bytes,
    # whether Content-Length says so); the body is made up as it is sent
    die_after: int | None = None  # page bodies sent before the host dies (stops listening and
    # drops every connection)
    dead: threading.Event = field(default_factory=threading.Event)
    hits: list[Hit] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def body(self, path: str) -> tuple[str, bytes] | None:
        """The content type and body at ``path``, if the site has it."""
        if path in self.pages:
            return self.pages[path]
        if self.folder is None or not path.startswith(self.mount):
            return None
        relative = path[len(self.mount) :]
        if relative == "" or relative.endswith("/"):
            relative += "index.html"
        file = (self.folder / relative).resolve()
        if self.folder.resolve() not in file.parents or not file.is_file():
            return None
        return TYPES.get(file.suffix, "application/octet-stream"), file.read_bytes()

    def holds(self, path: str) -> bool:
        """Whether a request for ``path`` waits for ``released`` (``hold_after`` bodies sent)."""
        return (
            self.hold_after is not None
            and path.startswith(self.mount)
            and len(self.page_bodies()) >= self.hold_after
        )

    def page_bodies(self) -> list[str]:
        """Pages (not robots.txt or sitemaps) the site sent a body for."""
        return [h.path for h in self.page_hits(200) if not h.path.endswith(".xml")]

    def page_hits(self, status: int | None = None) -> list[Hit]:
        """Requests for pages (under the mount), answered with ``status`` if given."""
        return [
            h
            for h in self.hits
            if h.path.startswith(self.mount) and (status is None or h.status == status)
        ]


def handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if site.dead.is_set():  # hang up without a word
                self.close_connection = True
                return
            path, _, query = self.path.partition("?")
            headers = {k.lower(): v for k, v in self.headers.items()}
            hit = Hit(path, 0, headers, time.monotonic(), query=query)
            with site.lock:
                site.hits.append(hit)
                site.in_flight += 1
                site.most_in_flight = max(site.most_in_flight, site.in_flight)
            try:
                time.sleep(site.slow.get(path, site.delay if path.startswith(site.mount) else 0))
                if site.holds(path):
                    site.released.wait(30)
                hit.status = self.answer(path, query, hit.headers)
            finally:
                hit.ended = time.monotonic()
                with site.lock:
                    site.in_flight -= 1
            if site.die_after is not None and len(site.page_bodies()) >= site.die_after:
                site.dead.set()
                self.close_connection = True
                threading.Thread(target=self.server.shutdown, daemon=True).start()

        def answer(self, path: str, query: str, headers: dict[str, str]) -> int:
            if path in site.trickle:
                return self.trickle(site.trickle[path])
            if path in site.oversized:
                return self.oversized(*site.oversized[path])
            if path in site.generated:
                return self.send(200, *site.generated[path](query))
            if path == "/robots.txt":
                if site.robots is None:
                    return self.send(404, "text/plain", b"no robots.txt")
                return self.send(200, "text/plain", site.robots.encode())
            if path in site.redirects:
                return self.send(301, "text/plain", b"moved", {"Location": site.redirects[path]})
            if path in site.gone:
                return self.send(404, "text/html", b"<h1>Not found</h1>")
            if path in site.failing:
                return self.send(503, "text/html", b"<h1>Unavailable</h1>")
            with site.lock:
                throttled = site.too_many.get(path, 0) > 0
                if throttled:
                    site.too_many[path] -= 1
            if throttled:
                extra = {"Retry-After": str(site.retry_after)}
                return self.send(429, "text/plain", b"slow down", extra)
            found = site.body(path)
            if found is None:
                return self.send(404, "text/html", b"<h1>Not found</h1>")
            content_type, body = found
            if not site.validators:
                return self.send(200, content_type, body)
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            validators = {"ETag": etag, "Last-Modified": LAST_MODIFIED}
            if headers.get("if-none-match") == etag:
                return self.send(304, None, b"", validators)
            return self.send(200, content_type, body, validators)

        def trickle(self, pause: float) -> int:
            """A page whose body comes one byte every ``pause`` seconds."""
            body = page("Slow page", "A body sent one byte at a time.")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(pause)
            except OSError:  # the client gave up
                self.close_connection = True
            return 200

        def oversized(self, size: int, declared: bool) -> int:
            """An HTML page of ``size`` bytes, made up as it is sent (with a Content-Length
            only when ``declared``; else the body ends when the connection closes)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            if declared:
                self.send_header("Content-Length", str(size))
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            piece = b"<p>" + b"big " * 16_000 + b"</p>\n"
            try:
                for start in range(0, size, len(piece)):
                    self.wfile.write(piece[: size - start])
            except OSError:  # the client gave up
                self.close_connection = True
            return 200

        def send(
            self, status: int, content_type: str | None, body: bytes, extra: dict | None = None
        ) -> int:
            self.send_response(status)
            if content_type:
                self.send_header("Content-Type", content_type)
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)
            return status

    return Handler


class QuietServer(ThreadingHTTPServer):
    """Says nothing when a client hangs up mid-answer (as a stopped sync does)."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@contextmanager
def serving(site: Site) -> Iterator[str]:
    """Serve ``site`` on a free port of 127.0.0.1; yields its origin (``http://127.0.0.1:P``).
    A site that dies (``die_after``) stops listening: later connections are refused."""
    server = QuietServer(("127.0.0.1", 0), handler(site))

    def serve() -> None:
        server.serve_forever()
        server.server_close()  # stopped (the end of the test, or the host died): refuse

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(5)


def page(title: str, text: str, head: str = "", links: Sequence[str] = ()) -> bytes:
    """A small HTML page (UTF-8) with a title, a paragraph and links."""
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<!doctype html><html><head><title>{title}</title>{head}</head><body><main>"
        f"<h1>{title}</h1><p>{text}</p><ul>{anchors}</ul></main></body></html>"
    ).encode()


def calendar(mount: str) -> Callable[[str], tuple[str, bytes]]:
    """A link trap: ``calendar?page=N`` links to pages N - 1 and N + 1, without end."""

    def month(query: str) -> tuple[str, bytes]:
        n = int((parse_qs(query).get("page") or ["1"])[0])
        links = [f"{mount}calendar?page={n + 1}", f"{mount}calendar?page={max(n - 1, 1)}"]
        text = f"Events of month {n}: none planned."
        return "text/html; charset=utf-8", page(f"Month {n}", text, links=links)

    return month


CYRILLIC = "Справочник по установке: запустите программу и следуйте указаниям."
JAPANESE = "インストールの手引き：プログラムを起動して指示に従ってください。"
HOSTILE_PAGES = [  # below the mount, linked from its home page
    *("shared-a.html", "shared-b.html", "shared-c.html"),  # canonical: the home page
    *("cyrillic.html", "japanese.html", "notes.md"),  # charset only in the HTTP header
    "trickle.html",  # a body that trickles in
    "calendar?page=1",  # a link trap
    *("big.html", "big-stream.html"),  # over the size limit (declared, or not)
    "loop-a.html",  # a redirect loop
    *("missing.html", "download", "elsewhere.html"),  # 404, not a page, redirected off-site
    "markup.html",  # script and markup in its title and headings, script URLs in its links
]
SCRIPTED = (  # the body of markup.html: what a page's script or a link may try
    "<p>Installing the scripted tool: run <code>setup --quiet</code> and read "
    '<a href="javascript:alert(\'link\')">the notes</a>, '
    '<a href="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;">the data</a> and '
    '<a href=" JaVaScRiPt:alert(2)">more</a>.</p>'
    "<h2>Options <img src=x onerror=\"alert('h2')\"> &lt;script&gt;alert('escaped')&lt;/script&gt;</h2>"
    "<p>Every option of the scripted tool.</p><script>alert('inline')</script>"
)


def hostile(
    mount: str = "/docs/", big: int = 25_000_000, trickle: float = 0.5, die_after: int | None = None
) -> Site:
    """A site that does to a crawler what real sites do, every page linked from ``mount``
    (its home page), which :data:`HOSTILE_PAGES` lists:

    - ``shared-a/b/c.html``: distinct pages whose ``<link rel=canonical>`` names the home page;
    - ``cyrillic.html`` (windows-1251), ``japanese.html`` (Shift_JIS), ``notes.md``
      (windows-1251): the charset only in the ``Content-Type`` header; their text is
      :data:`CYRILLIC` or :data:`JAPANESE`;
    - ``trickle.html``: a body sent one byte every ``trickle`` seconds;
    - ``calendar?page=N``: a link trap, each month linking to the next, without end;
    - ``big.html`` and ``big-stream.html``: ``big`` bytes, over the default ``max_file_bytes``
      (20 MB), with and without a Content-Length;
    - ``loop-a.html`` → ``loop-b.html`` → ``loop-a.html``: a redirect loop;
    - ``missing.html`` answers 404, ``download`` is a zip file, ``elsewhere.html`` redirects to
      another site;
    - ``markup.html``: script and markup in its title, headings and text, and ``javascript:``
      and ``data:`` links;
    - with ``die_after``, the host dies after sending that many page bodies.

    Serve it with :func:`serving` and sync ``ORIGIN + mount`` with small limits, e.g.
    ``crawl: {requests_per_second: 100, deadline: 2, max_link_depth: 5, retries: 0}`` and
    ``max_file_bytes`` below ``big``: one sync then takes a few seconds."""
    site = Site(mount=mount)
    canonical = f'<link rel="canonical" href="{mount}">'
    site.pages[mount] = (
        "text/html; charset=utf-8",
        page("Home", "The manual.", canonical, HOSTILE_PAGES),
    )
    for name in ("a", "b", "c"):
        body = page(f"Topic {name.upper()}", f"All about topic {name}.", canonical)
        site.pages[f"{mount}shared-{name}.html"] = ("text/html", body)
    cyrillic = page("Установка", CYRILLIC).decode()
    site.pages[f"{mount}cyrillic.html"] = (
        "text/html; charset=windows-1251",
        cyrillic.encode("cp1251"),
    )
    japanese = page("インストール", JAPANESE).decode()
    site.pages[f"{mount}japanese.html"] = (
        "text/html; charset=Shift_JIS",
        japanese.encode("shift_jis"),
    )
    notes = f"# Заметки\n\n{CYRILLIC}\n".encode("cp1251")
    site.pages[f"{mount}notes.md"] = ("text/markdown; charset=windows-1251", notes)
    site.trickle[f"{mount}trickle.html"] = trickle
    site.generated[f"{mount}calendar"] = calendar(mount)
    site.oversized[f"{mount}big.html"] = (big, True)
    site.oversized[f"{mount}big-stream.html"] = (big, False)
    site.redirects[f"{mount}loop-a.html"] = f"{mount}loop-b.html"
    site.redirects[f"{mount}loop-b.html"] = f"{mount}loop-a.html"
    site.pages[f"{mount}download"] = ("application/zip", b"PK\x03\x04 not a page")
    site.redirects[f"{mount}elsewhere.html"] = "https://example.invalid/docs/"
    scripted = page("&lt;script&gt;alert('title')&lt;/script&gt; Scripted page", "", "")
    site.pages[f"{mount}markup.html"] = (
        "text/html; charset=utf-8",
        scripted.replace(b"<p></p>", SCRIPTED.encode()),
    )
    site.die_after = die_after
    return site
