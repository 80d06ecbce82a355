"""Hostile sources built end to end (tests/hostile.py): the build finishes, reports each file it
skipped with its reason, stores nothing from outside the source folder and no URL but http(s)
or relative ones; the model's text cites odd names by working URLs."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlencode, urlsplit

import duckdb
import pytest
import yaml
from docbuild.confine import inside
from docbuild.links import drop_unsafe_urls, is_safe_url, url_of_path
from docbuild.stages.discover import discover
from docserve.folder import ServerFolder
from hostile import (
    INVALID_NAME,
    ODD_NAMES,
    REFUSED,
    SCRIPT,
    SECRET,
    UNSAFE_URLS,
    write_hostile_sources,
)
from site_server import CYRILLIC, JAPANESE, serving
from site_server import hostile as hostile_site
from test_ui_browser import CHROMIUM, free_port

REPO = Path(__file__).resolve().parents[1]
NAME = "hostile-docs"
URL_BASE = "https://docs.example.org/hostile"


SITE = "hostile-site"  # the hostile site, synced whole but for what it makes fail
DYING = "dying-site"  # the hostile site whose host dies mid-sync
QUICK_CRAWL = {"requests_per_second": 200, "retries": 0, "deadline": 2, "max_link_depth": 5}


def docbuild(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``docbuild ARGS`` as a maintainer runs it in the project at ``root``; its output is kept
    in ``root/NAME.log`` (NAME: the command and server)."""
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "docbuild.cli", *args], env=env, capture_output=True, text=True
    )
    (root / f"{args[0]}-{args[1]}.log").write_text(done.stdout + done.stderr)
    return done


def set_crawl(root: Path, name: str, crawl: dict[str, object], max_file_bytes: int) -> None:
    """Set ``source.crawl`` keys and ``max_file_bytes`` in server ``name``'s config."""
    path = ServerFolder(root / "servers" / name, name).processing_config
    config = yaml.safe_load(path.read_text())
    config["source"]["crawl"].update(crawl)
    config["max_file_bytes"] = max_file_bytes
    path.write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A project with three servers, each scaffolded, synced and built with ``docbuild`` as a
    maintainer runs it: the hostile folder (``hostile-docs``), the hostile site (``hostile-site``,
    its trickling page failing at the deadline) and the same site dying after two pages
    (``dying-site``); returns the project root. Each command's output is in ``root/*.log``."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "servers").mkdir()
    write_hostile_sources(root / "source", root / "outside")
    source = ["--source", str(root / "source"), "--url-base", URL_BASE]
    assert docbuild(root, "scaffold", NAME, *source).returncode == 0
    built = docbuild(root, "build", NAME)
    assert built.returncode == 0, built.stderr[-3000:]
    for name, dies in ((SITE, None), (DYING, 2)):
        with serving(hostile_site(big=300_000, trickle=0.5, die_after=dies)) as origin:
            assert docbuild(root, "scaffold", name, "--url", f"{origin}/docs/").returncode == 0
            set_crawl(root, name, QUICK_CRAWL, max_file_bytes=200_000)
            synced = docbuild(root, "sync", name)
            assert synced.returncode == 1, synced.stderr  # partial: it says so
        built = docbuild(root, "build", name)
        assert built.returncode == 0, built.stderr[-3000:]
    return root


def database(root: Path, name: str = NAME) -> Path:
    return ServerFolder(root / "servers" / name, name).database


