"""The maintainers' web page, route by route, over a real build: what a maintainer sees on each
page, the build started from it, every bad input (foreign hosts and origins, crafted paths, huge
queries, a second build, a missing token, an open redirect), and every fault of a server's files
(invalid YAML, a truncated or locked database, a missing model) explained on the page."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from html import unescape
from pathlib import Path

import duckdb
import httpx
import pytest
from conftest import build_pages
from docbuild.cli import main as docbuild
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docbuild.ui.app import create_app
from docbuild.ui.builds import LOG_NAME, lock_holder
from docbuild.ui.serve import UIError, serve
from docbuild.util.build_lock import BuildLocked, build_lock
from docserve.answers import Answers
from docserve.doctor import Install
from docserve.doctor import report as doctor_report
from docserve.render import CharCounter
from endpoints import served
from starlette.testclient import TestClient

NAME = "ui-docs"
LONG = " ".join(
    f"Sentence {i} of the caching guide says that entries expire after a while." for i in range(90)
)
PAGES = {
    "install.md": "# Installing\n\n## From a wheel\n\nRun `pip install docs-mcp` in a fresh virtual "
    "environment.\n\n## From source\n\nClone the repository and run `uv sync`.\n",
    "caching.md": f"# Caching\n\n## Expiry\n\n{LONG}\n\n## Sizing\n\nThe cache holds 1000 entries.\n",
    "themes.md": "# Themes\n\n## Dark mode\n\nDark mode swaps the palette for light text.\n",
    "broken.md": "",  # an empty file: skipped, with the reason on the report
    "what?.md": "# Questions\n\nWhy do quokkas smile at the camera?\n",
    "weird name #1.md": "# Weird names\n\nAxolotls keep their gills all their lives.\n",
    "café.md": "# Café\n\nThe barista pours a flat white with capybaras on the foam.\n",
}
ODD_NAMES = {"what?.md": "quokkas", "weird name #1.md": "axolotls", "café.md": "capybaras"}
SECRET = "the outside file's secret words"
HEADERS = {  # what every response must carry
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def text_of(html: str) -> str:
    """The page's text, tags dropped and whitespace collapsed (what a reader sees)."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


@pytest.fixture(scope="module")
def project(tmp_path_factory, embedder) -> Path:
    root = tmp_path_factory.mktemp("ui")
    build_pages(root, NAME, {**PAGES, "outside.md": "# Outside\n\nA placeholder.\n"}, embedder)
    (root / "corpus" / "themes.md").write_text(
        PAGES["themes.md"] + "\n## Fonts\n\nSerif headings.\n"
    )
    Build(load_processing_config(NAME, root), embedder).run()  # the second build: a history
    outside = root / "elsewhere"  # a page indexed, then its source made a link out of the folder
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Outside\n\n{SECRET}.\n")
    (root / "corpus" / "outside.md").unlink()
    (root / "corpus" / "outside.md").symlink_to(outside / "secret.md")
    questions = root / "questions.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "q1",
                "query": "how do I install it from a wheel",
                "kind": "howto",
                "relevant": [{"path": "install.md", "heading": "From a wheel"}],
            }
        )
        + "\n"
    )
    return root


@pytest.fixture(scope="module")
def client(project: Path, monkeypatch_module) -> TestClient:
    monkeypatch_module.setenv("DOCMCP_PROJECT_ROOT", str(project))
    assert docbuild(["eval", NAME, "--queries", str(project / "questions.jsonl")]) == 0
    return TestClient(create_app(project), base_url="http://127.0.0.1:8780")


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_the_index_lists_every_server_with_its_figures(client: TestClient):
    page = client.get("/")
    assert page.status_code == 200
    seen = text_of(page.text)
    info = client.app.state.ui.project.server(NAME).info()
    assert f"{NAME} {info.chunk_count} {info.document_count}" in seen
    assert str(info.built_at)[:10] in seen and "fp32" in seen
    assert "1.000 hybrid section Hit@5" in seen  # the eval run recorded above
    for page_name in ("history", "search", "quality", "build"):
        assert f'href="/servers/{NAME}/{page_name}"' in page.text


