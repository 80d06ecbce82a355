"""A polite HTTP client for one site: a user agent that names the project, a request rate and a
number of requests in flight per host, retries with backoff on 429 and 5xx (honouring
``Retry-After``), timeouts and a deadline per request, a size limit, redirects followed one hop
at a time so that each hop is checked."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx

from docbuild.config import MAX_FILE_BYTES, CrawlConfig

RETRIED = frozenset({429, 500, 502, 503, 504})
MAX_REDIRECTS = 10
MAX_RETRY_AFTER = 300.0
"""A server asking for a longer pause than this (seconds) gets its page counted as failed."""
AGENT_TOKEN = "docs-mcp"
"""The user agent's product token: the name robots.txt groups are matched against."""


def user_agent() -> str:
    """``docs-mcp/VERSION (documentation sync; +https://pypi.org/project/docs-mcp/)``."""
    try:
        version = metadata.version("docs-mcp")
    except metadata.PackageNotFoundError:
        version = "dev"
    return f"{AGENT_TOKEN}/{version} (documentation sync for an MCP search server)"


class FetchError(Exception):
    """A request that failed: the host could not be reached, it timed out, or it kept answering
    429 or 5xx. Nothing is deleted because of one, and the next sync asks again."""


class Unreachable(FetchError):
    """A request the host gave no answer to: it refused or dropped the connection, or did not
    answer (or finish answering) in time."""


class Refused(FetchError):
    """A request that trying again will not fix: a body over the size limit, a redirect loop,
    too many redirects."""


@dataclass
class Response:
    """What one GET came to, after redirects."""

    url: str  # the final URL
    status: int
    headers: httpx.Headers
    body: bytes | None = None  # None: not read (304, an error, a type that is not kept)
    redirects: list[str] = field(default_factory=list)  # the URLs redirected from, in order
    stopped_at: str | None = None  # a redirect target that was refused (another site, robots)


