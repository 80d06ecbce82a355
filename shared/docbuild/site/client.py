"""A polite HTTP client for one site: a user agent that names the project, a request rate and a
number of requests in flight per host, retries with backoff on 429 and 5xx (honouring
``Retry-After``), timeouts, redirects followed one hop at a time so that each hop is checked."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from urllib.parse import urljoin, urlsplit

import httpx

from docbuild.config import CrawlConfig

RETRIED = frozenset({429, 500, 502, 503, 504})
MAX_REDIRECTS = 10
MAX_BODY_BYTES = 50_000_000
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
    """A request that failed for good: the host could not be reached, it timed out, or it kept
    answering 429 or 5xx. Nothing is deleted because of one."""


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

    async def wait(self) -> None:
        """Return when the next request may start."""
        async with self.lock:
            now = time.monotonic()
            start = max(now, self.next_at)
            self.next_at = start + self.interval
        await asyncio.sleep(start - now)

    def pause(self, seconds: float) -> None:
        """No request to this host before ``seconds`` from now."""
        self.next_at = max(self.next_at, time.monotonic() + seconds)


class PoliteClient:
    """GETs pages of one site within the crawl settings; use as ``async with``."""

    def __init__(self, crawl: CrawlConfig, agent: str | None = None) -> None:
        self.crawl = crawl
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
    ) -> Response:
        """GET ``url``, following redirects that ``follow`` allows; the body is read only when
        the status is 200 and ``keep(headers, final_url)`` says so. Raises :class:`FetchError`."""
        redirects: list[str] = []
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._attempts(current, headers or {}, keep)
            location = response.headers.get("location")
            if response.status not in (301, 302, 303, 307, 308) or not location:
                response.redirects = redirects
                return response
            redirects.append(current)
            target = urljoin(current, location)
            if not follow(target):
                return Response(current, response.status, response.headers, None, redirects, target)
            current = target
        raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects")

    async def _attempts(
        self, url: str, headers: dict[str, str], keep: Callable[[httpx.Headers, str], bool]
    ) -> Response:
        host = urlsplit(url).netloc
        pace = self._pace(host)
        last = ""
        for attempt in range(self.crawl.retries + 1):
            await pace.wait()
            async with self.slots[host]:
                try:
                    response = await self._once(url, headers, keep)
                except httpx.ConnectError as exc:  # refused or no such host: not worth retrying
                    raise FetchError(f"cannot reach {host}: {describe(exc)}") from None
                except httpx.TimeoutException:
                    last = f"no answer within {self.crawl.timeout:g} s"
                except httpx.TransportError as exc:
                    last = f"cannot reach {host}: {describe(exc)}"
                else:
                    if response.status not in RETRIED:
                        return response
                    last = f"HTTP {response.status}"
                    wait = retry_after(response.headers.get("retry-after"))
                    if wait is not None and wait > MAX_RETRY_AFTER:
                        raise FetchError(f"{last}, retry after {wait:.0f} s: given up")
                    if wait is not None:
                        pace.pause(wait)
                        continue
            if attempt < self.crawl.retries:
                await asyncio.sleep(min(30.0, 2**attempt) * (0.5 + random.random() / 2))
        raise FetchError(f"{last} (after {self.crawl.retries + 1} tries)")

    async def _once(
        self, url: str, headers: dict[str, str], keep: Callable[[httpx.Headers, str], bool]
    ) -> Response:
        self.requests += 1
        async with self.client.stream("GET", url, headers=headers) as r:
            if r.status_code != 200 or not keep(r.headers, url):
                return Response(url, r.status_code, r.headers)
            size = int(r.headers.get("content-length") or 0)
            if size > MAX_BODY_BYTES:
                raise FetchError(f"{size} bytes: larger than {MAX_BODY_BYTES // 1_000_000} MB")
            body = bytearray()
            async for piece in r.aiter_bytes():
                body += piece
                if len(body) > MAX_BODY_BYTES:
                    raise FetchError(f"larger than {MAX_BODY_BYTES // 1_000_000} MB")
            return Response(url, 200, r.headers, bytes(body))


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
