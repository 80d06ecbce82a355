"""Sync a documentation site into its source folder: discover its pages (``llms.txt``, sitemaps,
then links from the start page, breadth first), fetch them politely, keep one file per page
and a manifest, and on a resync ask only for what changed.

Safety: a page is deleted only when the site answers 404 or 410 for it (or it has left the
configured scope); a timeout, a 5xx or a network failure keeps the page as it was. Pages are
written whole or not at all, and an interrupted sync resumes without fetching again what it
already had.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urljoin

import httpx
from protego import Protego
from tqdm import tqdm

from docbuild.config import SourceConfig
from docbuild.site.client import AGENT_TOKEN, FetchError, PoliteClient, Response
from docbuild.site.discovery import html_links, llms_links, page_of_markdown, read_sitemap
from docbuild.site.manifest import Manifest, PageRecord, now, remove_partials, write_atomically
from docbuild.site.scope import Scope, kind_of, normalize, origin

GONE = frozenset({404, 410})
CHECKPOINT_SECONDS = 5.0
MAX_SITEMAPS = 50


class SiteError(RuntimeError):
    """The site cannot be synced at all; the message says why and what to try."""


@dataclass
class SyncReport:
    """What one sync of a site did."""

    origin: str
    folder: Path
    found: int = 0  # pages discovered on the site (within scope)
    downloaded: int = 0  # page bodies downloaded
    new: int = 0
    updated: int = 0
    unchanged: int = 0  # answered 304, or downloaded with the same content
    resumed: int = 0  # kept from the interrupted sync this one resumed
    removed: int = 0  # kept before, now gone from the site (404, 410) or from the scope
    not_found: int = 0  # answered 404 or 410 (pages removed, or links that lead nowhere)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (url, why): not a page
    # of its own (another type, a duplicate, redirected elsewhere)
    forbidden: int = 0  # disallowed by robots.txt: never requested
    failed: list[tuple[str, str]] = field(default_factory=list)  # (url, why); pages kept
    requests: int = 0
    seconds: float = 0.0
    revision: str = ""

    @property
    def changed(self) -> bool:
        """Whether the folder holds anything new."""
        return bool(self.new or self.updated or self.removed)

    def summary(self) -> str:
        """Two or more lines for the terminal."""
        lines = [
            f"synced {self.origin} → {self.folder} in {self.seconds:.1f} s "
            f"(revision {self.revision}): {self.found} pages found, "
            f"{self.downloaded} downloaded, {self.requests} requests",
            f"  {self.new} new, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed, {len(self.skipped)} skipped, {self.not_found} not found, "
            f"{self.forbidden} forbidden by robots.txt, {len(self.failed)} failed (kept as "
            "they were)",
        ]
        lines += [f"  failed: {url}: {why}" for url, why in self.failed[:10]]
        if len(self.failed) > 10:
            lines.append(f"  ... and {len(self.failed) - 10} more")
        return "\n".join(lines)


def sync_site(source: SourceConfig) -> SyncReport:
    """Fetch ``source.site_url``'s pages into ``source.path``; raises :class:`SiteError`."""
    assert source.site_url, "a site source"
    return asyncio.run(SiteSync(source).run())


