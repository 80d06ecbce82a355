"""The maintainers' web page, route by route, over a real build: what a maintainer sees on each
page, the build started from it, and every bad input (foreign hosts, crafted paths, huge
queries, a second build, a missing token)."""

from __future__ import annotations

import json
import re
import time
from html import unescape
from pathlib import Path

import pytest
from conftest import build_pages
from docbuild.cli import main as docbuild
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.ui.app import create_app
from docbuild.ui.serve import UIError, serve
from docbuild.util.build_lock import build_lock
from docserve.answers import Answers
from docserve.render import CharCounter
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
}
SECRET = "the outside file's secret words"


def text_of(html: str) -> str:
    """The page's text, tags dropped and whitespace collapsed (what a reader sees)."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


@pytest.fixture(scope="module")
def project(tmp_path_factory, embedder) -> Path:
    root = tmp_path_factory.mktemp("ui")
    outside = root / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Outside\n\n{SECRET}.\n")
    build_pages(root, NAME, {**PAGES, "outside.md": "placeholder"}, embedder)
    (root / "corpus" / "outside.md").unlink()
    (root / "corpus" / "outside.md").symlink_to(outside / "secret.md")
    (root / "corpus" / "themes.md").write_text(
        PAGES["themes.md"] + "\n## Fonts\n\nSerif headings.\n"
    )
    Build(load_processing_config(NAME, root), embedder).run()  # the second build: a history
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
    assert page.status_code == 200  # the build followed the link and indexed the page
    source = page.text.split('class="source"')[1]
    assert SECRET not in source and "not in the server" in source


def test_unknown_server_is_a_clear_404(client: TestClient):
    for url in ("/servers/nope", "/servers/nope/search?q=x", "/servers/nope/build"):
        page = client.get(url)
        assert page.status_code == 404 and "no server named 'nope'" in text_of(page.text)
        assert NAME in page.text  # the servers that do exist


def test_quality_charts_every_recorded_run(client: TestClient):
    page = client.get(f"/servers/{NAME}/quality")
    assert page.status_code == 200
    assert "<polyline" in page.text and "hybrid section Hit@5" in page.text
    seen = text_of(page.text)
    assert "1 questions" in seen and "howto Hit@5" in seen


def test_foreign_hosts_and_origins_are_refused(client: TestClient):
    assert client.get("/", headers={"host": "evil.example"}).status_code == 403
    assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 403
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


def wait_for_end(client: TestClient, timeout: float = 180) -> str:
    """The build's event stream, read to its end."""
    deadline = time.monotonic() + timeout
    with client.stream("GET", f"/servers/{NAME}/build/events") as events:
        body = ""
        for chunk in events.iter_text():
            body += chunk
            if "event: end" in body or time.monotonic() > deadline:
                break
    return body


def test_a_build_starts_by_post_streams_its_stages_and_refuses_a_second(
    client: TestClient, project: Path
):
    page = client.get(f"/servers/{NAME}/build")
    token = re.search(r'name="token" value="([^"]+)"', page.text).group(1)
    assert client.post(f"/servers/{NAME}/build", data={"token": "forged"}).status_code == 403
    started = client.post(f"/servers/{NAME}/build", data={"token": token}, follow_redirects=False)
    assert started.status_code == 303
    second = client.post(f"/servers/{NAME}/build", data={"token": token})
    assert second.status_code == 409
    assert f"another build of {NAME} is running" in text_of(second.text)
    events = wait_for_end(client)
    assert "event: end\r\ndata: 0" in events or "event: end\ndata: 0" in events
    assert "[embed] done in" in events and "event: stages" in events
    after = text_of(client.get(f"/servers/{NAME}/build").text)  # the log stays readable
    assert "Finished" in after and "[materialize] ..." in after and "package" in after
    with build_lock(project / "servers" / NAME / "build", NAME, False, lambda _: None):
        held = client.post(f"/servers/{NAME}/build", data={"token": token})
    assert held.status_code == 409 and "is running (pid" in text_of(held.text)


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