def test_the_report_charts_the_build(client: TestClient, project: Path):
    page = client.get(f"/servers/{NAME}")
    assert page.status_code == 200
    seen = text_of(page.text)
    report = json.loads((project / "servers" / NAME / "build" / "report.json").read_text())
    assert page.text.count("<svg") == 2  # time per stage, chunk lengths
    for stage in report["seconds"]:
        assert f"{stage}: " in page.text  # each bar says its stage and time
    assert "chunks by length (tokens)" in seen and "Chunk hygiene" in seen
    skipped = {p["path"]: p["reason"] for p in report["problems"] if p["skipped"]}
    assert "empty" in skipped["broken.md"] and f"broken.md : {skipped['broken.md']}" in seen
    assert ".md" in seen and "all-MiniLM-L6-v2" in seen and "database" in seen


def test_history_lists_the_builds_and_compares_two(client: TestClient):
    page = client.get(f"/servers/{NAME}/history")
    assert page.status_code == 200
    ids = [int(i) for i in re.findall(r'name="old" value="(\d+)"', page.text)]
    assert len(ids) == 2
    old, new = sorted(ids)
    diff = text_of(client.get(f"/servers/{NAME}/history?old={old}&new={new}").text)
    assert f"From build {old} to build {new}" in diff
    assert re.search(r"Changed \(\d+\) .*themes\.md", diff)
    assert re.search(r"chunks: [1-9]\d* added", diff)
    assert client.get(f"/servers/{NAME}/history?old=1&new=999").status_code == 404
    assert client.get(f"/servers/{NAME}/history?old=x&new=2").status_code == 400


def test_the_playground_shows_every_mode_and_the_model_s_text(client: TestClient):
    query = "how do I install it from a wheel"
    page = client.get(f"/servers/{NAME}/search", params={"q": query})
    assert page.status_code == 200
    columns = re.findall(r'<section class="column">(.*?)</section>', page.text, re.S)
    assert len(columns) == 3
    for column in columns:
        first = text_of(column.split('class="hit"', 2)[1])
        assert "Installing › From a wheel" in first and "install.md" in first
    assert "vector #" in text_of(columns[0]) and "keyword #" in text_of(columns[0])
    assert f'href="/servers/{NAME}/documents/install.md?chunk=' in page.text
    engine = client.app.state.ui.project.server(NAME).runtime().engine
    expected = Answers(engine, engine.token_counter or CharCounter(), 4000).search(query).text
    tool = re.search(r'<pre class="tooltext">(.*?)</pre>', page.text, re.S).group(1)
    assert text_of(tool) == " ".join(expected.split())
    one = client.get(f"/servers/{NAME}/search", params={"q": query, "mode": "keyword"})
    assert one.text.count('<section class="column">') == 1


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"q": "x", "mode": "telepathy"}, "unknown mode"),
        ({"q": "x", "version": "9.9"}, "version"),
        ({"q": "x", "section": "nosuchheadingword"}, "no title or heading contains"),
        ({"q": "y" * 2500}, "under 2000"),
    ],
)
def test_a_bad_search_is_a_400_that_says_why(client: TestClient, params: dict, says: str):
    page = client.get(f"/servers/{NAME}/search", params=params)
    assert page.status_code == 400 and says in text_of(page.text)


def test_a_huge_query_string_is_refused(client: TestClient):
    page = client.get(f"/servers/{NAME}/search?q=" + "z" * 5000)
    assert page.status_code == 400 and "query string" in page.text


