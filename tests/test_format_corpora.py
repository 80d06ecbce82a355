"""Slices of the real HTML, reStructuredText and AsciiDoc corpora, built with the README's tools
and the real model, then asked through the real MCP server: hygiene figures and answers.

The full corpora are built by ``bench/bench_formats.py`` (minutes each); these slices keep CI fast.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, corpus
from docbuild.build_report import BuildReport
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.ask import server_script
from docbuild.services.evaluate import strip_extension
from docserve.duck import connect
from fastmcp import Client

SLICES = {  # name: (corpus folder, format, files copied, url_base, url_suffix)
    "py-html": (
        ("python-docs-3.11", "html"),
        "html",
        [
            "library/csv.html",
            "library/json.html",
            "tutorial/controlflow.html",
            "genindex-C.html",
            "search.html",
            "py-modindex.html",
            "contents.html",
            "_static/basic.css",
        ],
        "https://docs.python.org/3.11",
        "",
    ),
    "py-rst": (
        ("python-docs-3.11", "rst"),
        "rst",
        ["library/csv.rst", "library/json.rst", "tutorial/controlflow.rst", "contents.rst"],
        "https://docs.python.org/3.11",
        ".html",
    ),
    "git-adoc": (
        ("git-docs", "asciidoc"),
        "asciidoc",
        ["git-diff.adoc", "diff-options.adoc", "git-reset.adoc", "git-stash.adoc"],
        "https://git-scm.com/docs",
        ".html",
    ),
    "git-html": (
        ("git-docs", "html"),
        "html",
        ["git-diff.html", "git-reset.html", "git-stash.html"],
        "https://git-scm.com/docs",
        "",
    ),
}


def tool(root: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    return subprocess.run(
        [str(REPO / "tools" / name), *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.fixture(scope="module")
def builds(tmp_path_factory, embedder) -> dict[str, tuple[Path, BuildReport]]:
    """Each slice scaffolded with the tool and built with the real pipeline and model."""
    root = tmp_path_factory.mktemp("formats")
    (root / "servers").mkdir()
    done = {}
    for name, (folder, fmt, files, url_base, suffix) in SLICES.items():
        source = corpus(*folder)
        target = root / "sources" / name
        for relative in files:
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / relative, target / relative)
        if fmt == "html":  # a page inside a site's asset folder is never crawled
            (target / "_static").mkdir(exist_ok=True)
            (target / "_static" / "stray.html").write_text("<p>asset, not a page</p>")
        args = ["--source", str(target), "--format", fmt, "--url-base", url_base]
        scaffolded = tool(root, "scaffold_new_mcp.sh", name, *args, "--url-suffix", suffix)
        assert scaffolded.returncode == 0, scaffolded.stderr
        report = Build(load_processing_config(name, root), embedder).run()
        done[name] = (root, report)
    return done


@pytest.mark.parametrize("name", list(SLICES))
def test_slice_hygiene(builds, name: str):
    _, report = builds[name]
    hygiene = report.hygiene
    assert report.chunks > 20
    assert hygiene.unbalanced_fences == 0
    assert hygiene.with_hierarchy == hygiene.chunks
    assert hygiene.with_furniture == 0
    assert hygiene.over_limit == 0


def test_pages_without_content_of_their_own_are_skipped_with_the_reason(builds):
    _, report = builds["py-html"]
    skipped = {p.path: p.reason for p in report.skipped}
    assert set(skipped) == {"genindex-C.html", "search.html", "py-modindex.html", "contents.html"}
    assert report.files == 7  # _static/ is not crawled
    _, rst = builds["py-rst"]
    assert {p.path for p in rst.skipped} == {"contents.rst"}
    _, adoc = builds["git-adoc"]
    fragment = {p.path: p.reason for p in adoc.skipped}
    assert (
        set(fragment) == {"diff-options.adoc"} and "git-diff.adoc" in fragment["diff-options.adoc"]
    )
    missing = [p for p in adoc.problems if not p.skipped and p.path == "git-stash.adoc"]
    assert missing and "include" in missing[0].reason


async def ask(root: Path, name: str, query: str) -> list[dict]:
    async with Client(server_script(name, root), timeout=120) as client:
        result = await client.call_tool("search", {"query": query, "top_k": 3})
        return result.structured_content["results"]


@pytest.mark.parametrize(
    ("name", "query", "page"),
    [
        ("py-html", "csv.DictReader fieldnames", "library/csv"),
        ("py-rst", "csv.DictReader fieldnames", "library/csv"),
        ("py-html", "json.dumps sort_keys indent", "library/json"),
        ("py-rst", "keyword-only arguments in function definitions", "tutorial/controlflow"),
        ("git-adoc", "git reset --hard discard working tree changes", "git-reset"),
        ("git-html", "git reset --hard discard working tree changes", "git-reset"),
        ("git-adoc", "--word-diff", "git-diff"),
    ],
)
def test_answers_through_the_mcp_server(builds, name: str, query: str, page: str):
    root, _ = builds[name]
    results = asyncio.run(ask(root, name, query))
    top = results[0]
    assert strip_extension(top["path"]) == page, [r["path"] for r in results]
    assert top["url"].startswith(SLICES[name][3])
    assert not top["url"].endswith((".rst", ".adoc"))  # the published page, not the source


def test_sphinx_html_and_rst_give_the_same_section_urls(builds):
    urls = {}
    for name in ("py-html", "py-rst"):
        root, _ = builds[name]
        database = load_processing_config(name, root).database_path
        with connect(database, read_only=True, extensions=()) as con:
            urls[name] = {
                row[0]
                for row in con.execute(
                    "SELECT section_url FROM chunks WHERE path LIKE 'library/csv.%'"
                ).fetchall()
            }
    shared = urls["py-html"] & urls["py-rst"]
    assert "https://docs.python.org/3.11/library/csv.html#csv.DictReader" in shared or any(
        "#module-contents" in url for url in shared
    ), (sorted(urls["py-html"])[:10], sorted(urls["py-rst"])[:10])
    assert len(shared) >= 0.6 * len(urls["py-rst"])
