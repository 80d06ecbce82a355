"""A documentation site by its URL: ``docbuild scaffold --url`` and ``docbuild sync`` against a
real HTTP server on 127.0.0.1 (``site_server``) serving the Python tutorial from the corpora,
with robots.txt, a sitemap index, redirects, canonical links, ETags, 429s, slow and vanishing
pages, and a hostile site (``site_server.hostile``): shared canonical links, charsets named only
by the HTTP header, a trickling body, a calendar link trap, oversized pages, a redirect loop, a
host that dies. Run as a user runs them: the command line (or, where only the sync's own work is
checked, the same functions in this process), in a project of its own."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import REPO, corpus
from docbuild.config import ProcessingConfig, load_processing_config
from docbuild.services.ask import server_script
from docbuild.services.scaffold import ScaffoldError, scaffold
from docbuild.services.sync import SyncError, SyncIncomplete, sync_source
from docbuild.services.watch import parse_duration
from docbuild.site.crawl import SiteSync
from docbuild.stages.discover import discover
from fastmcp import Client
from site_server import CYRILLIC, JAPANESE, Site, hostile, serving
from test_watch import wait_for

NAME = "pytut"
DOCBUILD = str(REPO / ".venv" / "bin" / "docbuild")
TUTORIAL = "/3.11/tutorial/"


def docbuild(project: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the ``docbuild`` command line in ``project``."""
    return subprocess.run(
        [DOCBUILD, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
    )


def edit_config(project: Path, old: str, new: str) -> None:
    """Change the server's processing_config.yaml as a user would."""
    path = project / "servers" / NAME / "config" / "processing_config.yaml"
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def sitemaps(site: Site, origin: str, pages: list[str]) -> None:
    """A sitemap index at the root, naming one sitemap (under the tutorial) that lists
    ``pages``; robots.txt points at the index."""
    urlset = "".join(f"<url><loc>{origin}{page}</loc></url>" for page in pages)
    ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    site.pages["/sitemap_index.xml"] = (
        "application/xml",
        f'<?xml version="1.0"?><sitemapindex {ns}><sitemap><loc>{origin}{TUTORIAL}'
        f"sitemap.xml</loc></sitemap></sitemapindex>".encode(),
    )
    site.pages[f"{TUTORIAL}sitemap.xml"] = (
        "application/xml",
        f'<?xml version="1.0"?><urlset {ns}>{urlset}</urlset>'.encode(),
    )


@pytest.fixture
def site() -> Iterator[tuple[Site, str]]:
    """The Python 3.11 HTML docs served under /3.11/, with robots.txt and a sitemap index."""
    site = Site(mount="/3.11/", folder=corpus("python-docs-3.11", "html"))
    with serving(site) as origin:
        site.robots = f"User-agent: *\nDisallow: {TUTORIAL}stdlib2.html\nSitemap: {origin}/sitemap_index.xml\n"
        sitemaps(site, origin, [f"{TUTORIAL}old-intro.html", f"{TUTORIAL}logo.png"])
        site.redirects[f"{TUTORIAL}old-intro.html"] = f"{TUTORIAL}introduction.html"
        yield site, origin


def folder(project: Path) -> Path:
    return project / "source-documentation" / NAME


def manifest(project: Path) -> dict:
    return json.loads((folder(project) / ".sync.json").read_text())


def test_sync_fetches_the_site_politely(project: Path, site: tuple[Site, str]):
    site_, origin = site
    # one canonical duplicate (a print view of appetite.html), one page that is not a document,
    # one page that answers 429 first
    appetite = site_.body(f"{TUTORIAL}appetite.html")
    assert appetite is not None
    print_view = appetite[1].replace(
        b"<head>", b'<head><link rel="canonical" href="../appetite.html">', 1
    )
    site_.pages[f"{TUTORIAL}print/appetite.html"] = ("text/html", print_view)
    site_.pages[f"{TUTORIAL}download"] = ("application/zip", b"PK\x03\x04 not a page")
    index = site_.body(TUTORIAL)
    assert index is not None
    extra = b'<a href="print/appetite.html">print</a> <a href="download">zip</a></body>'
    site_.pages[TUTORIAL] = (index[0], index[1].replace(b"</body>", extra, 1))
    site_.too_many[f"{TUTORIAL}errors.html"] = 1
    # a page found only in the sitemap, under its old name
    sitemaps(site_, origin, [f"{TUTORIAL}old-intro.html", f"{TUTORIAL}old-name.html"])
    site_.redirects[f"{TUTORIAL}old-name.html"] = f"{TUTORIAL}renamed.html"
    renamed = b"<html><body><h1>Renamed</h1><p>Moved here from its old name.</p></body></html>"
    site_.pages[f"{TUTORIAL}renamed.html"] = ("text/html", renamed)

    made = docbuild(project, "scaffold", NAME, "--url", f"{origin}{TUTORIAL}")
    assert made.returncode == 0, made.stderr
    assert f"tools/sync_documentation.sh {NAME}" in made.stdout
    began = time.monotonic()
    config = load_processing_config(NAME, project)
    sync = SiteSync(config.source, config.max_file_bytes)  # in process, to read its pacer
    report = asyncio.run(sync.run())
    summary = report.summary()
    assert "17 new" in summary and "1 forbidden by robots.txt" in summary

    files = sorted(p.name for p in folder(project).iterdir() if not p.name.startswith("."))
    expected = sorted(
        [
            "renamed.html",
            *(
                p.name
                for p in corpus("python-docs-3.11", "html", "tutorial").glob("*.html")
                if p.name != "stdlib2.html"
            ),
        ]
    )
    assert files == expected  # print view deduplicated by its canonical link; no zip, no png
    hits = site_.hits
    paths = [h.path for h in hits]
    assert f"{TUTORIAL}stdlib2.html" not in paths  # robots.txt forbids it: never requested
    assert f"{TUTORIAL}logo.png" not in paths  # an image is not even asked for
    assert f"{TUTORIAL}print/appetite.html" in paths and f"{TUTORIAL}download" in paths
    assert all(h.headers["user-agent"].startswith("docs-mcp/") for h in hits)
    # 4 requests a second and 4 in flight by default; the 429 paused the host for a second.
    # The spacing is read from the pacer's schedule (what the code decides), not from when a
    # busy machine's server threads got round to logging each request
    (pace,) = sync.client.paces.values()
    assert len(pace.starts) == len(hits) == sync.client.requests  # every request was paced
    assert all(b - a >= 0.25 - 1e-9 for a, b in itertools.pairwise(pace.starts)), pace.starts
    assert site_.most_in_flight <= 4
    errors = [h for h in hits if h.path == f"{TUTORIAL}errors.html"]
    assert [h.status for h in errors] == [429, 200]
    assert errors[1].started - errors[0].started >= 1.0  # sent a second after the 429 came
    assert time.monotonic() - began >= len(hits) / 4 - 1

    record = manifest(project)
    assert record["complete"] and record["origin"] == f"{origin}{TUTORIAL}"
    moved = record["pages"]["renamed.html"]
    assert moved["url"] == f"{origin}{TUTORIAL}old-name.html"  # as the sitemap names it
    assert moved["final_url"] == moved["page_url"] == f"{origin}{TUTORIAL}renamed.html"
    assert moved["etag"] and moved["last_modified"] and moved["status"] == 200
    assert len(moved["content_hash"]) == 64 and moved["fetched_at"]
    intro = record["pages"]["introduction.html"]  # linked, and redirected to from old-intro
    assert f"{origin}{TUTORIAL}old-intro.html" in [intro["url"], *intro["aliases"]]
    # the corpus's canonical links are file:// URLs: not the site, so the page's URL is cited
    assert record["pages"]["index.html"]["page_url"] == f"{origin}{TUTORIAL}"
    assert record["pages"]["appetite.html"]["page_url"] == f"{origin}{TUTORIAL}appetite.html"


def fast(project: Path, origin: str) -> None:
    """Scaffold the server and let it fetch quickly from this local site."""
    made = docbuild(project, "scaffold", NAME, "--url", f"{origin}{TUTORIAL}")
    assert made.returncode == 0, made.stderr
    edit_config(project, "requests_per_second: 4 ", "requests_per_second: 200 ")


def test_resync_asks_conditionally_and_keeps_what_failed(project: Path, site: tuple[Site, str]):
    site_, origin = site
    index = site_.body(TUTORIAL)
    assert index is not None  # a search-highlight link: the same page under another URL
    highlight = b'<a href="errors.html?highlight=try">try</a></body>'
    for path in (TUTORIAL, f"{TUTORIAL}index.html"):
        site_.pages[path] = (index[0], index[1].replace(b"</body>", highlight, 1))
    fast(project, origin)
    assert docbuild(project, "sync", NAME).returncode == 0
    before = {p.name: p.stat().st_mtime_ns for p in folder(project).glob("*.html")}
    assert len(before) == 16  # the highlight link is known to be errors.html by its body
    errors = manifest(project)["pages"]["errors.html"]
    assert f"{origin}{TUTORIAL}errors.html?highlight=try" in [errors["url"], *errors["aliases"]]

    site_.hits.clear()
    again = docbuild(project, "sync", NAME)
    assert again.returncode == 0, again.stderr
    assert site_.page_bodies() == []  # nothing changed: every page answered 304
    assert "0 new, 0 updated, 16 unchanged, 0 removed" in again.stdout
    assert {p.name: p.stat().st_mtime_ns for p in folder(project).glob("*.html")} == before

    # the site changes: one page goes away, one fails, one is slow, one changes
    site_.gone.add(f"{TUTORIAL}whatnow.html")
    site_.failing.add(f"{TUTORIAL}venv.html")
    site_.slow[f"{TUTORIAL}modules.html"] = 3.0
    classes = site_.body(f"{TUTORIAL}classes.html")
    assert classes is not None
    changed = classes[1].replace(b"</body>", b"<p>Comets are icy bodies.</p></body>", 1)
    site_.pages[f"{TUTORIAL}classes.html"] = (classes[0], changed)
    edit_config(project, "timeout: 30 ", "timeout: 1 ")
    edit_config(project, "retries: 3 ", "retries: 1 ")
    third = docbuild(project, "sync", NAME)
    assert third.returncode == 1, third.stderr  # pages failed: said, and not a success
    assert "2 page(s) could not be fetched" in third.stderr and "again to retry" in third.stderr
    assert "1 updated" in third.stdout and "1 removed" in third.stdout
    assert "2 failed" in third.stdout and "venv.html: HTTP 503" in third.stdout
    assert "modules.html: no answer within 1 s" in third.stdout
    names = {p.name for p in folder(project).glob("*.html")}
    assert "whatnow.html" not in names  # 404: removed
    assert {"venv.html", "modules.html"} <= names  # a 5xx or a timeout deletes nothing
    assert b"Comets" in (folder(project) / "classes.html").read_bytes()
    pages = manifest(project)["pages"]
    assert "whatnow.html" not in pages and {"venv.html", "modules.html"} <= set(pages)


def start_sync(project: Path, *args: str) -> subprocess.Popen:
    """``docbuild sync NAME`` in the background."""
    return subprocess.Popen(
        [DOCBUILD, "sync", NAME, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
        # Ctrl-C reaches the sync as in a terminal, even when these tests run in a background
        # job (whose shell ignores SIGINT, and the children inherit that)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def until(condition: Callable[[], bool], sync: subprocess.Popen, timeout: float = 60) -> None:
    """Wait until ``condition`` holds, while ``sync`` runs."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline and sync.poll() is None, sync.poll()
        time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_sync_resumes_without_fetching_again(
    project: Path, site: tuple[Site, str], signum: int
):
    """Ctrl-C (SIGINT) and SIGTERM (a service manager, `kill`) stop a sync alike: what it
    fetched is saved, it says so, and it exits 128 + the signal's number."""
    from docbuild.site.report import sync_unfinished

    site_, origin = site
    fast(project, origin)
    site_.hold_after = 8  # the site answers 8 pages, then holds the rest: stopped half-way
    sync = start_sync(project)
    until(lambda: len(site_.page_bodies()) >= 8, sync)
    # the pages answered are written (and recorded) by the sync: wait for that, not a while
    until(lambda: len(list(folder(project).glob("*.html"))) >= 4, sync)
    sync.send_signal(signum)
    time.sleep(0.5)
    site_.released.set()  # the requests in flight are answered; no new one is sent
    _, err = sync.communicate(timeout=30)
    assert sync.returncode == 128 + signum and b"run it again to resume" in err, err
    assert b"Traceback" not in err, err
    assert not list(folder(project).rglob("*.part"))  # no half-written page
    record = manifest(project)
    assert not record["complete"] and len(record["pages"]) >= 4
    unfinished = sync_unfinished(folder(project), NAME)  # what the build says of the folder
    assert unfinished and f"tools/sync_documentation.sh {NAME}" in unfinished
    first = {h.path for h in site_.page_hits(200)}

    site_.hold_after = None
    site_.hits.clear()
    resumed = docbuild(project, "sync", NAME)
    assert resumed.returncode == 0, resumed.stderr
    asked = {h.path for h in site_.page_hits()}
    kept = {record["pages"][name]["url"].removeprefix(origin) for name in record["pages"]}
    # what the first run kept is not asked for again (unless a redirect not seen yet leads there)
    assert not (asked - set(site_.redirects.values())) & kept, asked & kept
    assert len(first | asked) >= 16
    assert len(list(folder(project).glob("*.html"))) == 16 and manifest(project)["complete"]
    assert sync_unfinished(folder(project), NAME) is None


def test_a_build_after_an_interrupted_first_sync_says_to_finish_it(
    project: Path, site: tuple[Site, str]
):
    site_, origin = site
    fast(project, origin)
    site_.hold_after = 0  # no page body is answered before the sync is stopped
    sync = start_sync(project)
    until(lambda: bool(site_.hits), sync)
    sync.send_signal(signal.SIGINT)
    site_.released.set()
    sync.communicate(timeout=30)
    assert not manifest(project)["complete"]
    built = docbuild(project, "build", NAME)
    assert built.returncode == 1, built.stderr
    assert "did not finish" in built.stderr and "no documents" not in built.stderr
    assert f"run tools/sync_documentation.sh {NAME} to finish it" in built.stderr


@pytest.mark.parametrize(
    ("setup", "url", "message"),
    [
        ("closed", "", "cannot reach 127.0.0.1"),
        ("robots", "", "forbids docs-mcp"),
        ("not-html", "data.json", "is not HTML (application/json)"),
        ("nothing", "", "found no documentation pages"),
        ("elsewhere", "moved/", "redirects to http://localhost"),
    ],
)
def test_bad_sites_get_a_clear_message(project: Path, setup: str, url: str, message: str):
    site = Site(mount=TUTORIAL, folder=corpus("python-docs-3.11", "html", "tutorial"))
    with serving(site) as origin:
        if setup == "robots":
            site.robots = "User-agent: *\nDisallow: /\n"
        elif setup == "not-html":
            site.pages[f"{TUTORIAL}data.json"] = ("application/json", b"{}")
        elif setup == "elsewhere":  # localhost is another origin than 127.0.0.1
            port = origin.rsplit(":", 1)[1]
            site.redirects[f"{TUTORIAL}moved/"] = f"http://localhost:{port}{TUTORIAL}"
        start = f"{origin}{TUTORIAL}{url}"
        if setup == "closed":
            start = "http://127.0.0.1:9/docs/"  # the discard port: nothing listens
        made = docbuild(project, "scaffold", NAME, "--url", start)
        assert made.returncode == 0, made.stderr
        if setup == "nothing":
            edit_config(project, "include: []", 'include: ["api/**"]')
        synced = docbuild(project, "sync", NAME, timeout=120)
    assert synced.returncode == 1, synced.stdout
    assert message in synced.stderr and "Traceback" not in synced.stderr, synced.stderr
    assert not folder(project).exists()  # a first sync that fails leaves nothing behind


def test_scaffold_refuses_a_url_that_is_not_http(project: Path):
    made = docbuild(project, "scaffold", NAME, "--url", "ftp://example.org/docs/")
    assert made.returncode == 2 and "is not an http(s) URL" in made.stderr
    assert not (project / "servers" / NAME).exists()
    bad = docbuild(project, "scaffold", NAME, "--url", "https://example.org/", "--max-pages", "0")
    assert bad.returncode == 2 and "max_pages must be a positive whole number" in bad.stderr


def test_durations():
    assert [parse_duration(t) for t in ("90", "30s", "10m", "1h", "1.5d")] == [
        90.0,
        30.0,
        600.0,
        3600.0,
        129600.0,
    ]
    for bad in ("soon", "0", "-1h", ""):
        with pytest.raises(ValueError):
            parse_duration(bad)


@pytest.mark.slow
def test_a_site_served_cited_and_kept_in_sync_by_watch(project: Path, site: tuple[Site, str]):
    """The issue's user story: point --url at a site, and the server answers with its pages,
    cited by their live URLs; `watch --interval` resyncs, and a page gone from the site leaves
    the index while a changed one is searchable, with one MCP session throughout."""
    site_, origin = site
    fast(project, origin)
    log = project / "watch.log"
    with log.open("w") as stderr:
        watcher = subprocess.Popen(
            [DOCBUILD, "watch", NAME, "--interval", "3s", "--debounce", "0.5"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
        )
    try:
        asyncio.run(watched_site(log, project, site_, origin))
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(60)
    assert watcher.returncode == 0, log.read_text()


async def watched_site(log: Path, project: Path, site: Site, origin: str) -> None:
    def logged(line: str) -> bool:
        return line in log.read_text()

    await wait_for(lambda: logged("build 1 done"), timeout=300)
    assert logged(f"synced {origin}{TUTORIAL}")
    base = f"{origin}{TUTORIAL}"
    async with Client(server_script(NAME, project)) as client:
        result = await client.call_tool(
            "search", {"query": "how do I handle an exception with try and except", "top_k": 3}
        )
        top = result.structured_content["results"][0]
        assert top["path"] == "errors.html", top
        assert top["url"] == f"{base}errors.html"
        assert top["section_url"].startswith(f"{base}errors.html#"), top
        text = "\n".join(getattr(part, "text", "") for part in result.content)
        assert f"{base}errors.html#" in text  # the model reads the live page's address

        site.gone.add(f"{TUTORIAL}errors.html")
        classes = site.body(f"{TUTORIAL}classes.html")
        assert classes is not None
        comet = b"</h1><p>Comets are icy bodies that grow tails near the sun.</p>"
        site.pages[f"{TUTORIAL}classes.html"] = (  # in the page's main content
            classes[0],
            classes[1].replace(b"</h1>", comet, 1),
        )
        await wait_for(lambda: logged("build 2 done"), timeout=300)
        assert logged("1 updated, 14 unchanged, 1 removed")

        async def paths(query: str) -> list[str]:
            found = await client.call_tool("search", {"query": query, "top_k": 5})
            return [r["path"] for r in found.structured_content["results"]]

        async def comets_found() -> bool:  # the server loads the new build in the background
            return (await paths("icy comets with tails"))[:1] == ["classes.html"]

        await wait_for(comets_found, timeout=30)
        assert "errors.html" not in await paths("handle an exception with try and except")


def test_llms_txt_markdown_alternates_are_preferred(project: Path):
    """A site that offers llms.txt with Markdown versions of its pages: the Markdown is kept,
    cited as the page it stands for, and the HTML page is not fetched twice."""
    page = "<html><body><main><h1>{0}</h1><p>{0} in HTML.</p>{1}</main></body></html>"
    site = Site(mount="/guide/")
    site.pages = {
        "/guide/": ("text/html", page.format("Guide", '<a href="intro">Intro</a>').encode()),
        "/guide/intro": ("text/html", page.format("Intro", "").encode()),
        "/guide/intro.md": ("text/markdown", b"# Intro\n\nIntro in Markdown.\n"),
        "/guide/llms.txt": ("text/plain", b"# Guide\n\n- [Intro](https://x.invalid/a)\n"),
    }
    with serving(site) as origin:
        site.pages["/guide/llms.txt"] = (
            "text/plain",
            f"# Guide\n\n> The guide.\n\n## Docs\n\n- [Intro]({origin}/guide/intro.md): start\n"
            "- [Elsewhere](https://example.org/other.md)\n".encode(),
        )
        made = docbuild(project, "scaffold", NAME, "--url", f"{origin}/guide/")
        assert made.returncode == 0, made.stderr
        synced = docbuild(project, "sync", NAME)
    assert synced.returncode == 0, synced.stderr
    pages = manifest(project)["pages"]
    assert sorted(pages) == ["index.html", "intro.md"]
    assert pages["intro.md"]["page_url"] == f"{origin}/guide/intro"
    assert (folder(project) / "intro.md").read_text().startswith("# Intro")
    assert "/guide/intro" not in [h.path for h in site.hits]  # the HTML twin: not fetched


@pytest.mark.parametrize(
    ("start", "url", "kind", "file"),
    [
        ("https://d.org/guide/", "https://d.org/guide/", "html", "index.html"),
        ("https://d.org/guide", "https://d.org/guide", "html", "index.html"),
        ("https://d.org/guide/intro.html", "https://d.org/guide/a/b", "html", "a/b.html"),
        ("https://d.org/guide/", "https://d.org/guide/a/", "html", "a/index.html"),
        ("https://d.org/guide/", "https://d.org/guide/api.php?x=1", "html", "api.php_"),
        ("https://d.org/guide/", "https://D.org:443/guide/Intro#top", "md", "Intro.md"),
        ("https://d.org/guide/", "https://d.org/guide/manual.pdf", "pdf", "manual.pdf"),
    ],
)
def test_pages_are_kept_under_readable_names(start: str, url: str, kind: str, file: str):
    from docbuild.config import CrawlConfig
    from docbuild.site.scope import Scope

    scope = Scope.of(start, CrawlConfig())
    assert scope.file_for(url, kind).startswith(file)
    assert scope.contains(url)
    assert not scope.contains("https://d.org/other/page.html")  # outside the start's folder
    assert not scope.contains("https://d.org/guide/logo.png")
    assert not scope.contains("http://d.org/guide/")  # another origin


def test_each_documentation_version_can_be_a_site(project: Path, site: tuple[Site, str]):
    site_, origin = site
    page = b"<html><body><main><h1>What's new</h1><p>Exception groups arrive.</p></main></body>"
    site_.pages["/3.12/tutorial/"] = ("text/html", page)
    made = docbuild(project, "scaffold", NAME, "--url", f"{origin}{TUTORIAL}", "--version", "3.11")
    assert made.returncode == 0, made.stderr
    added = docbuild(project, "add-version", NAME, "3.12", "--url", f"{origin}/3.12/tutorial/")
    assert added.returncode == 0, added.stderr
    assert f"synced from {origin}/3.12/tutorial/ into" in added.stdout
    edit_config(project, "requests_per_second: 4 ", "requests_per_second: 200 ")
    synced = docbuild(project, "sync", NAME)
    assert synced.returncode == 0, synced.stderr
    assert "version 3.11: synced" in synced.stdout and "version 3.12: synced" in synced.stdout
    assert len(list((folder(project) / "3.11").glob("*.html"))) == 16
    assert [p.name for p in (folder(project) / "3.12").glob("*.html")] == ["index.html"]


# -- a hostile site (site_server.hostile) ------------------------------------------------------

DOCS = "/docs/"
QUICK = {"requests_per_second": 200, "retries": 0}
"""Crawl settings that keep a sync of the hostile site (its trap and trickle defused) short."""


def settings(project: Path, crawl: dict[str, object], **top: object) -> None:
    """Set ``source.crawl`` keys and top-level keys of the server's processing_config.yaml."""
    path = project / "servers" / NAME / "config" / "processing_config.yaml"
    lines = path.read_text().splitlines()
    for key, value in top.items():
        lines = [f"{key}: {value}" if line.startswith(f"{key}:") else line for line in lines]
    start = lines.index("  crawl:") + 1
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("    "))
    kept = [line for line in lines[start:end] if line.split(":")[0].strip() not in crawl]
    lines[start:end] = [f"    {key}: {json.dumps(value)}" for key, value in crawl.items()] + kept
    path.write_text("\n".join(lines) + "\n")


def hostile_server(project: Path, origin: str, **crawl: object) -> ProcessingConfig:
    """Scaffold server NAME over the hostile site at ``origin`` with :data:`QUICK` settings
    and ``crawl``, pages up to 200 kB; its config."""
    scaffold(NAME, site_url=f"{origin}{DOCS}", root=project)
    settings(project, {**QUICK, **crawl}, max_file_bytes=200_000)
    return load_processing_config(NAME, project)


def sync_report(project: Path) -> dict:
    """The ``.sync-report.json`` the last sync saved."""
    return json.loads((folder(project) / ".sync-report.json").read_text())


def reasons(report: dict, kind: str) -> dict[str, str]:
    """URL (its path) → reason, for one kind of the report (skipped, failed, ...)."""
    return {
        entry["url"].split("//", 1)[1].split("/", 1)[1]: entry["reason"] for entry in report[kind]
    }


def calm(site: Site) -> Site:
    """``site`` without its trickling page (which costs a deadline at every sync) and its link
    trap (left to the tests of both)."""
    site.trickle.clear()
    site.generated.clear()
    return site


def sync_quietly(config: ProcessingConfig, **options: bool) -> str:
    """The summary of a sync, whether or not some pages failed."""
    try:
        return sync_source(config, **options)
    except SyncIncomplete as exc:
        return exc.summary


def test_pages_whose_canonical_names_the_home_page_are_all_kept(project: Path):
    site = calm(hostile(big=300_000))
    with serving(site) as origin:
        config = hostile_server(project, origin)
        summary = sync_quietly(config)
    assert f"3 pages with different content name {origin}{DOCS} as their canonical" in summary
    pages = manifest(project)["pages"]
    for name in ("index.html", "shared-a.html", "shared-b.html", "shared-c.html"):
        assert pages[name]["page_url"] == f"{origin}{DOCS}{name.replace('index.html', '')}"
    assert b"topic b" in (folder(project) / "shared-b.html").read_bytes()
    skipped = reasons(sync_report(project), "skipped")
    assert not any(path.startswith("docs/shared-") for path in skipped), skipped


def test_a_charset_named_only_by_the_http_header_is_kept_as_utf8(project: Path):
    from docbuild.readers.html import read_page
    from docbuild.readers.text import read_text

    site = calm(hostile(big=300_000))
    with serving(site) as origin:
        config = hostile_server(project, origin)
        sync_source(config)
        where = folder(project)
        assert CYRILLIC in read_page(where / "cyrillic.html")  # what the build reads
        assert JAPANESE in read_page(where / "japanese.html")
        assert CYRILLIC in read_text(where / "notes.md")
        assert "Topic A" in read_page(where / "shared-a.html")  # UTF-8 pages: as they came
        saved = {name: (where / name).stat().st_mtime_ns for name in ("cyrillic.html", "notes.md")}
        hashes = {name: manifest(project)["pages"][name]["content_hash"] for name in saved}

        sync_quietly(config)  # 304s: nothing rewritten
        assert site.page_hits(304)
        site.validators = False  # a site without ETags: the same bytes again
        site.hits.clear()
        summary = sync_quietly(config)
    assert {h.path for h in site.page_hits(200)} >= {f"{DOCS}cyrillic.html", f"{DOCS}notes.md"}
    assert " 0 new, 0 updated," in summary, summary
    assert {name: (where / name).stat().st_mtime_ns for name in saved} == saved
    assert {name: manifest(project)["pages"][name]["content_hash"] for name in saved} == hashes


def test_a_body_that_trickles_in_is_given_up_at_the_deadline(project: Path):
    site = hostile(big=300_000, trickle=0.5)  # 150 bytes or so: more than a minute
    site.generated.clear()
    with serving(site) as origin:
        config = hostile_server(project, origin, deadline=2, timeout=30)
        began = time.monotonic()
        with pytest.raises(SyncIncomplete, match="1 page"):
            sync_source(config)
        took = time.monotonic() - began
    assert took < 30, took  # not the minute and more the body would take
    failed = reasons(sync_report(project), "failed")
    assert failed == {"docs/trickle.html": "not complete within 2 s (crawl.deadline) (after 1 try)"}


def test_a_host_that_dies_stops_the_sync_which_says_so_and_exits_non_zero(project: Path):
    from docbuild.site.report import sync_unfinished

    site = Site(mount="/3.11/", folder=corpus("python-docs-3.11", "html"), die_after=12)
    with serving(site) as origin:
        scaffold(NAME, site_url=f"{origin}/3.11/", root=project)
        settings(project, {"requests_per_second": 200, "retries": 1})
        synced = docbuild(project, "sync", NAME)
    assert synced.returncode == 1, synced.stdout
    assert "the sync stopped before the end (10 requests in a row got no answer" in synced.stderr
    assert f"run tools/sync_documentation.sh {NAME} again (later) to resume" in synced.stderr
    assert "Traceback" not in synced.stderr
    report = sync_report(project)
    assert not report["complete"] and report["stopped"].startswith("10 requests in a row got no")
    assert 10 <= len(report["failed"]) < 20  # stopped, not ~400 pages hammered
    record = manifest(project)
    assert not record["complete"] and len(record["pages"]) >= 10  # kept; resumed next time
    assert "did not finish" in (sync_unfinished(folder(project), NAME) or "")


def test_a_link_trap_is_bounded_and_reaching_a_limit_is_a_warning(project: Path):
    def months() -> list[str]:
        return sorted(name for name in manifest(project)["pages"] if name.startswith("calendar"))

    site = hostile(big=300_000)  # calendar?page=N links to N + 1, without end
    site.trickle.clear()
    with serving(site) as origin:
        config = hostile_server(project, origin, max_link_depth=50, max_query_variants=5)
        summary = sync_quietly(config)
        assert len([h for h in site.hits if h.path == f"{DOCS}calendar"]) == 5
        assert len(months()) == 5
        assert "warning: crawl.max_query_variants (5) reached for " in summary, summary
        skipped = reasons(sync_report(project), "skipped")
        assert "differ only by their query string" in skipped["docs/calendar?page=6"]

        settings(project, {"max_link_depth": 3, "max_query_variants": 100})
        summary = sync_quietly(load_processing_config(NAME, project))
        assert len(months()) == 3  # months 4 and 5 have left the scope: removed
        assert "more than crawl.max_link_depth (3) links from the start page" in summary, summary
        skipped = reasons(sync_report(project), "skipped")
        assert skipped["docs/calendar?page=4"] == (
            "4 links from the start page, more than crawl.max_link_depth"
        )

        settings(project, {"max_pages": 4})
        summary = sync_quietly(load_processing_config(NAME, project))
    assert "warning: crawl.max_pages (4) reached: " in summary, summary
    assert "beyond crawl.max_pages (4)" in reasons(sync_report(project), "skipped").values()


def test_every_url_not_kept_is_reported_and_verbose_prints_it(project: Path):
    site = calm(hostile(big=300_000))
    failing = [f"{DOCS}broken-{n}.html" for n in range(12)]  # 503: answers, not a dead host
    site.failing.update(failing)
    home = site.pages[DOCS]
    links = "".join(f'<a href="{path}">x</a>' for path in failing).encode()
    site.pages[DOCS] = (home[0], home[1].replace(b"</main>", links + b"</main>"))
    with serving(site) as origin:
        config = hostile_server(project, origin)
        synced = docbuild(project, "sync", NAME, "--verbose")
        with pytest.raises(SyncIncomplete) as again:
            sync_source(config)
    verbose, summary = synced.stdout, again.value.summary
    assert synced.returncode == 1 and "12 page(s) could not be fetched" in synced.stderr
    report_path = folder(project) / ".sync-report.json"
    assert f"every URL not kept, and why: {report_path}" in summary
    assert summary.count("  failed: ") == 10 and "... and 2 more" in summary
    report = sync_report(project)
    assert reasons(report, "missing")["docs/missing.html"] == "HTTP 404"
    skipped = reasons(report, "skipped")
    assert skipped["docs/download"] == "not a documentation page (application/zip)"
    assert "redirects to https://example.invalid/docs/" in skipped["docs/elsewhere.html"]
    assert len(report["failed"]) == 12, verbose
    assert set(reasons(report, "refused")) == {
        "docs/big.html",
        "docs/big-stream.html",
        "docs/loop-a.html",
    }
    for entry in report["failed"] + report["missing"] + report["skipped"]:
        assert f"    {entry['url']}: {entry['reason']}" in verbose
    for entry in report["refused"]:
        assert f"    {entry['url']}: " in verbose
    files, _ = discover(folder(project))  # the report is a dot file: the build does not read it
    assert files and not [f for f in files if "report" in f.relative]


def test_permanent_failures_are_recorded_and_not_retried_for_a_while(project: Path):
    site = calm(hostile(big=300_000))
    refused = {f"{DOCS}big.html", f"{DOCS}big-stream.html", f"{DOCS}loop-a.html"}
    with serving(site) as origin:
        config = hostile_server(project, origin)
        sync_quietly(config)
        record = manifest(project)["refused"]
        assert {url.removeprefix(origin) for url in record} == refused
        assert "redirect loop" in record[f"{origin}{DOCS}loop-a.html"]["reason"]
        assert "larger than max_file_bytes" in record[f"{origin}{DOCS}big.html"]["reason"]

        site.hits.clear()
        summary = sync_quietly(config)
        assert not refused & {h.path for h in site.hits}  # not asked again
        assert "3 refused for good" in summary
        assert set(manifest(project)["refused"]) == set(record)  # still recorded

        site.hits.clear()
        forced = docbuild(project, "sync", NAME, "--retry-refused")
        assert forced.returncode == 0 and refused <= {h.path for h in site.hits}

        path = folder(project) / ".sync.json"  # a week later
        data = json.loads(path.read_text())
        week_ago = (datetime.now(UTC) - timedelta(days=8)).isoformat(timespec="seconds")
        for refusal in data["refused"].values():
            refusal["since"] = week_ago
        path.write_text(json.dumps(data))
        site.hits.clear()
        sync_quietly(config)
        assert refused <= {h.path for h in site.hits}


def test_the_sync_keeps_no_page_the_build_would_skip(project: Path):
    site = calm(hostile(big=300_000))
    site.pages[f"{DOCS}large.html"] = ("text/html", b"<p>" + b"large " * 25_000 + b"</p>")
    home = site.pages[DOCS]
    site.pages[DOCS] = (home[0], home[1].replace(b"</main>", b'<a href="large.html">L</a></main>'))
    with serving(site) as origin:
        config = hostile_server(project, origin)  # max_file_bytes: 200 kB
        assert config.max_file_bytes == 200_000
        sync_quietly(config)
    pages = manifest(project)["pages"]
    assert "large.html" in pages  # 150 kB: kept
    assert "big.html" not in pages and not (folder(project) / "big.html").exists()  # 300 kB
    refused = reasons(sync_report(project), "refused")
    assert refused["docs/big.html"].startswith(
        "300,000 bytes, larger than max_file_bytes (200,000 bytes)"
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:99999/", "has an invalid port (99999)"),
        ("http://:8801/", "has no host name"),
        ("http://::1:8801/docs/", "IPv6 address without brackets"),
        ("https://user:secret@docs.example.org/", "holds credentials"),
        ("file:///home/me/docs/", "give it as --source PATH"),
        ("https://docs.example.org/a guide/", "contains white space"),
    ],
)
def test_scaffold_checks_the_whole_url(project: Path, url: str, message: str):
    with pytest.raises(ScaffoldError, match=re.escape(message)):
        scaffold(NAME, site_url=url, root=project)
    assert not (project / "servers" / NAME).exists()


def test_scaffold_says_what_is_wrong_with_a_url(project: Path):
    made = docbuild(project, "scaffold", NAME, "--url", "http://127.0.0.1:99999/")
    assert made.returncode == 2 and "Traceback" not in made.stderr
    assert "a port is a number from 1 to 65535" in made.stderr
    assert scaffold(NAME, site_url="http://[::1]:8801/docs/", root=project).is_dir()


def test_a_bad_url_in_the_configuration_is_refused_when_it_loads(project: Path):
    from docbuild.config import ConfigError

    scaffold(NAME, site_url="http://127.0.0.1:8801/docs/", root=project)
    edit_config(project, "http://127.0.0.1:8801/docs/", "http://127.0.0.1:88010/docs/")
    with pytest.raises(ConfigError, match=r"source\.url: .* has an invalid port \(88010\)"):
        load_processing_config(NAME, project)
    synced = docbuild(project, "sync", NAME)
    assert synced.returncode == 2 and "a port is a number from 1 to 65535" in synced.stderr


def test_one_sync_of_a_server_at_a_time(project: Path, site: tuple[Site, str]):
    site_, origin = site
    fast(project, origin)
    site_.hold_after = 3  # the first sync waits on the site
    first = start_sync(project)
    until(lambda: len(site_.page_bodies()) >= 3, first)
    second = docbuild(project, "sync", NAME)
    assert second.returncode == 1, second.stdout
    assert f"another sync of {NAME} is running (pid {first.pid})" in second.stderr
    config = load_processing_config(NAME, project)
    with pytest.raises(SyncError, match="another sync"):  # the build's and watch's sync too
        sync_source(config)
    site_.released.set()
    assert first.wait(60) == 0, first.communicate()
    assert sync_source(config).startswith("synced")  # the lock went with the first sync