def rows(root: Path, sql: str, name: str = NAME) -> list[tuple]:
    with duckdb.connect(str(database(root, name)), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_discovery_lists_nothing_outside_the_root(tmp_path: Path):
    write_hostile_sources(tmp_path / "source", tmp_path / "outside")
    files, problems = discover(tmp_path / "source")
    listed = {f.relative for f in files}
    assert all(inside(tmp_path / "source", f.path) for f in files)
    assert {"guide/intro.md", "inner/kept.md", *ODD_NAMES} <= listed
    assert "alias/kept.md" not in listed and "intro-link.md" not in listed  # read once, by name
    reasons = {p.path: p.reason for p in problems}
    for path in ("passwd.md", "passwd-include.md", "linked-include.adoc", "dangling.md"):
        assert path in reasons and path not in listed
    assert "outside the source folder" in reasons["linked-out/"]
    assert "dangling" in reasons["dangling.md"]
    assert "alias/escape.md" in reasons and "inner/escape.md" in reasons
    assert "not valid UTF-8" in reasons[INVALID_NAME.decode("utf-8", "backslashreplace")]
    assert not any(p.startswith("loop") for p in listed | set(reasons))  # a loop ends


def test_only_web_or_relative_urls_are_safe():
    for url in [*UNSAFE_URLS, "JAVASCRIPT:x", "\x01javascript:x", "mailto:a@b.c"]:
        assert not is_safe_url(url), url
    for url in ["https://a.example/x?y#z", "http://a", "/docs/page", "page.html", "#top", ""]:
        assert is_safe_url(url), url
    assert url_of_path(URL_BASE, "what?") == f"{URL_BASE}/what%3F"
    assert url_of_path(URL_BASE + "/", "a b/#1 100%") == f"{URL_BASE}/a%20b/%231%20100%25"
    assert url_of_path(URL_BASE, "café") == f"{URL_BASE}/caf%C3%A9"


def test_an_unsafe_url_is_dropped_with_a_note_naming_the_file():
    from docbuild.documents import Document

    docs = [Document("a.jsonl#1", "a.jsonl", "A", [], url=" javascript:alert(1)")]
    notes = drop_unsafe_urls(docs, "a.jsonl")
    assert docs[0].url is None
    assert [n.path for n in notes] == ["a.jsonl"] and "javascript" in notes[0].reason


@pytest.mark.slow
def test_the_build_reports_each_refused_file_and_stores_nothing_from_outside(hostile: Path):
    log = (hostile / f"build-{NAME}.log").read_text()
    skipped = log.split("skipped files:", 1)[1]
    for path, word in REFUSED.items():
        line = next((line for line in skipped.splitlines() if f"- {path}:" in line), None)
        assert line is not None and word in line, f"{path} not reported as {word}"
    assert "records.jsonl: URL" in log and "dropped" in log  # each unsafe URL named
    assert SECRET.encode() not in database(hostile).read_bytes()
    texts = rows(
        hostile,
        "SELECT content || title || list_aggregate(section_hierarchy, 'string_agg', ' ') FROM chunks",
    )
    assert texts and not any(SECRET in t for (t,) in texts)
    paths = {p for (p,) in rows(hostile, "SELECT DISTINCT path FROM chunks")}
    assert {"includes.md", "chapter.adoc", "page.rst", "module.mdx", "entity.html"} <= paths
    assert set(ODD_NAMES) <= paths
    kept = " ".join(t for (t,) in texts)
    assert "An included fragment that stays inside." in kept  # inside includes still work
    assert "Part of the chapter, included from inside." in kept


@pytest.mark.slow
def test_every_stored_url_is_web_and_encodes_the_path(hostile: Path):
    urls = rows(hostile, "SELECT path, url, section_url FROM chunks")
    for path, url, section_url in urls:
        for link in (url, section_url):
            assert link is None or link.startswith(("https://", "http://")), (path, link)
    by_path = {path: url for path, url, _ in urls}
    assert by_path["what?.md"] == f"{URL_BASE}/what%3F"
    assert by_path["weird name #1.md"] == f"{URL_BASE}/weird%20name%20%231"
    assert by_path["café déjà.md"] == f"{URL_BASE}/caf%C3%A9%20d%C3%A9j%C3%A0"
    assert by_path["guide/intro.md"] == f"{URL_BASE}/guide/intro"  # front matter url: ignored
    records = dict(rows(hostile, "SELECT title, url FROM chunks WHERE path = 'records.jsonl'"))
    assert records["Safe record"] == "https://ok.example/a"
    assert all(records[f"Unsafe record {n}"] is None for n in range(len(UNSAFE_URLS)))


@pytest.mark.slow
def test_the_model_reads_odd_names_as_working_links_and_no_script_url(hostile: Path):
    from fastmcp import Client

    folder = ServerFolder(hostile / "servers" / NAME, NAME)

    async def ask(query: str) -> str:
        async with Client(folder.script) as client:
            result = await client.call_tool("search", {"query": query, "top_k": 10})
            return "\n".join(c.text for c in result.content if hasattr(c, "text"))

    text = asyncio.run(ask("awkward file name question mark hash percent"))
    assert f"{URL_BASE}/what%3F" in text and f"{URL_BASE}/weird%20name%20%231" in text
    records = asyncio.run(ask("Unsafe record"))
    assert "Unsafe record" in records
    assert "javascript" not in records.lower() and "data:text" not in records
    assert SECRET not in text + records


@pytest.mark.slow
def test_a_hostile_site_syncs_what_it_can_says_what_it_did_not_and_builds(hostile: Path):
    synced = (hostile / f"sync-{SITE}.log").read_text()
    assert "trickle.html" in synced and "crawl.deadline" in synced  # the failed page, named
    report = json.loads((hostile / "source-documentation" / SITE / ".sync-report.json").read_text())
    listed = json.dumps(report)
    for page in ("big.html", "big-stream.html", "loop-a.html", "missing.html", "elsewhere.html"):
        assert page in listed, page
    assert "max_link_depth" in listed or "max_query_variants" in listed  # the trap, bounded
    built = (hostile / f"build-{SITE}.log").read_text()
    assert "could not fetch 1 page(s)" in built  # the build says what the sync lacked
    texts = " ".join(t for (t,) in rows(hostile, "SELECT content FROM chunks", SITE))
    assert CYRILLIC in texts and JAPANESE in texts  # charsets named only by the header
    titles = {t for (t,) in rows(hostile, "SELECT DISTINCT title FROM chunks", SITE)}
    assert {"Topic A", "Topic B", "Topic C"} <= titles  # shared canonicals: all kept
    assert "<script>alert('title')</script> Scripted page" in titles  # as text
    urls = rows(hostile, "SELECT url, section_url FROM chunks", SITE)
    assert all(u.startswith("http://127.0.0.1:") for pair in urls for u in pair if u)
    assert "javascript" not in texts.lower() and "data:text" not in texts

    dying = (hostile / f"sync-{DYING}.log").read_text()
    assert "stopped before the end" in dying and "Traceback" not in dying
    built = (hostile / f"build-{DYING}.log").read_text()
    assert "did not finish" in built and f"tools/sync_documentation.sh {DYING}" in built
    assert rows(hostile, "SELECT count(*) FROM chunks", DYING)[0][0] > 0  # what it had


@pytest.fixture(scope="module")
def ui(hostile: Path) -> Iterator[str]:
    """``docbuild ui`` over the hostile project, as a maintainer starts it; its base URL."""
    port = free_port()
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(hostile)}
    with (hostile / "ui.log").open("w") as log:
        served = subprocess.Popen(
            [sys.executable, "-m", "docbuild.cli", "ui", "--port", str(port)], env=env, stderr=log
        )
        try:
            wait_for_port(port)
            yield f"http://127.0.0.1:{port}"
        finally:
            served.terminate()
            served.wait(10)


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


