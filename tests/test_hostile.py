"""Hostile sources built end to end (tests/hostile.py): the build finishes, reports each file it
skipped with its reason, stores nothing from outside the source folder and no URL but http(s)
or relative ones; the model's text cites odd names by working URLs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from docbuild.confine import inside
from docbuild.links import drop_unsafe_urls, is_safe_url, url_of_path
from docbuild.stages.discover import discover
from docserve.folder import ServerFolder
from hostile import (
    INVALID_NAME,
    ODD_NAMES,
    REFUSED,
    SECRET,
    UNSAFE_URLS,
    write_hostile_sources,
)

REPO = Path(__file__).resolve().parents[1]
NAME = "hostile-docs"
URL_BASE = "https://docs.example.org/hostile"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A project with the hostile folder scaffolded as server ``hostile-docs`` and built by
    ``docbuild build`` as a maintainer runs it; returns the project root."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "servers").mkdir()
    write_hostile_sources(root / "source", root / "outside")
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    docbuild = [sys.executable, "-m", "docbuild.cli"]
    scaffold = [*docbuild, "scaffold", NAME, "--source", str(root / "source")]
    subprocess.run([*scaffold, "--url-base", URL_BASE], env=env, check=True, capture_output=True)
    built = subprocess.run([*docbuild, "build", NAME], env=env, capture_output=True, text=True)
    (root / "build.log").write_text(built.stdout + built.stderr)
    assert built.returncode == 0, built.stderr[-3000:]
    return root


def database(root: Path) -> Path:
    return ServerFolder(root / "servers" / NAME, NAME).database


def rows(root: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(database(root)), read_only=True) as con:
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
    log = (hostile / "build.log").read_text()
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