def test_the_chunk_browser_shows_outline_chunks_overlaps_and_source(client: TestClient):
    page = client.get(f"/servers/{NAME}/documents/caching.md", params={"chunk": "1"})
    assert page.status_code == 200
    seen = text_of(page.text)
    assert "Outline Caching" in seen and "Expiry" in seen and "Sizing" in seen
    chunks = re.findall(r'<article id="chunk-(\d+)"', page.text)
    assert len(chunks) >= 3 and chunks == [str(i) for i in range(len(chunks))]
    assert re.search(r"#1 Caching › Expiry · \d+ tokens", seen)
    assert '<mark class="overlap"' in page.text and "characters repeated from #0" in seen
    assert 'class="chunk focus"' in page.text
    assert "The cache holds 1000 entries." in page.text.split('class="source"')[1]


@pytest.mark.parametrize(
    "path",
    [
        "../../etc/passwd",
        "%2e%2e/%2e%2e/etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "/etc/passwd",
        "nothing-here.md",
    ],
)
def test_a_crafted_or_unknown_path_is_a_404(client: TestClient, path: str):
    page = client.get(f"/servers/{NAME}/documents/{path}")
    assert page.status_code == 404 and "root:" not in page.text


def test_a_symlink_out_of_the_source_folder_is_not_read(client: TestClient):
    page = client.get(f"/servers/{NAME}/documents/outside.md")
    assert page.status_code == 200  # built while it was a file; its source is now a link
    source = page.text.split('class="source"')[1]
    assert SECRET not in source and "not in the server" in source


def test_unknown_server_is_a_clear_404(client: TestClient):
    for url in ("/servers/nope", "/servers/nope/search?q=x", "/servers/nope/build"):
        page = client.get(url)
        assert page.status_code == 404 and "no server named 'nope'" in text_of(page.text)
        assert NAME in page.text  # the servers that do exist


def test_result_links_open_documents_with_odd_names(client: TestClient):
    """A page named with ``?``, ``#``, spaces or non-ASCII: its result link is encoded, and
    following it as a browser does opens that document."""
    for path, word in ODD_NAMES.items():
        page = client.get(f"/servers/{NAME}/search", params={"q": word, "mode": "keyword"})
        first = page.text.split('class="hit"', 2)[1]
        href = unescape(re.search(r'<a class="crumbs" href="([^"]+)"', first).group(1))
        assert href.startswith(f"/servers/{NAME}/documents/") and " " not in href
        opened = client.get(href)
        assert opened.status_code == 200, href
        assert f"<code>{path}</code>" in opened.text and word in opened.text.lower()


def test_quality_draws_one_line_per_question_file(client: TestClient, project: Path):
    """Two question files scored on the same build: a line each, titled with its path in the
    project, each point labelled with its build and date."""
    other = project / "more" / "questions.jsonl"  # the same file name, another folder
    other.parent.mkdir()
    question = {
        "id": "q2",
        "query": "how do I install it from a wheel",
        "kind": "howto",
        "relevant": [{"path": "nowhere.md", "heading": "Nowhere"}],  # never found: 0.000
    }
    other.write_text(json.dumps(question) + "\n")
    assert docbuild(["eval", NAME, "--queries", str(other)]) == 0
    page = client.get(f"/servers/{NAME}/quality")
    assert page.status_code == 200
    charts = re.findall(r'<figure class="chart">(.*?)</figure>', page.text, re.S)
    assert len(charts) == 2
    titles = [text_of(re.search(r"<figcaption>(.*?)</figcaption>", c).group(1)) for c in charts]
    assert titles == [
        "questions.jsonl · hybrid section Hit@5",
        "more/questions.jsonl · hybrid section Hit@5",
    ]
    values = [re.findall(r"<title>([^<]*)</title>", c) for c in charts]
    history = project / "servers" / NAME / "eval" / "history.jsonl"
    first, second = (json.loads(line) for line in history.read_text().splitlines())
    assert first["snapshot_id"] == second["snapshot_id"]  # the same build
    build, day = f"build {second['snapshot_id']}", second["time"][:10]
    assert values == [[f"{build}, {first['time'][:10]}: 1.000"], [f"{build}, {day}: 0.000"]]
    assert build in text_of(charts[1]) and day in text_of(charts[1])  # the x axis
    seen = text_of(page.text)
    assert "1 questions more/questions.jsonl" in seen and "howto Hit@5" in seen