SEARCHES = {  # server -> questions whose results hold the hostile text
    NAME: ["awkward file name", "Installing the tool prefix option", "Unsafe record", "Includes"],
    SITE: ["scripted tool options", "topic", "Установка"],
    DYING: ["topic"],
}


@pytest.mark.slow
@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (tools/install_chromium.sh)"
)
def test_every_page_shows_hostile_text_escaped_and_every_result_link_opens(hostile: Path, ui: str):
    from playwright.sync_api import sync_playwright

    dialogs: list[str] = []
    blocked: list[str] = []
    opened: set[str] = set()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        tab = browser.new_page()
        tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        tab.on(
            "console",
            lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None,
        )

        def visit(url: str) -> str:
            answer = tab.goto(url)
            assert answer is not None and answer.status == 200, (url, answer and answer.status)
            for href in tab.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
                assert href.startswith(("http://", "https://")), (url, href)
            return tab.locator("main").inner_text()

        visit(ui + "/")
        for name, questions in SEARCHES.items():
            for route in ("", "/history", "/quality", "/build"):
                visit(f"{ui}/servers/{name}{route}")
            for question in questions:
                visit(f"{ui}/servers/{name}/search?" + urlencode({"q": question}))
                links = tab.eval_on_selector_all("a.crumbs", "els => els.map(e => e.href)")
                assert links, (name, question)
                for link in links:
                    if link not in opened:
                        opened.add(link)
                        assert "chunk" in visit(link)  # the chunk browser shows the passage
        intro = visit(f"{ui}/servers/{NAME}/documents/guide/intro.md")
        assert f"{SCRIPT} Intro" in intro and "Installing" in intro  # shown, as text
        scripted = visit(f"{ui}/servers/{SITE}/search?" + urlencode({"q": "scripted tool"}))
        assert "<script>alert('title')</script> Scripted page" in scripted
        browser.close()
    assert len(opened) >= 10  # the results of every server, each opened
    assert dialogs == [], dialogs  # no script of the documentation ran
    assert blocked == [], blocked
    paths = {p for (p,) in rows(hostile, "SELECT DISTINCT path FROM chunks")}
    assert {unquote(urlsplit(link).path).split("/documents/", 1)[1] for link in opened} >= set(
        ODD_NAMES
    ) & paths
