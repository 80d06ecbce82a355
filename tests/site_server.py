"""A documentation site on 127.0.0.1 for sync tests: a folder of real pages (from the corpora
beside the repository) served under a path, plus what real sites do to crawlers: robots.txt,
sitemap indexes, redirects, pages made up by the test, ETags and ``304 Not Modified``, pages
that go away, slow pages and ``429 Too Many Requests`` with ``Retry-After``. Every request is
logged, with its headers and when it started and ended."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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
            path = self.path.split("?", 1)[0]
            hit = Hit(path, 0, {k.lower(): v for k, v in self.headers.items()}, time.monotonic())
            with site.lock:
                site.hits.append(hit)
                site.in_flight += 1
                site.most_in_flight = max(site.most_in_flight, site.in_flight)
            try:
                time.sleep(site.slow.get(path, site.delay if path.startswith(site.mount) else 0))
                if site.holds(path):
                    site.released.wait(30)
                hit.status = self.answer(path, hit.headers)
            finally:
                hit.ended = time.monotonic()
                with site.lock:
                    site.in_flight -= 1

        def answer(self, path: str, headers: dict[str, str]) -> int:
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
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            validators = {"ETag": etag, "Last-Modified": LAST_MODIFIED}
            if headers.get("if-none-match") == etag:
                return self.send(304, None, b"", validators)
            return self.send(200, content_type, body, validators)

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
    """Serve ``site`` on a free port of 127.0.0.1; yields its origin (``http://127.0.0.1:P``)."""
    server = QuietServer(("127.0.0.1", 0), handler(site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
