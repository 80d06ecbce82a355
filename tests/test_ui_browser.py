"""The maintainers' web page in a real headless Chromium (Debian's ``chromium``, installed by
``tools/install_chromium.sh``), driven by Playwright, against ``docbuild ui`` started as a user
starts it: every route renders with nothing blocked by the page's Content-Security-Policy, the
playground finds a known section and links to it in the chunk browser (also for a page whose
file name has ``?``, ``#``, spaces and an accent), the report draws its charts, and a build
started from the page streams its stages to the end. Screenshots go to ``$DOCMCP_UI_SCREENSHOTS`` (``docs/ui`` for the docs), else
to the test's temporary folder."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (tools/install_chromium.sh installs it)"
)
REPO = Path(__file__).resolve().parents[1]
NAME = "docs-mcp-docs"  # the quickstart's server: this repository's docs/
QUESTIONS = REPO / "tests" / "eval" / "docs-mcp-docs.jsonl"
QUERY = "what does weak_margin do"
SECTION = "A weak answer says so"
ODD = "odd names? #1 café.md"  # a file name a link must encode


class Site(str):
    """The UI's base URL, with the project folder it serves."""

    def __new__(cls, url: str, root: Path) -> Site:
        made = super().__new__(cls, url)
        made.root = root
        return made


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder) -> Iterator[str]:
    """``docbuild ui`` over a project with one built, evaluated server; yields its base URL
    (``site.root`` is the project)."""
    root = tmp_path_factory.mktemp("ui-browser")
    corpus = root / "corpus"
    shutil.copytree(REPO / "docs", corpus, ignore=shutil.ignore_patterns("ui"))
    (corpus / ODD).write_text("# Odd names\n\n## Quokkas\n\nQuokkas smile at the camera.\n")
    (root / "servers").mkdir()
    scaffold(NAME, str(corpus), "md", root=root)
    Build(load_processing_config(NAME, root), embedder).run()
    page = corpus / "ui-notes.md"
    page.write_text(
        "# UI notes\n\n## Screenshots\n\nEach page of the web UI, as Chromium draws it.\n"
    )
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    docbuild = [sys.executable, "-m", "docbuild.cli"]
    for args in (["build", NAME], ["eval", NAME, "--queries", str(QUESTIONS)]):
        subprocess.run([*docbuild, *args], env=env, check=True, capture_output=True)
    port = free_port()
    log = (root / "ui.log").open("w")
    ui = subprocess.Popen([*docbuild, "ui", "--port", str(port)], env=env, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    try:
        yield Site(f"http://127.0.0.1:{port}", root)
    finally:
        ui.terminate()
        ui.wait(10)
        log.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("DOCMCP_UI_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def page(site: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.blocked = []  # what the Content-Security-Policy refused, as Chromium reports it

        def console(message) -> None:
            if "Content Security Policy" in message.text:
                tab.blocked.append(message.text)

        tab.on("console", console)
        yield tab
        assert tab.blocked == []
        browser.close()


def test_every_page_renders_in_chromium(page, site: str, shots: Path):
    page.goto(site + "/")
    row = page.locator("table.grid tbody tr").first
    assert NAME in row.inner_text() and "hybrid section Hit@5" in row.inner_text()
    page.screenshot(path=shots / "index.png", full_page=True)

    page.goto(f"{site}/servers/{NAME}")
    assert page.locator("svg").count() == 2
    assert page.locator("svg rect.bar").count() >= 8  # stage bars and histogram columns
    assert page.locator("svg rect.bar").first.bounding_box()["width"] > 0
    page.screenshot(path=shots / "report.png", full_page=True)

    page.goto(f"{site}/servers/{NAME}/history")
    page.get_by_role("button", name="Compare the two builds").click()
    assert "ui-notes.md" in page.locator("main").inner_text()
    page.screenshot(path=shots / "history.png", full_page=True)

    page.goto(f"{site}/servers/{NAME}/quality")
    assert page.locator("svg polyline.trend").count() == 1
    page.screenshot(path=shots / "quality.png", full_page=True)


def test_the_playground_finds_a_section_and_links_to_its_chunk(page, site: str, shots: Path):
    page.goto(f"{site}/servers/{NAME}/search")
    page.get_by_label("question").fill(QUERY)
    page.get_by_role("button", name="Search").click()
    columns = page.locator("section.column")
    assert [columns.nth(i).locator("h2").inner_text().split()[0] for i in range(3)] == [
        "hybrid",
        "vector",
        "keyword",
    ]
    for i in (0, 2):  # a setting's name: the keyword search finds it, and so the hybrid
        assert SECTION in columns.nth(i).locator("li.hit").first.inner_text()
    assert columns.nth(1).locator("li.hit").count() == 10
    assert SECTION in page.locator("pre.tooltext").inner_text()
    page.screenshot(path=shots / "search.png")

    columns.first.locator("a.crumbs").first.click()
    assert page.url.startswith(f"{site}/servers/{NAME}/documents/search-design.md")
    assert SECTION in page.locator("article.chunk.focus").inner_text()
    outline = page.locator("nav.outline").inner_text()
    assert SECTION in outline and "Fusion and rerank" in outline
    assert "### A weak answer says so" in page.locator("section.source").inner_text()
    page.screenshot(path=shots / "document.png")


def test_a_result_link_opens_a_page_with_an_odd_file_name(page, site: str):
    page.goto(f"{site}/servers/{NAME}/search?q=quokkas&mode=keyword")
    page.locator("section.column a.crumbs").first.click()
    page.wait_for_load_state()
    assert unquote(urlsplit(page.url).path) == f"/servers/{NAME}/documents/{ODD}"
    assert page.locator("main p.muted code").first.inner_text() == ODD
    assert "Quokkas smile" in page.locator("article.chunk.focus").inner_text()


def test_a_build_from_the_page_shows_its_stages_to_the_end(page, site: Site, shots: Path):
    (site.root / "corpus" / "new.md").write_text("# New\n\nA page the build must embed.\n")
    page.goto(f"{site}/servers/{NAME}/build")
    page.get_by_role("button", name="Build now").click()
    assert page.locator("#status").get_attribute("data-running") == "yes"  # the live view
    page.wait_for_selector("#status[data-exit='0']", timeout=180_000)  # its end event
    assert page.locator("#status").inner_text().startswith("Finished")
    stages = page.locator("#stages").inner_text()
    for stage in ("discover", "chunk", "embed", "snapshot", "materialize", "package"):
        assert stage in stages
    log = page.locator("#log").inner_text()
    assert f"Built {NAME}" in log and "embedded 1" in log
    page.screenshot(path=shots / "build.png", full_page=True)
