"""A documentation site by its URL: ``docbuild scaffold --url`` and ``docbuild sync`` against a
real HTTP server on 127.0.0.1 (``site_server``) serving the Python tutorial from the corpora,
with robots.txt, a sitemap index, redirects, canonical links, ETags, 429s, slow and vanishing
pages. Run as a user runs them: the command line, in a project of its own."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, corpus
from docbuild.services.ask import server_script
from docbuild.services.watch import parse_duration
from fastmcp import Client
from site_server import Site, serving
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
    synced = docbuild(project, "sync", NAME)
    assert synced.returncode == 0, synced.stderr
    assert "17 new" in synced.stdout and "1 forbidden by robots.txt" in synced.stdout

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
    # 4 requests a second and 4 in flight by default; the 429 paused the host for a second
    starts = sorted(h.started for h in hits)
    assert all(b - a >= 0.2 for a, b in itertools.pairwise(starts)), starts
    assert site_.most_in_flight <= 4
    errors = [h for h in hits if h.path == f"{TUTORIAL}errors.html"]
    assert [h.status for h in errors] == [429, 200]
    assert errors[1].started - errors[0].ended >= 0.9
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
    assert third.returncode == 0, third.stderr
    assert "1 updated" in third.stdout and "1 removed" in third.stdout
    assert "2 failed" in third.stdout and "venv.html: HTTP 503" in third.stdout
    assert "modules.html: no answer within 1 s" in third.stdout
    names = {p.name for p in folder(project).glob("*.html")}
    assert "whatnow.html" not in names  # 404: removed
    assert {"venv.html", "modules.html"} <= names  # a 5xx or a timeout deletes nothing
    assert b"Comets" in (folder(project) / "classes.html").read_bytes()
    pages = manifest(project)["pages"]
    assert "whatnow.html" not in pages and {"venv.html", "modules.html"} <= set(pages)


def test_an_interrupted_sync_resumes_without_fetching_again(project: Path, site: tuple[Site, str]):
    site_, origin = site
    fast(project, origin)
    site_.hold_after = 8  # the site answers 8 pages, then holds the rest: stopped half-way
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(project)}
    sync = subprocess.Popen(
        [DOCBUILD, "sync", NAME],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        # Ctrl-C reaches the sync as in a terminal, even when these tests run in a background
        # job (whose shell ignores SIGINT, and the children inherit that)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while len(site_.page_bodies()) < 8:
        assert time.monotonic() < deadline and sync.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)  # the pages answered are written and recorded
    sync.send_signal(signal.SIGINT)  # Ctrl-C
    time.sleep(0.5)
    site_.released.set()  # the requests in flight are answered; no new one is sent
    _, err = sync.communicate(timeout=30)
    assert sync.returncode == 130 and b"run it again to resume" in err, err
    assert not list(folder(project).rglob("*.part"))  # no half-written page
    record = manifest(project)
    assert not record["complete"] and len(record["pages"]) >= 4
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
    assert bad.returncode == 2 and "max_pages must be a positive number" in bad.stderr


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