def test_foreign_hosts_and_origins_are_refused_in_the_page_s_words(client: TestClient):
    host = client.get("/", headers={"host": "evil.example"})
    assert host.status_code == 403 and "docbuild ui --host" in host.text
    origin = client.get("/", headers={"origin": "http://evil.example"})
    assert origin.status_code == 403 and "own address" in origin.text
    for refused in (host, origin):
        assert "allowed_origins" not in refused.text and "allowed_hosts" not in refused.text
    assert client.get("/", headers={"origin": "http://127.0.0.1:8780"}).status_code == 200


def test_a_token_guards_every_page_beyond_loopback(project: Path):
    app = create_app(project, token="s3cret", allowed_hosts=["*"])
    with TestClient(app, base_url="http://docs.internal:8780") as guarded:
        assert guarded.get("/").status_code == 401
        opened = guarded.get("/servers?token=wrong", follow_redirects=False)
        assert opened.status_code == 401
        first = guarded.get(f"/servers/{NAME}?token=s3cret", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == f"/servers/{NAME}"
        assert guarded.get(f"/servers/{NAME}").status_code == 200  # the cookie it set
    with TestClient(app, base_url="http://docs.internal:8780") as other:
        assert other.get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200
    with pytest.raises(UIError, match="DOCMCP_UI_TOKEN"):
        serve(project, host="0.0.0.0", port=0)


@pytest.mark.parametrize(
    ("asked", "location"),
    [
        ("//evil.example/%2e%2e?token=s3cret", "/evil.example/%2e%2e"),
        ("/\\evil.example/?token=s3cret&q=x", "/evil.example/?q=x"),
        (
            f"/servers/{NAME}/documents/what%3F.md?token=s3cret&chunk=0",
            f"/servers/{NAME}/documents/what%3F.md?chunk=0",
        ),
    ],
)
def test_the_token_redirect_stays_on_this_origin(project: Path, asked: str, location: str):
    """``?token=`` redirects to the same path, still encoded, never to ``//host``."""
    app = create_app(project, token="s3cret", allowed_hosts=["docs.internal"])
    with TestClient(app, base_url="http://docs.internal:8780") as guarded:
        answer = guarded.get(f"http://docs.internal:8780{asked}", follow_redirects=False)
    target = answer.headers["location"]
    assert answer.status_code == 303 and "s3cret" not in target
    assert target.startswith("/") and not target.startswith(("//", "/\\", "/%5C"))
    assert target == location


def test_the_page_s_own_origin_is_accepted_beyond_loopback(project: Path):
    """Served under a host name with a token (``docbuild ui --host docs.internal``), the page's
    own requests carry its origin: they pass, and a foreign one is refused in the page's words."""
    app = create_app(project, token="s3cret", allowed_hosts=["docs.internal"])
    own = {"origin": "http://docs.internal:8780", "authorization": "Bearer s3cret"}
    with TestClient(app, base_url="http://docs.internal:8780") as guarded:
        page = guarded.get(f"/servers/{NAME}/build", headers=own)
        assert page.status_code == 200
        for origin in ("http://docs.internal:8780", "null"):  # null: a form under no-referrer
            stale = guarded.post(
                f"/servers/{NAME}/build", data={"token": "stale"}, headers={**own, "origin": origin}
            )
            assert stale.status_code == 403 and "form is out of date" in text_of(stale.text)
        foreign = guarded.post(
            f"/servers/{NAME}/build",
            data={"token": "x"},
            headers={**own, "origin": "http://evil.example"},
        )
    assert foreign.status_code == 403 and "own address (http://docs.internal:8780/)" in foreign.text
    assert "allowed_origins" not in foreign.text


def secured(response: httpx.Response) -> bool:
    return all(response.headers.get(k) == v for k, v in HEADERS.items())


def test_every_response_carries_the_security_headers(client: TestClient, project: Path):
    """Pages, static files, errors and the guard's own answers; and no page has an inline script
    or style, which the policy would block."""
    pages = [
        "/",
        f"/servers/{NAME}",
        f"/servers/{NAME}/history",
        f"/servers/{NAME}/search?q=caching",
        f"/servers/{NAME}/documents/caching.md",
        f"/servers/{NAME}/quality",
        f"/servers/{NAME}/build",
        "/servers/nope",
        "/no/such/page",
    ]
    for url in pages:
        page = client.get(url)
        assert secured(page), url
        assert not re.search(r"<script(?![^>]*\bsrc=)|\sstyle=|<style", page.text), url
    for url in ("/static/ui.css", "/static/build.js", f"/servers/{NAME}/build/events?after=x"):
        assert secured(client.get(url)), url
    assert secured(client.get("/", headers={"host": "evil.example"}))  # 403
    assert secured(client.get("/?q=" + "z" * 5000))  # 400
    guarded = TestClient(create_app(project, "s3cret", ["*"]), base_url="http://docs.internal")
    assert secured(guarded.get("/"))  # 401
    assert secured(guarded.get("/?token=s3cret", follow_redirects=False))  # 303


def test_a_stored_url_is_a_link_only_when_it_is_http(faulty: Path):
    """Defence in depth: a chunk's URL comes from the documentation; whatever the build lets
    through, the page links only http(s). (The build refuses such URLs, so the test writes them
    into a copy of a built database: a fault that cannot be made by a build.)"""
    name = "stored-urls"
    database = broken_copy(faulty, name) / "runtime" / "stored_urls.db"
    hostile = [
        "javascript:alert(1)",
        " JavaScript:alert(2)",
        "data:text/html,<script>alert(3)</script>",
        "vbscript:msgbox(4)",
        "file:///etc/passwd",
    ]
    con = duckdb.connect(str(database))
    paths = [p for (p,) in con.execute("SELECT DISTINCT path FROM chunks ORDER BY path").fetchall()]
    urls = dict(zip(paths, [*hostile, "https://docs.example/ok"], strict=False))
    for path, url in urls.items():
        con.execute("UPDATE chunks SET url = ?, section_url = ? WHERE path = ?", [url, url, path])
    con.close()
    client = TestClient(create_app(faulty), base_url="http://127.0.0.1:8780")
    for path, url in urls.items():
        page = client.get(f"/servers/{name}/documents/{path}")
        assert page.status_code == 200
        hrefs = [unescape(h).strip().lower() for h in re.findall(r'href="([^"]*)"', page.text)]
        assert all(h.startswith(("/", "#", "https://", "http://")) for h in hrefs), hrefs
        if url.startswith("https://"):
            assert url in hrefs
        else:
            assert url.strip() in text_of(page.text)  # shown, as text


# -- faults of a server's files: every page explains them --------------------------------------


@pytest.fixture(scope="module")
def faulty(tmp_path_factory, embedder) -> Path:
    """A project with one built server, ``base``, to copy and damage."""
    root = tmp_path_factory.mktemp("ui-faults")
    pages = {
        f"page{i}.md": f"# Page {i}\n\n## Part\n\nPage {i} is about kites.\n" for i in range(6)
    }
    build_pages(root, "base", pages, embedder)
    return root


def broken_copy(project: Path, name: str) -> Path:
    """A copy of the built server ``base`` as server ``name``, to damage."""
    target = project / "servers" / name
    shutil.copytree(project / "servers" / "base", target, symlinks=True)
    (target / "runtime" / "base.db").rename(target / "runtime" / f"{name.replace('-', '_')}.db")
    return target


def doctor_says(project: Path, name: str, capsys) -> list[tuple[str, str]]:
    """The ``--doctor`` report's failures for server ``name``: (what is wrong, the fix)."""
    doctor_report(Install.read(name, project / "servers" / name))
    printed = capsys.readouterr().out
    return re.findall(r"^FAIL\s+\S+(?: \S+)*?\s{2,}(.+)\n\s+fix: (.+)$", printed, re.M)


def explained(page: httpx.Response, name: str, status: int, state: str) -> str:
    """The page's text, once it is the fault page: status, state, navigation, no traceback."""
    seen = text_of(page.text)
    assert page.status_code == status, seen
    assert f"{name}: {state}" in seen
    assert f'href="/servers/{name}/build"' in page.text.split("</header>")[0]  # the nav
    assert "Traceback" not in page.text and "Internal Server Error" not in page.text
    return seen


def index_row(client: TestClient, name: str) -> str:
    row = re.search(rf'<tr>\s*<td><a href="/servers/{name}">.*?</tr>', client.get("/").text, re.S)
    return text_of(row.group(0))


SERVER_PAGES = ("", "/search?q=kites", "/documents/page1.md")


def test_a_truncated_database_is_explained_in_the_doctor_s_words(faulty: Path, capsys):
    name = "truncated"
    database = broken_copy(faulty, name) / "runtime" / "truncated.db"
    database.write_bytes(database.read_bytes()[: database.stat().st_size // 3])
    client = TestClient(create_app(faulty), base_url="http://127.0.0.1:8780")
    said = doctor_says(faulty, name, capsys)
    assert said and "cannot be read" in said[0][0]
    for page in SERVER_PAGES:
        seen = explained(client.get(f"/servers/{name}{page}"), name, 503, "database unreadable")
        for detail, fix in said:
            assert detail in seen and fix.replace("`", "") in seen
    assert f"database unreadable: {said[0][0]}" in index_row(client, name)


@pytest.mark.parametrize("config", ["processing_config.yaml", "server_config.yaml"])
def test_invalid_yaml_is_explained_with_its_line(faulty: Path, config: str):
    name = f"bad-{config.split('_')[0]}"
    (broken_copy(faulty, name) / "config" / config).write_text("search:\n  top_k: [5\nx: 1\n")
    client = TestClient(create_app(faulty), base_url="http://127.0.0.1:8780")
    pages = SERVER_PAGES if config.startswith("processing") else SERVER_PAGES[1:]
    for page in pages:
        seen = explained(client.get(f"/servers/{name}{page}"), name, 503, "config invalid")
        assert f"{config} is not valid YAML" in seen and "(line 3, column 2)" in seen
        assert "correct the file as the error says" in seen
    if config.startswith("processing"):  # the index reads the build's configuration
        row = index_row(client, name)
        assert "config invalid" in row and "(line 3, column 2)" in row and "not built" not in row


def test_a_locked_database_is_explained(faulty: Path):
    """Another program holds the database open for writing (a real second process)."""
    name = "locked"
    database = broken_copy(faulty, name) / "runtime" / "locked.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, sys; c = duckdb.connect({str(database)!r}); "
            "print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        client = TestClient(create_app(faulty), base_url="http://127.0.0.1:8780")
        for page in SERVER_PAGES:
            seen = explained(client.get(f"/servers/{name}{page}"), name, 503, "database unreadable")
            assert f"(PID {holder.pid})" in seen and "close the program that holds" in seen
        assert "database unreadable" in index_row(client, name)
    finally:
        holder.stdin.close()
        holder.wait(10)


def test_a_server_not_built_yet_says_how_to_build_it(faulty: Path):
    name = "fresh"
    scaffold(name, str(faulty / "corpus"), "md", root=faulty)
    client = TestClient(create_app(faulty), base_url="http://127.0.0.1:8780")
    for page in SERVER_PAGES:
        seen = explained(client.get(f"/servers/{name}{page}"), name, 404, "not built")
        assert "fresh.db not found" in seen and "rebuild it with tools/build_mcp.sh fresh" in seen
    assert "not built" in index_row(client, name)


def test_a_missing_model_file_is_explained_on_the_search_page(faulty: Path):
    name = "no-model"
    (broken_copy(faulty, name) / "runtime" / "model" / "model.safetensors").unlink()
    client = TestClient(create_app(faulty), base_url="http://127.0.0.1:8780")
    page = client.get(f"/servers/{name}/search", params={"q": "kites"})
    assert page.status_code == 200  # it still answers, by keyword
    seen = text_of(page.text)
    assert (
        "model.safetensors missing" in seen
        and "rebuild it with tools/build_mcp.sh no-model" in seen
    )
    assert "Page 0 › Part" in seen and "Traceback" not in page.text


def test_an_unexpected_error_is_a_page_without_a_traceback(faulty: Path, capfd):
    """An eval record the quality page cannot draw (a hand-edited history): the catch-all."""
    name = "odd-history"
    history = broken_copy(faulty, name) / "eval" / "history.jsonl"
    history.parent.mkdir(exist_ok=True)
    score = {"mode": "hybrid", "section_hit": {"5": 0.5}}  # the other figures missing
    history.write_text(json.dumps({"time": "2026-01-01T00:00:00", "scores": [score]}) + "\n")
    client = TestClient(create_app(faulty), base_url="http://127.0.0.1:8780")
    page = client.get(f"/servers/{name}/quality")
    seen = text_of(page.text)
    assert page.status_code == 500 and secured(page)
    assert re.search(r"unexpected error \(\w+Error: ", seen) and "Traceback" not in page.text
    assert f'href="/servers/{name}/build"' in page.text  # the server's navigation
    assert "Traceback" in capfd.readouterr().err  # for the maintainer, in the UI's output


# -- builds -----------------------------------------------------------------------------------


def wait_for_end(client: TestClient, timeout: float = 180) -> str:
    """The build's event stream, read to its end."""
    deadline = time.monotonic() + timeout
    with client.stream("GET", f"/servers/{NAME}/build/events") as events:
        assert secured(events)
        body = ""
        for chunk in events.iter_text():
            body += chunk
            if "event: end" in body or time.monotonic() > deadline:
                break
    return body


def form_token(client: TestClient) -> str:
    page = client.get(f"/servers/{NAME}/build")
    return re.search(r'name="token" value="([^"]+)"', page.text).group(1)


def test_a_build_starts_by_post_streams_its_stages_and_refuses_a_second(
    client: TestClient, project: Path
):
    token = form_token(client)
    assert client.post(f"/servers/{NAME}/build", data={"token": "forged"}).status_code == 403
    started = client.post(f"/servers/{NAME}/build", data={"token": token}, follow_redirects=False)
    assert started.status_code == 303 and secured(started)
    second = client.post(f"/servers/{NAME}/build", data={"token": token})
    assert second.status_code == 409
    assert f"another build of {NAME} is running" in text_of(second.text)
    events = wait_for_end(client)
    assert "event: end\r\ndata: 0" in events or "event: end\ndata: 0" in events
    assert "[embed] done in" in events and "event: stages" in events
    after = text_of(client.get(f"/servers/{NAME}/build").text)  # the log stays readable
    assert "Finished" in after and "[materialize] ..." in after and "package" in after


def test_a_page_build_holds_the_lock_before_it_answers(client: TestClient, project: Path):
    """A terminal build started just after the page answered is refused with the CLI's
    message: the page's build already holds the lock."""
    work_dir = project / "servers" / NAME / "build"
    started = client.post(
        f"/servers/{NAME}/build", data={"token": form_token(client)}, follow_redirects=False
    )
    assert started.status_code == 303
    try:
        with pytest.raises(BuildLocked) as refused, build_lock(work_dir, NAME):
            pass
        pid = client.app.state.ui.builds.last(NAME).pid
        assert str(refused.value) == (
            f"another build of {NAME} is running (pid {pid}); wait for it or pass --wait"
        )
    finally:
        events = wait_for_end(client)
    assert re.search(r"event: end\r?\ndata: 0", events)


def test_a_build_refused_by_a_terminal_build_leaves_page_and_log_alone(
    client: TestClient, project: Path
):
    work_dir = project / "servers" / NAME / "build"
    log = work_dir / LOG_NAME
    kept = log.read_bytes() if log.exists() else None
    before = text_of(client.get(f"/servers/{NAME}/build").text)
    with build_lock(work_dir, NAME):  # a build in a terminal
        held = client.post(f"/servers/{NAME}/build", data={"token": form_token(client)})
        assert held.status_code == 409
        refusal = text_of(held.text)
        assert f"another build of {NAME} is running (pid {os.getpid()})" in refusal
    assert (log.read_bytes() if log.exists() else None) == kept
    after = text_of(client.get(f"/servers/{NAME}/build").text)
    assert after == before and "Failed" not in after


def test_open_build_views_hold_no_thread(project: Path):
    """Twelve build views open on a running build (its process paused, so it runs for as long
    as the test needs): the UI's threads stay as many, and search still answers."""
    work_dir = project / "servers" / NAME / "build"
    with (
        served(create_app(project)) as url,
        httpx.Client(base_url=url, timeout=30, follow_redirects=True) as http,
    ):
        token = re.search(r'name="token" value="([^"]+)"', http.get(f"/servers/{NAME}/build").text)
        started = http.post(f"/servers/{NAME}/build", data={"token": token.group(1)})
        assert started.status_code == 200 and "Running since" in started.text
        deadline = time.monotonic() + 60
        while (pid := lock_holder(work_dir)) is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(pid, signal.SIGSTOP)
        try:
            assert http.get(f"/servers/{NAME}/search", params={"q": "caching"}).status_code == 200
            threads = threading.active_count()
            with contextlib.ExitStack() as views:
                for _ in range(12):
                    view = views.enter_context(http.stream("GET", f"/servers/{NAME}/build/events"))
                    assert view.status_code == 200
                time.sleep(1.5)  # every view has looked for new lines a few times
                search = http.get(f"/servers/{NAME}/search", params={"q": "cache expiry"})
                assert search.status_code == 200 and "Caching › Expiry" in text_of(search.text)
                assert threading.active_count() <= threads + 1
        finally:
            os.kill(pid, signal.SIGCONT)
        with http.stream("GET", f"/servers/{NAME}/build/events") as events:
            body = ""
            for chunk in events.iter_text():
                body += chunk
                if "event: end" in body:
                    break
    assert re.search(r"event: end\r?\ndata: 0", body)


def test_starting_a_build_by_get_is_not_possible(client: TestClient):
    assert client.get(f"/servers/{NAME}/build", params={"token": "x"}).status_code == 200
    assert client.put(f"/servers/{NAME}/build").status_code == 405


def test_a_new_build_is_searched_once_it_has_finished(client: TestClient, project: Path, embedder):
    themes = project / "corpus" / "themes.md"
    themes.write_text(themes.read_text() + "\n## Contrast\n\nYellow outlines mark every button.\n")
    Build(load_processing_config(NAME, project), embedder).run()
    deadline = time.monotonic() + 30
    while True:  # the page answers from the previous build until the new one has loaded
        page = client.get(f"/servers/{NAME}/search", params={"q": "yellow outlines"})
        if "Themes › Contrast" in text_of(page.text):
            break
        assert time.monotonic() < deadline, "the new build was never searched"
        time.sleep(0.2)
    chunk_browser = text_of(client.get(f"/servers/{NAME}/documents/themes.md").text)
    assert "Contrast" in chunk_browser
