"""Sync a documentation site into its source folder: discover its pages (``llms.txt``, sitemaps,
then links from the start page, breadth first), fetch them politely, keep one file per page
and a manifest, and on a resync ask only for what changed.

Safety: a page is deleted only when the site answers 404 or 410 for it (or it has left the
configured scope); a timeout, a 5xx or a network failure keeps the page as it was. Pages are
written whole or not at all, and an interrupted sync resumes without fetching again what it
already had. A sync whose requests keep failing stops early and says so, and every URL not
kept is listed with its reason in the sync report.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
from protego import Protego
from tqdm import tqdm

from docbuild.config import MAX_FILE_BYTES, SourceConfig
from docbuild.site.charset import as_utf8
from docbuild.site.client import (
    AGENT_TOKEN,
    FetchError,
    PoliteClient,
    Refused,
    Response,
    Unreachable,
)
from docbuild.site.discovery import (
    PageLinks,
    html_links,
    llms_links,
    page_of_markdown,
    read_sitemap,
    text_digest,
)
from docbuild.site.manifest import (
    Manifest,
    PageRecord,
    Refusal,
    now,
    remove_partials,
    write_atomically,
)
from docbuild.site.report import SyncReport
from docbuild.site.scope import Scope, kind_of, normalize, origin

GONE = frozenset({404, 410})
CHECKPOINT_SECONDS = 5.0
MAX_SITEMAPS = 50
MAX_DISCOVERY_BYTES = 50_000_000  # robots.txt, llms.txt and sitemaps (50 MB: the sitemap limit)
SHARED_CANONICAL = 3  # pages of different content naming one canonical URL: warned of
FAILURES_IN_A_ROW = 10
"""Requests in a row that get no answer at all (the connection refused or dropped, no answer in
time) that stop the sync: the site is down."""


class SiteError(RuntimeError):
    """The site cannot be synced at all; the message says why and what to try."""


def sync_site(
    source: SourceConfig, max_bytes: int = MAX_FILE_BYTES, retry_refused: bool = False
) -> SyncReport:
    """Fetch ``source.site_url``'s pages into ``source.path``, keeping none larger than
    ``max_bytes``; ``retry_refused`` asks again about URLs refused for good by an earlier sync.
    Raises :class:`SiteError` when the sync cannot start; a sync that stops early says why in
    its report's ``stopped``."""
    assert source.site_url, "a site source"
    return asyncio.run(SiteSync(source, max_bytes, retry_refused).run())