class Pace:
    """Spaces the requests to one host ``interval`` seconds apart; a 429 pauses them all."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.next_at = 0.0
        self.lock = asyncio.Lock()
        self.starts: list[float] = []  # the start times handed out, in order (monotonic clock)

    async def wait(self) -> None:
        """Return when the next request may start."""
        async with self.lock:
            now = time.monotonic()
            start = max(now, self.next_at)
            self.next_at = start + self.interval
            self.starts.append(start)
        await asyncio.sleep(start - now)

    def pause(self, seconds: float) -> None:
        """No request to this host before ``seconds`` from now."""
        self.next_at = max(self.next_at, time.monotonic() + seconds)


class PoliteClient:
    """GETs pages of one site within the crawl settings; use as ``async with``."""

    def __init__(
        self, crawl: CrawlConfig, max_bytes: int = MAX_FILE_BYTES, agent: str | None = None
    ) -> None:
        self.crawl = crawl
        self.max_bytes = max_bytes  # a larger page is refused (max_file_bytes)
        self.agent = agent or user_agent()
        self.paces: dict[str, Pace] = {}
        self.slots: dict[str, asyncio.Semaphore] = {}
        self.delays: dict[str, float] = {}  # host -> robots.txt Crawl-delay
        self.requests = 0
        self.client = httpx.AsyncClient(
            http2=True,
            follow_redirects=False,
            timeout=httpx.Timeout(crawl.timeout),
            headers={"User-Agent": self.agent},
            limits=httpx.Limits(max_connections=crawl.max_in_flight * 2),
        )

    async def __aenter__(self) -> PoliteClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    def slow_down(self, host: str, delay: float | None) -> None:
        """Honour a robots.txt ``Crawl-delay`` for ``host`` (it can only slow requests down)."""
        if delay:
            self.delays[host] = float(delay)
            self.paces.pop(host, None)

    def _pace(self, host: str) -> Pace:
        if host not in self.paces:
            interval = max(1.0 / self.crawl.requests_per_second, self.delays.get(host, 0.0))
            self.paces[host] = Pace(interval)
            self.slots.setdefault(host, asyncio.Semaphore(self.crawl.max_in_flight))
        return self.paces[host]

    async def get(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        keep: Callable[[httpx.Headers, str], bool] = lambda h, u: True,
        follow: Callable[[str], bool] = lambda u: True,
        max_bytes: int | None = None,
    ) -> Response:
        """GET ``url``, following redirects that ``follow`` allows; the body is read only when
        the status is 200 and ``keep(headers, final_url)`` says so, and only up to ``max_bytes``
        (default: the client's limit). Raises :class:`FetchError` (:class:`Refused` for a
        failure that trying again will not fix)."""
        limit = max_bytes or self.max_bytes
        redirects: list[str] = []
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._attempts(current, headers or {}, keep, limit)
            location = response.headers.get("location")
            if response.status not in (301, 302, 303, 307, 308) or not location:
                response.redirects = redirects
                return response
            redirects.append(current)
            target = urljoin(current, location)
            if urldefrag(target)[0] in redirects:
                raise Refused(f"redirect loop: {' → '.join([*redirects, target])}")
            if not follow(target):
                return Response(current, response.status, response.headers, None, redirects, target)
            current = target
        raise Refused(f"more than {MAX_REDIRECTS} redirects (the last to {current})")

    async def _attempts(
        self,
        url: str,
        headers: dict[str, str],
        keep: Callable[[httpx.Headers, str], bool],
        limit: int,
    ) -> Response:
        host = urlsplit(url).netloc
        pace = self._pace(host)
        last, error = "", FetchError
        for attempt in range(self.crawl.retries + 1):
            await pace.wait()
            async with self.slots[host]:
                try:
                    async with asyncio.timeout(self.crawl.deadline):
                        response = await self._once(url, headers, keep, limit)
                except httpx.ConnectError as exc:  # refused or no such host: not worth retrying
                    raise Unreachable(f"cannot reach {host}: {describe(exc)}") from None
                except httpx.TimeoutException:
                    last, error = f"no answer within {self.crawl.timeout:g} s", Unreachable
                except TimeoutError:  # the deadline: a body that trickles in
                    last = f"not complete within {self.crawl.deadline:g} s (crawl.deadline)"
                    error = Unreachable
                except httpx.TransportError as exc:
                    last, error = f"cannot reach {host}: {describe(exc)}", Unreachable
                else:
                    if response.status not in RETRIED:
                        return response
                    last, error = f"HTTP {response.status}", FetchError
                    wait = retry_after(response.headers.get("retry-after"))
                    if wait is not None and wait > MAX_RETRY_AFTER:
                        raise FetchError(f"{last}, retry after {wait:.0f} s: given up")
                    if wait is not None:
                        pace.pause(wait)
                        continue
            if attempt < self.crawl.retries:
                await asyncio.sleep(min(30.0, 2**attempt) * (0.5 + random.random() / 2))
        tries = self.crawl.retries + 1
        raise error(f"{last} (after {tries} {'try' if tries == 1 else 'tries'})")

    async def _once(
        self,
        url: str,
        headers: dict[str, str],
        keep: Callable[[httpx.Headers, str], bool],
        limit: int,
    ) -> Response:
        self.requests += 1
        async with self.client.stream("GET", url, headers=headers) as r:
            if r.status_code != 200 or not keep(r.headers, url):
                return Response(url, r.status_code, r.headers)
            size = r.headers.get("content-length", "")
            if size.isdigit() and int(size) > limit:
                raise Refused(f"{int(size):,} bytes, {too_large(limit)}")
            body = bytearray()
            async for piece in r.aiter_bytes():
                body += piece
                if len(body) > limit:
                    raise Refused(too_large(limit))
            return Response(url, 200, r.headers, bytes(body))


def too_large(limit: int) -> str:
    """Why a body over ``limit`` bytes is refused."""
    return f"larger than max_file_bytes ({limit:,} bytes), which the build would skip"


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds, or an HTTP date); None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def describe(exc: httpx.TransportError) -> str:
    """A transport error in a few words (its innermost cause)."""
    cause: BaseException = exc
    while cause.__cause__ is not None or cause.__context__ is not None:
        cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
    return str(cause) or type(cause).__name__