class SiteSync:
    """One sync of one site."""

    def __init__(self, source: SourceConfig) -> None:
        assert source.site_url
        self.source = source
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
        self.seen: set[str] = set()  # URLs queued or answered
        self.claimed: dict[str, str] = {}  # page URL or file -> the URL that claimed it
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
        self.report.seconds = time.monotonic() - began
        return self.report

    async def sync(self) -> None:
        """Everything :meth:`run` does once the folder is there."""
        async with PoliteClient(self.source.crawl) as client:
            self.client = client
            await self.read_robots()
            self.seen.add(self.scope.start)
            self.report.found += 1
            self.bar = tqdm(
                desc="sync", unit="page", total=1, leave=False, mininterval=1.0, disable=None
            )
            try:
                start = self.scope.start
                answer = None if self.reusable(start) else await self.fetch_start()
                for url in await self.discover():  # llms.txt and sitemaps go first
                    self.enqueue(url)
                for record in self.previous.pages.values() if self.previous else ():
                    self.enqueue(normalize(record.url))  # every page kept before is asked about
                if answer is None:
                    self.reuse(start)
                else:
                    await self.handle(start, answer)  # its links are queued after the others
                workers = [
                    asyncio.create_task(self.work()) for _ in range(self.source.crawl.max_in_flight)
                ]
                try:
                    await self.queue.join()
                finally:
                    for worker in workers:
                        worker.cancel()
            except BaseException:
                if self.manifest.pages:
                    self.checkpoint(force=True)
                raise
            finally:
                self.bar.close()
            self.report.requests = client.requests
        if not self.manifest.pages and not self.failed_files:
            raise SiteError(
                f"found no documentation pages under {self.scope.prefix} (from "
                f"{self.scope.start}): check the URL, crawl.include and crawl.exclude"
            )
        self.finish()

    # -- robots.txt and the start page ----------------------------------------------------

    async def read_robots(self) -> None:
        """Fetch robots.txt; a 4xx means no rules, a 5xx means stay away (RFC 9309)."""
        url = f"{self.scope.origin}/robots.txt"
        try:
            answer = await self.client.get(url, follow=lambda u: origin(u) == self.scope.origin)
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
            answer = await self.client.get(url, follow=lambda u: origin(u) == self.scope.origin)
        except FetchError:
            return None
        return answer.body if answer.status == 200 else None

    async def fetch_text(self, url: str) -> str | None:
        """A text discovery file (``llms.txt``); None unless it is served as text."""
        body = await self.fetch_bytes(url)
        return body.decode("utf-8", "replace") if body is not None else None

    # -- fetching pages --------------------------------------------------------------------

    def enqueue(self, url: str) -> None:
        """Queue ``url`` unless it was queued before, robots.txt forbids it, or the page limit
        is reached."""
        if url in self.seen:
            return
        if self.report.found >= self.source.crawl.max_pages:
            return
        self.seen.add(url)
        if not self.allowed(url):
            self.report.forbidden += 1
            return
        if url.endswith(".md"):  # a Markdown alternate stands for its page: not asked twice
            self.seen.add(page_of_markdown(url))
        self.report.found += 1
        if self.bar is not None:
            self.bar.total = self.report.found
            self.bar.refresh()
        self.queue.put_nowait(url)

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
        if self.reuse(url):
            return
        try:
            answer = await self.request(url)
        except FetchError as exc:
            self.fail(url, str(exc))
            return
        await self.handle(url, answer)

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
        self.follow_links(record.final_url, record.content_type, path.read_bytes())
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
            self.report.not_found += 1
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
            self.enqueue(twin)
        self.checkpoint()

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
        )
        self.manifest.pages[name] = record
        self.report.unchanged += 1
        self.follow_links(record.final_url, record.content_type, (self.folder / name).read_bytes())
        self.tick()

    def keep(self, url: str, answer: Response, body: bytes) -> None:
        """A page's body: saved under its file name unless it is a duplicate."""
        final = normalize(answer.url)
        content_type = answer.headers.get("content-type", "")
        kind = kind_of(content_type, final) or "html"
        self.report.downloaded += 1
        links = html_links(body) if kind == "html" else None
        page = page_of_markdown(final) if kind == "md" else final
        if links and links.canonical:
            canonical = normalize(urljoin(final, links.canonical))
            if self.scope.relative(canonical) is not None:
                page = canonical
        if links:
            self.enqueue_links(final, links.base, links.links)
        if not self.scope.contains(page):  # the start page, left out by include or exclude
            self.skip(url, "left out by crawl.include or crawl.exclude (its links are followed)")
            return
        name = self.scope.file_for(page, kind)
        digest = hashlib.sha256(body).hexdigest()
        if not self.claim(page, name, url, digest):
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
        )
        self.tick()

    def claim(self, page: str, name: str, url: str, digest: str) -> bool:
        """Take ``page``, its file and its content for ``url``; False (a skipped duplicate) if
        another URL took any of them (``?highlight=`` links and the like serve the same body)."""
        keys = (page, "file:" + name, "body:" + digest)
        for key in keys:
            if key in self.claimed and self.claimed[key] != url:
                self.aliases.setdefault(self.claimed[key], set()).add(url)
                self.skip(url, f"the same page as {self.claimed[key]}")
                return False
        for key in keys:
            self.claimed[key] = url
        self.seen.add(page)
        return True

    def follow_links(self, final: str, content_type: str, body: bytes) -> None:
        """Queue the links of a kept HTML page."""
        if kind_of(content_type, final) == "html":
            links = html_links(body)
            self.enqueue_links(final, links.base, links.links)

    def enqueue_links(self, final: str, base: str | None, hrefs: list[str]) -> None:
        resolved = urljoin(final, base) if base else final
        for href in dict.fromkeys(hrefs):  # a page links to the same page many times
            url = self.scope.link(resolved, href)
            if url:
                self.enqueue(url)

    def skip(self, url: str, why: str) -> None:
        """A URL that is not kept as a page of its own."""
        self.report.skipped.append((url, why))
        self.tick()

    def fail(self, url: str, why: str) -> None:
        """A page that could not be fetched: its file (if any) is kept as it was."""
        self.report.failed.append((url, why))
        old = self.old_by_url.get(url)
        if old and old[0] not in self.manifest.pages:
            self.manifest.pages[old[0]] = old[1]
            self.failed_files.add(old[0])
        self.tick()

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
        replace(self.manifest, pages=pages, complete=False, synced_at=None).save(self.folder)

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


def prune_empty(path: Path, root: Path) -> None:
    """Remove the folders above ``path`` that are left empty, up to ``root``."""
    folder = path.parent
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