class SiteSync:
    """One sync of one site."""

    def __init__(
        self, source: SourceConfig, max_bytes: int = MAX_FILE_BYTES, retry_refused: bool = False
    ) -> None:
        assert source.site_url
        self.source = source
        self.crawl = source.crawl
        self.max_bytes = max_bytes
        self.folder = source.path
        self.scope = Scope.of(source.site_url, source.crawl)
        if self.scope.relative(self.scope.start) is None:
            raise SiteError(
                f"the start URL {source.site_url} is not under crawl.stay_under "
                f"({self.scope.prefix}): widen stay_under or start inside it"
            )
        self.report = SyncReport(source.site_url, self.folder)
        self.previous = Manifest.load(self.folder)
        resuming = self.previous is not None and not self.previous.complete
        started = self.previous.started_at if resuming and self.previous else now()
        self.resume_since = started if resuming else None
        self.manifest = Manifest(origin=source.site_url, started_at=started)
        self.old_by_url: dict[str, tuple[str, PageRecord]] = {}
        for name, record in (self.previous.pages if self.previous else {}).items():
            for url in (record.url, record.final_url, *record.aliases):
                self.old_by_url.setdefault(normalize(url), (name, record))
        refused = self.previous.refused if self.previous and not retry_refused else {}
        self.refused_before = {url: why for url, why in refused.items() if not why.due()}
        self.seen: set[str] = set()  # URLs queued or answered
        self.depth: dict[str, int] = {}  # a queued URL -> links from the start page
        self.too_deep: dict[str, int] = {}  # links found beyond max_link_depth (not queued)
        self.variants: dict[str, int] = {}  # a URL without its query -> variants queued
        self.capped: set[str] = set()  # URLs whose query variants reached max_query_variants
        self.beyond_max_pages = 0
        self.failures_in_a_row = 0
        self.halt = asyncio.Event()  # set to stop the sync early (see report.stopped)
        self.claimed: dict[str, str] = {}  # page URL or file -> the URL that claimed it
        self.canonical_texts: dict[str, set[str]] = {}  # a canonical URL -> texts naming it
        self.aliases: dict[str, set[str]] = {}  # a claiming URL -> other URLs of its page
        self.failed_files: set[str] = set()  # files kept because their page failed
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.robots: Protego | None = None
        self.bar: tqdm | None = None
        self.last_checkpoint = time.monotonic()

    async def run(self) -> SyncReport:
        """Discover, fetch, remove what is gone, save the manifest."""
        began = time.monotonic()
        created = not self.folder.exists()
        self.folder.mkdir(parents=True, exist_ok=True)
        remove_partials(self.folder)
        try:
            await self.sync()
        except SiteError:
            if created and not self.manifest.pages:  # a first sync that found nothing
                shutil.rmtree(self.folder, ignore_errors=True)
            raise
        except BaseException as exc:  # Ctrl-C, SIGTERM: what was fetched is kept
            self.checkpoint(force=True)
            interrupted = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
            self.report.stopped = "stopped by Ctrl-C or SIGTERM" if interrupted else str(exc)
            self.close_report(began)
            raise
        self.close_report(began)
        return self.report

    async def sync(self) -> None:
        """Everything :meth:`run` does once the folder is there."""
        async with PoliteClient(self.crawl, self.max_bytes) as client:
            self.client = client
            await self.read_robots()
            self.seen.add(self.scope.start)
            self.depth[self.scope.start] = 0
            self.report.found += 1
            self.bar = tqdm(
                desc="sync", unit="page", total=1, leave=False, mininterval=1.0, disable=None
            )
            try:
                await self.crawl_site()
            finally:
                self.bar.close()
                self.report.requests = client.requests
        if self.report.stopped:
            self.checkpoint(force=True)
            return
        if not self.manifest.pages and not self.failed_files:
            raise SiteError(self.nothing_found())
        self.finish()

    async def crawl_site(self) -> None:
        """Queue the start page, the discovery files' pages and the pages kept before, then
        fetch until the queue is empty or the sync is halted."""
        start = self.scope.start
        answer = None if self.reusable(start) else await self.fetch_start()
        for url in await self.discover():  # llms.txt and sitemaps go first
            self.enqueue(url)
        for record in self.previous.pages.values() if self.previous else ():
            self.enqueue(normalize(record.url), record.depth)  # every kept page is asked about
        if answer is None:
            self.reuse(start)
        else:
            await self.handle(start, answer)  # its links are queued after the others
        workers = [asyncio.create_task(self.work()) for _ in range(self.crawl.max_in_flight)]
        waits = [asyncio.create_task(self.queue.join()), asyncio.create_task(self.halt.wait())]
        try:  # until every page is done, the sync is halted, or a worker fails (a full disk)
            await asyncio.wait(waits + workers, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in workers + waits:
                task.cancel()
        for worker in workers:
            if worker.done() and not worker.cancelled() and worker.exception():
                raise worker.exception()  # type: ignore[misc]

    def nothing_found(self) -> str:
        """Why a sync kept no page at all."""
        if self.report.failed:
            url, why = self.report.failed[0]
            return (
                f"could not fetch any page under {self.scope.prefix}: {len(self.report.failed)} "
                f"failed (the first, {url}: {why}); try the sync again later"
            )
        return (
            f"found no documentation pages under {self.scope.prefix} (from {self.scope.start}): "
            "check the URL, crawl.include and crawl.exclude"
        )

    # -- robots.txt and the start page ----------------------------------------------------

    async def read_robots(self) -> None:
        """Fetch robots.txt; a 4xx means no rules, a 5xx means stay away (RFC 9309)."""
        url = f"{self.scope.origin}/robots.txt"
        try:
            answer = await self.client.get(
                url,
                follow=lambda u: origin(u) == self.scope.origin,
                max_bytes=MAX_DISCOVERY_BYTES,
            )
        except FetchError as exc:
            raise SiteError(
                f"cannot fetch {url}: {exc}. Is {self.scope.origin} reachable?"
            ) from None
        if answer.status >= 500:
            raise SiteError(
                f"{url} answered HTTP {answer.status}: the site asks crawlers to stay away for "
                "now; try the sync again later"
            )
        if answer.status == 200 and answer.body is not None:
            self.robots = Protego.parse(answer.body.decode("utf-8", "replace"))
            host = httpx.URL(self.scope.origin).netloc.decode()
            self.client.slow_down(host, self.robots.crawl_delay(AGENT_TOKEN))
        if not self.allowed(self.scope.start):
            raise SiteError(
                f"{url} forbids {AGENT_TOKEN} from fetching {self.scope.start}: nothing can be "
                "synced (ask the site's owners, or use a local copy of the docs: --source PATH)"
            )

    def allowed(self, url: str) -> bool:
        """Whether robots.txt lets this project's user agent fetch ``url``."""
        return self.robots is None or self.robots.can_fetch(url, AGENT_TOKEN)

    async def fetch_start(self) -> Response:
        """The start page; any problem with it is a :class:`SiteError`."""
        url = self.scope.start
        try:
            answer = await self.request(url)
        except FetchError as exc:
            raise SiteError(f"cannot fetch the start page {url}: {exc}") from None
        if answer.stopped_at:
            raise SiteError(
                f"the start page {url} redirects to {answer.stopped_at}, outside "
                f"{self.scope.prefix}: sync that URL instead (--url {answer.stopped_at})"
            )
        if answer.status not in (200, 304):
            raise SiteError(f"the start page {url} answered HTTP {answer.status}")
        if answer.status == 200 and answer.body is None:
            kind = answer.headers.get("content-type", "no content type")
            raise SiteError(
                f"the start page {url} is not HTML ({kind}): give the URL of a page of the "
                "documentation site"
            )
        return answer

    # -- discovery ----------------------------------------------------------------------------

    async def discover(self) -> list[str]:
        """Pages named by ``llms.txt`` (under the prefix, else at the root) and by sitemaps
        (robots.txt's, the prefix's, the root's, and the indexes they list)."""
        found: list[str] = []
        for where in dict.fromkeys([self.scope.prefix, self.scope.origin + "/"]):
            text = await self.fetch_text(urljoin(where, "llms.txt"))
            if text is not None:
                base = urljoin(where, "llms.txt")
                found += [u for href in llms_links(text) if (u := self.scope.link(base, href))]
                break
        queue = list(self.robots.sitemaps) if self.robots else []
        queue += [urljoin(self.scope.prefix, "sitemap.xml"), self.scope.origin + "/sitemap.xml"]
        read: set[str] = set()
        while queue and len(read) < MAX_SITEMAPS:
            url = normalize(queue.pop(0))
            if url in read or origin(url) != self.scope.origin or not self.allowed(url):
                continue
            read.add(url)
            body = await self.fetch_bytes(url)
            if body is None:
                continue
            sitemap = read_sitemap(body)
            queue += sitemap.sitemaps
            found += [u for loc in sitemap.pages if (u := self.scope.link(url, loc))]
        return found

    async def fetch_bytes(self, url: str) -> bytes | None:
        """The body of a discovery file, or None when it is missing or failed."""
        try:
            answer = await self.client.get(
                url,
                follow=lambda u: origin(u) == self.scope.origin,
                max_bytes=MAX_DISCOVERY_BYTES,
            )
        except FetchError:
            return None
        return answer.body if answer.status == 200 else None

    async def fetch_text(self, url: str) -> str | None:
        """A text discovery file (``llms.txt``); None unless it is served as text."""
        body = await self.fetch_bytes(url)
        return body.decode("utf-8", "replace") if body is not None else None

    # -- fetching pages --------------------------------------------------------------------

    def enqueue(self, url: str, depth: int = 0) -> None:
        """Queue ``url``, found ``depth`` links from the start page, unless it was queued
        before, robots.txt forbids it, or a crawl limit leaves it out (each such URL is
        reported)."""
        if url in self.seen:
            return
        if depth > self.crawl.max_link_depth:  # queued after all if found nearer the start
            self.too_deep.setdefault(url, depth)
            return
        self.too_deep.pop(url, None)
        self.seen.add(url)
        if not self.allowed(url):
            self.report.forbidden.append(url)
            return
        beyond = self.beyond_limits(url)
        if beyond:
            self.report.skipped.append((url, beyond))
            return
        if url.endswith(".md"):  # a Markdown alternate stands for its page: not asked twice
            self.seen.add(page_of_markdown(url))
        self.depth[url] = depth
        self.report.found += 1
        if self.bar is not None:
            self.bar.total = self.report.found
            self.bar.refresh()
        self.queue.put_nowait(url)

    def beyond_limits(self, url: str) -> str | None:
        """Why ``max_pages`` or ``max_query_variants`` leaves ``url`` out; None if neither."""
        if self.report.found >= self.crawl.max_pages:
            self.beyond_max_pages += 1
            return f"beyond crawl.max_pages ({self.crawl.max_pages})"
        if not urlsplit(url).query:
            return None
        path = url.split("?", 1)[0]
        if self.variants.get(path, 0) >= self.crawl.max_query_variants:
            self.capped.add(path)
            return (
                f"more than crawl.max_query_variants ({self.crawl.max_query_variants}) URLs of "
                f"{path} differ only by their query string"
            )
        self.variants[path] = self.variants.get(path, 0) + 1
        return None

    async def work(self) -> None:
        """Take URLs off the queue until cancelled."""
        while True:
            url = await self.queue.get()
            try:
                await self.visit(url)
            finally:
                self.queue.task_done()

    async def visit(self, url: str) -> None:
        """Fetch one page (or reuse it) and keep what it answered."""
        if self.reuse(url) or self.refused_earlier(url):
            return
        try:
            answer = await self.request(url)
        except Unreachable as exc:
            self.fail(url, str(exc))
            self.unreachable(url, str(exc))
        except Refused as exc:
            self.refuse(url, str(exc))
        except FetchError as exc:  # answers (5xx, 429) that never turned into a page
            self.failures_in_a_row = 0
            self.fail(url, str(exc))
        else:
            self.failures_in_a_row = 0
            await self.handle(url, answer)
        self.checkpoint()

    def unreachable(self, url: str, why: str) -> None:
        """Halt the sync when :data:`FAILURES_IN_A_ROW` requests in a row got no answer."""
        self.failures_in_a_row += 1
        if self.failures_in_a_row >= FAILURES_IN_A_ROW and not self.halt.is_set():
            self.report.stopped = (
                f"{FAILURES_IN_A_ROW} requests in a row got no answer, the last {url}: {why}; "
                "the site seems to be down"
            )
            self.halt.set()

    def reusable(self, url: str) -> tuple[str, PageRecord] | None:
        """The file and record of ``url`` if the interrupted sync this one resumes fetched it."""
        old = self.old_by_url.get(url)
        if self.resume_since is None or old is None:
            return None
        name, record = old
        if record.fetched_at < self.resume_since or not (self.folder / name).is_file():
            return None
        return old

    def reuse(self, url: str) -> bool:
        """Keep a page the interrupted sync already fetched, without asking again."""
        old = self.reusable(url)
        if old is None:
            return False
        name, record = old
        path = self.folder / name
        if not self.claim(record.page_url, name, url, record.content_hash):
            return True
        self.manifest.pages[name] = record
        self.report.resumed += 1
        self.follow_links(url, record, path.read_bytes())
        self.tick()
        return True

    async def request(self, url: str) -> Response:
        """GET ``url``, conditionally when its page is kept from before."""
        headers: dict[str, str] = {}
        old = self.old_by_url.get(url)
        if old and (self.folder / old[0]).is_file():
            if old[1].etag:
                headers["If-None-Match"] = old[1].etag
            if old[1].last_modified:
                headers["If-Modified-Since"] = old[1].last_modified
        return await self.client.get(
            url,
            headers,
            keep=lambda h, u: kind_of(h.get("content-type"), u) is not None,
            follow=lambda u: self.scope.contains(normalize(u)) and self.allowed(normalize(u)),
        )

    async def handle(self, url: str, answer: Response) -> None:
        """Keep, refresh or drop the page ``url`` after the site's ``answer``."""
        for hop in [*answer.redirects, answer.url]:
            self.seen.add(normalize(hop))
        if answer.stopped_at:
            self.skip(url, f"redirects to {answer.stopped_at}, outside the site or forbidden")
        elif answer.status == 304 and url in self.old_by_url:
            self.unchanged(url, answer)
        elif answer.status in GONE:
            self.report.missing.append((url, f"HTTP {answer.status}"))
            self.tick()  # its old file, if any, is removed at the end
        elif answer.status == 200 and answer.body is None:
            kind = answer.headers.get("content-type") or "no content type"
            self.skip(url, f"not a documentation page ({kind})")
        elif answer.status == 200 and answer.body is not None:
            self.keep(url, answer, answer.body)
        else:
            self.fail(url, f"HTTP {answer.status}")
        twin = page_of_markdown(url)
        if twin != url and twin not in self.claimed and answer.status not in (200, 304):
            self.seen.discard(twin)  # no Markdown after all: the page itself, then
            self.enqueue(twin, self.depth.get(url, 0))

    def unchanged(self, url: str, answer: Response) -> None:
        """A 304: the page on disk is current."""
        name, record = self.old_by_url[url]
        if not self.claim(record.page_url, name, url, record.content_hash):
            return
        record = replace(
            record,
            fetched_at=now(),
            status=304,
            etag=answer.headers.get("etag") or record.etag,
            last_modified=answer.headers.get("last-modified") or record.last_modified,
            depth=self.depth.get(url, record.depth),
        )
        self.manifest.pages[name] = record
        self.report.unchanged += 1
        self.follow_links(url, record, (self.folder / name).read_bytes())
        self.tick()

    def keep(self, url: str, answer: Response, body: bytes) -> None:
        """A page's body: saved under its file name (as UTF-8 when only the HTTP header named
        its charset) unless it is a duplicate."""
        final = normalize(answer.url)
        content_type = answer.headers.get("content-type", "")
        kind = kind_of(content_type, final) or "html"
        self.report.downloaded += 1
        body = as_utf8(body, content_type, kind)
        links = html_links(body) if kind == "html" else None
        page = page_of_markdown(final) if kind == "md" else final
        same = self.same_as(page, links, body)
        if links:
            self.enqueue_links(final, links.base, links.links, self.depth.get(url, 0) + 1)
        if not self.scope.contains(page):  # the start page, left out by include or exclude
            self.skip(url, "left out by crawl.include or crawl.exclude (its links are followed)")
            return
        name = self.scope.file_for(page, kind)
        digest = hashlib.sha256(body).hexdigest()
        if not self.claim(page, name, url, digest, same):
            return
        old = self.previous.pages.get(name) if self.previous else None
        path = self.folder / name
        if old and old.content_hash == digest and path.is_file():
            self.report.unchanged += 1
        else:
            write_atomically(path, body)
            if old:
                self.report.updated += 1
            else:
                self.report.new += 1
        self.manifest.pages[name] = PageRecord(
            url=url,
            final_url=final,
            page_url=page,
            content_type=content_type,
            content_hash=digest,
            fetched_at=now(),
            status=200,
            etag=answer.headers.get("etag"),
            last_modified=answer.headers.get("last-modified"),
            depth=self.depth.get(url, 0),
        )
        self.tick()

    def same_as(self, page: str, links: PageLinks | None, body: bytes) -> list[str]:
        """The keys under which another URL of ``page`` would hold the same text: its own, and
        its canonical URL's when it names one on the site. A canonical link merges two URLs only
        when their main content matches: a template that names the home page as every page's
        canonical URL merges nothing (and is counted for a warning)."""
        text = links.text if links else text_digest(body.decode("utf-8", "replace"))
        keys = [f"same:{page}:{text}"]
        canonical = normalize(urljoin(page, links.canonical)) if links and links.canonical else ""
        if canonical and canonical != page and self.scope.relative(canonical) is not None:
            keys.append(f"same:{canonical}:{text}")
            self.canonical_texts.setdefault(canonical, set()).add(text)
        return keys

    def claim(self, page: str, name: str, url: str, digest: str, same: Sequence[str] = ()) -> bool:
        """Take ``page``, its file, its content and its text (``same``) for ``url``; False (a
        skipped duplicate) if another URL took any of them (``?highlight=`` links, print views
        naming their page as canonical, and the like)."""
        keys = (page, "file:" + name, "body:" + digest, *same)
        for key in keys:
            if key in self.claimed and self.claimed[key] != url:
                self.aliases.setdefault(self.claimed[key], set()).add(url)
                self.skip(url, f"the same page as {self.claimed[key]}")
                return False
        for key in keys:
            self.claimed[key] = url
        self.seen.add(page)
        return True

    def follow_links(self, url: str, record: PageRecord, body: bytes) -> None:
        """Queue the links of a kept HTML page (``url``'s, as ``record`` describes it)."""
        if kind_of(record.content_type, record.final_url) == "html":
            links = html_links(body)
            depth = self.depth.get(url, record.depth) + 1
            self.enqueue_links(record.final_url, links.base, links.links, depth)

    def enqueue_links(self, final: str, base: str | None, hrefs: list[str], depth: int) -> None:
        """Queue the pages of the site among ``hrefs`` (found on ``final``), ``depth`` links
        from the start page."""
        resolved = urljoin(final, base) if base else final
        for href in dict.fromkeys(hrefs):  # a page links to the same page many times
            url = self.scope.link(resolved, href)
            if url:
                self.enqueue(url, depth)

    def skip(self, url: str, why: str) -> None:
        """A URL that is not kept as a page of its own."""
        self.report.skipped.append((url, why))
        self.tick()

    def fail(self, url: str, why: str) -> None:
        """A page that could not be fetched: its file (if any) is kept as it was."""
        self.report.failed.append((url, why))
        self.keep_old(url)
        self.tick()

    def refuse(self, url: str, why: str, since: str | None = None) -> None:
        """A page that failed in a way trying again will not fix: recorded, and not asked about
        again for a while; its file (if any) is kept as it was."""
        refusal = Refusal(why, since or now())
        self.manifest.refused[url] = refusal
        self.report.refused.append(
            (url, f"{why} (asked again from {refusal.until}, or with --retry-refused)")
        )
        self.keep_old(url)
        self.tick()

    def refused_earlier(self, url: str) -> bool:
        """Whether an earlier sync refused ``url`` for good (recently): then it is not asked."""
        refusal = self.refused_before.get(url)
        if refusal is not None:
            self.refuse(url, refusal.reason, refusal.since)
        return refusal is not None

    def keep_old(self, url: str) -> None:
        """Keep the file and record an earlier sync kept for ``url``, if any."""
        old = self.old_by_url.get(url)
        if old and old[0] not in self.manifest.pages:
            self.manifest.pages[old[0]] = old[1]
            self.failed_files.add(old[0])

    def tick(self) -> None:
        if self.bar is None:
            return
        r = self.report
        self.bar.set_postfix(
            fetched=r.downloaded,
            unchanged=r.unchanged + r.resumed,
            skipped=len(r.skipped),
            failed=len(r.failed),
            refresh=False,
        )
        self.bar.update(1)

    # -- saving ---------------------------------------------------------------------------

    def with_aliases(self) -> dict[str, PageRecord]:
        """The pages kept so far, each with the other URLs found to lead to it (asked about
        conditionally next time, like the page itself)."""
        return {
            name: replace(record, aliases=sorted(self.aliases.get(record.url, ())))
            if record.url in self.aliases
            else record
            for name, record in self.manifest.pages.items()
        }

    def checkpoint(self, force: bool = False) -> None:
        """Save the manifest of a sync under way (at most every few seconds): what it has so
        far, and the earlier pages not yet asked about, so that a resume loses nothing."""
        if not force and time.monotonic() - self.last_checkpoint < CHECKPOINT_SECONDS:
            return
        self.last_checkpoint = time.monotonic()
        pages = dict(self.previous.pages) if self.previous else {}
        pages.update(self.with_aliases())
        refused = dict(self.previous.refused) if self.previous else {}
        refused.update(self.manifest.refused)
        checkpoint = replace(self.manifest, pages=pages, refused=refused, complete=False)
        replace(checkpoint, synced_at=None).save(self.folder)

    def finish(self) -> None:
        """Remove the pages that are gone and save the complete manifest."""
        for name in sorted(
            set(self.previous.pages if self.previous else ()) - set(self.manifest.pages)
        ):
            (self.folder / name).unlink(missing_ok=True)
            prune_empty(self.folder / name, self.folder)
            self.report.removed += 1
        self.manifest.pages = self.with_aliases()
        self.manifest.complete = True
        self.manifest.synced_at = now()
        self.manifest.save(self.folder)
        self.report.revision = self.manifest.revision

    def close_report(self, began: float) -> None:
        """Add what the crawl limits left out to the report, and save it."""
        crawl, report = self.crawl, self.report
        report.seconds = time.monotonic() - began
        report.skipped += [
            (url, f"{depth} links from the start page, more than crawl.max_link_depth")
            for url, depth in self.too_deep.items()
        ]
        if self.beyond_max_pages:
            report.warnings.append(
                f"crawl.max_pages ({crawl.max_pages}) reached: {self.beyond_max_pages} more "
                "URLs were not fetched; raise max_pages, or narrow crawl.include"
            )
        if self.too_deep:
            report.warnings.append(
                f"{len(self.too_deep)} URL(s) more than crawl.max_link_depth "
                f"({crawl.max_link_depth}) links from the start page were not fetched"
            )
        shared = {c: len(t) for c, t in self.canonical_texts.items() if len(t) >= SHARED_CANONICAL}
        for canonical, count in sorted(shared.items()):
            report.warnings.append(
                f"{count} pages with different content name {canonical} as their canonical URL "
                "(a template mistake?): each was kept under its own URL"
            )
        if self.capped:
            capped = sorted(self.capped)
            report.warnings.append(
                f"crawl.max_query_variants ({crawl.max_query_variants}) reached for "
                f"{', '.join(capped[:3])}{' …' if len(capped) > 3 else ''}: more URLs that differ "
                "only by their query string were not fetched (a link trap, such as a calendar?)"
            )
        if self.folder.is_dir():
            report.save()


def prune_empty(path: Path, root: Path) -> None:
    """Remove the folders above ``path`` that are left empty, up to ``root``."""
    folder = path.parent
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
