"""The built MCP server end to end: the real server script, launched as a real process, driven by
fastmcp's real ``Client`` over stdio and streamable HTTP.

One small corpus is built per module (Markdown pages on distinct topics and a 2-page PDF). The
embedding and rerank endpoints some tests need are small but real stdlib HTTP servers (threads in
this process, listening on 127.0.0.1) that the server process talks to over the network.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from docbuild.build_report import BuildReport
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docserve.crossencoder import CrossEncoder
from docserve.duck import connect
from endpoints import EmbeddingEndpoint, Endpoint, free_port, running
from fastmcp import Client
from fastmcp.client.auth import BearerAuth
from fastmcp.client.transports import PythonStdioTransport, StdioTransport
from pdfmaker import write_pdf
from tiny_models import make_tiny_cross_encoder

REPO = Path(__file__).resolve().parents[1]
NAME = "srv-docs"
URL_BASE = "https://docs.example.org"
RESULT_FIELDS = {
    "chunk_id",
    "document_id",
    "path",
    "title",
    "section_hierarchy",
    "url",
    "content",
    "score",
    "page",
    "retrievers",
}
PAGES = {
    "vectors.md": "---\ntitle: Vector similarity\n---\n\n## Cosine distance\n\n"
    "Use `array_cosine_distance(a, b)` to compare two embedding arrays: it returns one minus "
    "the cosine similarity of the two vectors.\n\n```sql\nSELECT array_cosine_distance(x, y) "
    "FROM items ORDER BY 1 LIMIT 5;\n```\n\n## Inner product\n\n"
    "`array_inner_product` multiplies the arrays element by element and sums the products.\n",
    "baking.md": "# Sourdough baking\n\n## Starter\n\nFeed the sourdough starter with equal "
    "weights of rye flour and water every morning until it doubles within six hours.\n\n"
    "## Proofing\n\nShape the dough, then let it proof overnight in a cold fridge so the crumb "
    "stays open and the crust blisters in the oven.\n",
    "garden.md": "# Tomato gardening\n\nTomatoes want full sun, deep watering twice a week and "
    "sturdy stakes. Pinch off the suckers between stem and branch to get bigger fruit.\n",
    "transport.md": "# HTTP transport\n\n## Bearer tokens\n\nSet an environment variable with "
    "a secret token; clients must then send it in the Authorization header or they are "
    "refused.\n",
}
TELESCOPE_TOPICS = {
    "Cleaning the mirror": "mirror coating dust brush distilled water",
    "Collimation": "collimation cap secondary mirror tilt screws",
    "Choosing eyepieces": "eyepiece focal length magnification eye relief",
    "Balancing the mount": "counterweight declination axis balance clutch",
    "Preventing dew": "dew heater strap shield humidity",
    "Storing the tube": "storage case desiccant cover cool room",
    "Polar alignment": "polar scope pole star latitude azimuth bolts",
    "Star testing": "star test defocus rings diffraction seeing",
}


def telescope_page() -> str:
    """A long page (several answer-cap parts at 500 tokens), one topic per section."""
    parts = ["# Telescope care\n\nLooking after a reflector telescope, one task per section.\n"]
    for heading, terms in TELESCOPE_TOPICS.items():
        words = terms.split()
        sentences = [
            f"Step {n} of {heading.lower()}: check the {words[n % len(words)]} and the "
            f"{words[(n + 1) % len(words)]} before every observing night, and write down what "
            "you changed in the logbook."
            for n in range(1, 7)
        ]
        parts.append(f"## {heading}\n\n" + " ".join(sentences) + "\n")
    return "\n".join(parts)


PAGES["guide/telescope.md"] = telescope_page()
PDF_PAGES = [
    ["Installation", "Run pip install to add the wheels to a virtual environment."],
    ["Graph indexes", "Hierarchical navigable small world graphs speed up neighbour lookups."],
]
HOSTILE_QUERIES = [
    "'; DROP TABLE chunks; --",
    '"unclosed',
    "a AND (b OR",
    "*",
    "\\",
    "%_",
    "🔍 cosine 🧪",
    "مسافة جيب التمام",  # Arabic (right to left)
    "\u202ecosine\u202c distance",  # right-to-left override
    "👩\u200d👩\u200d👧 family",  # zero-width joiners
    "\u200b",  # a zero-width space alone
    "cos\x00ine distance",  # NUL inside a word
    "\x00",
    "\ufeff\ufffd\U0010ffff",
]


# --- helpers -------------------------------------------------------------------------------


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment without settings, proxies or PYTHONPATH, plus ``extra``."""
    drop = {"PYTHONPATH", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"}
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("DOCMCP_") and k.upper() not in drop
    }
    return {**env, **extra}


class LiveClient:
    """A fastmcp ``Client`` connected for as long as needed, with a synchronous API.

    The client lives in one task of an event loop in a background thread (so it is entered and
    left in the same task); calls are handed to that task one at a time.
    """

    def __init__(self, transport: Any, timeout: float = 120) -> None:
        self.client = Client(transport, timeout=timeout)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.jobs: asyncio.Queue[Any] | None = None
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.done = asyncio.run_coroutine_threadsafe(self._serve(ready), self.loop)
        try:
            ready.result(timeout)
        except BaseException:
            self._stop_loop()
            raise

    async def _serve(self, ready: concurrent.futures.Future[None]) -> None:
        self.jobs = asyncio.Queue()
        try:
            async with self.client:
                ready.set_result(None)
                while (job := await self.jobs.get()) is not None:
                    fn, future = job
                    try:
                        future.set_result(await fn(self.client))
                    except Exception as exc:
                        future.set_exception(exc)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise
        finally:
            await self.client.close()

    def run(self, fn: Callable[[Client], Any], timeout: float = 120) -> Any:
        """Run ``await fn(client)`` in the client's task and return its result."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        assert self.jobs is not None
        self.loop.call_soon_threadsafe(self.jobs.put_nowait, (fn, future))
        return future.result(timeout)

    def call(self, tool: str, **arguments: Any) -> Any:
        """The raw ``CallToolResult`` (errors are returned, not raised)."""
        return self.run(lambda c: c.call_tool(tool, arguments, raise_on_error=False))

    def tool(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The structured result of a call that must succeed."""
        result = self.call(tool, **arguments)
        assert not result.is_error, f"{tool}({arguments}) failed: {error_text(result)}"
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    def search(self, query: str, **arguments: Any) -> dict[str, Any]:
        return self.tool("search", query=query, **arguments)

    def error(self, tool: str, **arguments: Any) -> str:
        """The message of a call that must fail with a tool error."""
        result = self.call(tool, **arguments)
        assert result.is_error, f"{tool}({arguments}) should have failed: {result}"
        return error_text(result)

    def read(self, uri: str) -> str:
        contents = self.run(lambda c: c.read_resource(uri))
        assert len(contents) == 1
        return contents[0].text

    def close(self) -> None:
        if self.jobs is not None and not self.done.done():
            self.loop.call_soon_threadsafe(self.jobs.put_nowait, None)
        with contextlib.suppress(Exception):
            self.done.result(30)
        self._stop_loop()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    def __enter__(self) -> LiveClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def error_text(result: Any) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


@dataclass
class Built:
    """The module's built server."""

    project: Path
    server_root: Path
    script: Path
    database: Path
    report: BuildReport

    def stdio(
        self,
        log: Path,
        *args: str,
        script: Path | None = None,
        cwd: Path | None = None,
        **env: str,
    ) -> LiveClient:
        """A client of the server script over stdio; the server's stderr goes to ``log``.

        The child gets the MCP SDK's minimal environment (HOME, PATH, ...) plus ``env``, so no
        setting of this process leaks into it.
        """
        transport = PythonStdioTransport(
            script or self.script,
            args=list(args),
            env=env or None,
            cwd=str(cwd) if cwd else None,
            python_cmd=sys.executable,
            log_file=log,
        )
        return LiveClient(transport)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder) -> Built:
    project = tmp_path_factory.mktemp("project")
    (project / "servers").mkdir()
    source = project / "corpus"
    for name, text in PAGES.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    write_pdf(source / "manual.pdf", PDF_PAGES, "Manual")
    scaffold(NAME, str(source), "auto", URL_BASE, root=project)
    config = load_processing_config(NAME, project)
    report = Build(config, embedder).run()
    root = config.server_root
    return Built(
        project,
        root,
        root / "runtime" / f"{NAME.replace('-', '_')}_server.py",
        config.database_path,
        report,
    )


@pytest.fixture(scope="module")
def server(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveClient]:
    """One stdio server with the default settings, shared by the tests that allow it."""
    with built.stdio(tmp_path_factory.mktemp("logs") / "server.log") as client:
        yield client


# --- small real HTTP endpoints the server talks to -------------------------------------------


class LengthReranker(Endpoint):
    """A TEI-shaped rerank endpoint (``{query, texts}`` -> ``[{index, score}]``): longer is better."""

    def handle(self, path: str, body: Any) -> tuple[int, Any]:
        scores = [{"index": i, "score": float(len(t))} for i, t in enumerate(body["texts"])]
        return 200, sorted(scores, key=lambda item: -item["score"])


# --- 1. every tool and resource over stdio ---------------------------------------------------


def check_result_fields(result: dict[str, Any]) -> None:
    assert set(result) >= RESULT_FIELDS
    assert result["chunk_id"] and result["document_id"] and result["path"] and result["content"]
    assert isinstance(result["section_hierarchy"], list) and result["section_hierarchy"]
    assert result["url"].startswith(URL_BASE)
    assert isinstance(result["score"], float)
    assert result["retrievers"] and set(result["retrievers"]) <= {"vector", "keyword", "rerank"}
    assert all(isinstance(rank, int) and rank >= 1 for rank in result["retrievers"].values())


def test_hybrid_search_fuses_both_retrievers(server: LiveClient):
    answer = server.search("array_cosine_distance cosine distance between embeddings")
    assert answer["mode"] == "hybrid" and answer["retrievers"] == ["keyword", "vector"]
    assert not answer["degraded"] and answer["notes"] == []
    results = answer["results"]
    assert 1 <= len(results) <= 5
    for result in results:
        check_result_fields(result)
    top = results[0]
    assert top["path"] == "vectors.md" and "array_cosine_distance" in top["content"]
    assert top["title"] == "Vector similarity"
    assert top["section_hierarchy"] == ["Vector similarity", "Cosine distance"]
    assert top["url"] == f"{URL_BASE}/vectors" and top["page"] is None
    assert set(top["retrievers"]) == {"vector", "keyword"}  # both found it
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)


def test_vector_mode_uses_only_vectors(server: LiveClient):
    answer = server.search("how do I let bread dough rise before baking", mode="vector")
    assert answer["retrievers"] == ["vector"] and not answer["degraded"]
    assert all(set(r["retrievers"]) == {"vector"} for r in answer["results"])
    assert answer["results"][0]["path"] == "baking.md"


def test_keyword_mode_returns_only_matching_rows(server: LiveClient):
    answer = server.search("sourdough", mode="keyword", top_k=50)
    assert answer["retrievers"] == ["keyword"] and not answer["degraded"]
    assert answer["results"]
    for result in answer["results"]:
        assert set(result["retrievers"]) == {"keyword"}
        assert "sourdough" in (result["title"] + " " + result["content"]).lower()
    # a word in no document: keyword search finds nothing (vector search would return neighbours)
    assert server.search("xylophone", mode="keyword")["results"] == []
    assert server.search("xylophone", mode="vector")["results"]


def test_keyword_mode_finds_an_identifier_whole(server: LiveClient):
    answer = server.search("array_cosine_distance", mode="keyword", top_k=50)
    has = ["array_cosine_distance" in r["content"] for r in answer["results"]]
    assert has and has[0]
    # the identifier's words match too (code-aware search), but whole-identifier hits rank first
    assert has == sorted(has, reverse=True)
    assert answer["results"][0]["section_hierarchy"][-1] == "Cosine distance"


def test_pdf_hits_carry_their_page(server: LiveClient):
    answer = server.search("hierarchical navigable small world graphs", mode="keyword")
    top = answer["results"][0]
    assert top["path"] == "manual.pdf" and top["page"] == 2, top
    answer = server.search("pip install wheels virtual environment", mode="keyword")
    assert (answer["results"][0]["path"], answer["results"][0]["page"]) == ("manual.pdf", 1)


def test_get_chunk_returns_the_search_result(server: LiveClient):
    hit = server.search("tomato suckers stakes")["results"][0]
    chunk = server.tool("get_chunk", chunk_id=hit["chunk_id"])
    for key in ("chunk_id", "document_id", "path", "title", "section_hierarchy", "url", "content"):
        assert chunk[key] == hit[key], key
    assert "embedding" not in chunk
    assert "no chunk with id" in server.error("get_chunk", chunk_id="0123456789abcdef01234567")
    assert "no chunk with id" in server.error("get_chunk", chunk_id="' OR 1=1 --")
    assert server.error("get_chunk", chunk_id="")


def test_stats_describe_the_index(server: LiveClient, built: Built):
    stats = server.tool("stats")
    assert stats["name"] == NAME and Path(stats["database"]) == built.database
    assert stats["chunks"] == built.report.chunks and stats["documents"] == built.report.documents
    assert stats["build_info"]["model_id"].endswith("all-MiniLM-L6-v2")
    assert stats["build_info"]["chunk_count"] == built.report.chunks
    assert stats["vector_search"] is True and stats["keyword_search"] is True
    assert stats["reranker"] == "none" and stats["search_settings"]["top_k"] == 5
    assert "probe_vector" in stats["build_info"]


def test_resources_search_and_chunk(server: LiveClient):
    templates = server.run(lambda c: c.list_resource_templates())
    assert {t.uri_template for t in templates} >= {
        f"{NAME}://search/{{query}}",
        f"{NAME}://chunk/{{chunk_id}}",
    }
    answer = json.loads(server.read(f"{NAME}://search/sourdough%20starter"))
    assert answer["query"] == "sourdough starter" and answer["mode"] == "hybrid"
    assert answer["results"][0]["path"] == "baking.md"
    chunk_id = answer["results"][0]["chunk_id"]
    chunk = json.loads(server.read(f"{NAME}://chunk/{chunk_id}"))
    assert chunk["chunk_id"] == chunk_id and chunk["content"] == answer["results"][0]["content"]
    with pytest.raises(Exception, match="no chunk with id"):
        server.read(f"{NAME}://chunk/nope")
    with pytest.raises(Exception, match="query is empty"):
        server.read(f"{NAME}://search/%20%20")


# --- 1b. what the model reads: compact text, filters, reading tools -------------------------


def text_of(result: Any) -> str:
    """The text content of a tool result: what the model reads."""
    return "\n".join(part.text for part in result.content if getattr(part, "text", None))


def headers(text: str) -> list[int]:
    """The ranks of the result header lines (``[n] title › headings``) in a search text."""
    return [int(m.group(1)) for m in re.finditer(r"^\[(\d+)\] ", text, re.MULTILINE)]


def test_search_text_is_compact_markdown(server: LiveClient):
    result = server.call("search", query="cosine distance between embedding arrays")
    text, answer = text_of(result), result.structured_content
    first = answer["results"][0]
    assert text.startswith("[1] Vector similarity › Cosine distance\n")
    assert text.split("\n")[1] == first["section_url"] and "#" in first["section_url"]
    passage = first["content"].strip().removeprefix("## Cosine distance").strip()
    assert passage in text and "## Cosine distance" not in text  # the header names it
    assert headers(text) == list(range(1, 6)) and len(answer["results"]) == 5
    for internal in ("chunk_id", first["chunk_id"], "null", "\\n", '"score"', "retrievers", "{"):
        assert internal not in text, internal
    pdf = text_of(server.call("search", query="navigable small world graphs", path="manual.pdf"))
    assert pdf.split("\n")[1] == f"{URL_BASE}/manual.pdf#page=2"


def test_tools_declare_output_schemas_and_short_descriptions(server: LiveClient):
    tools = {tool.name: tool for tool in server.run(lambda c: c.list_tools())}
    assert {"search", "outline", "get_document", "get_chunk", "stats"} <= set(tools)
    for name, field in (
        ("search", "results"),
        ("outline", "documents"),
        ("get_document", "content"),
    ):
        schema = tools[name].output_schema
        assert schema["type"] == "object" and field in schema["properties"], name
    search_arguments = set(tools["search"].input_schema["properties"])
    assert search_arguments >= {"query", "top_k", "path", "section", "version", "mode"}
    assert all(len(tool.description) < 400 for tool in tools.values())
    for tool in tools.values():  # what a client shows, and may rely on to call without asking
        hints = tool.annotations
        assert tool.title and hints.title == tool.title, tool.name
        flags = (hints.read_only_hint, hints.idempotent_hint, hints.open_world_hint)
        assert flags == (True, True, False) and not hints.destructive_hint, tool.name


def test_path_filter_ranks_within_the_folder_before_cutting(server: LiveClient):
    # the query is about vectors, but the folder holds only the telescope guide: a filter that
    # were applied after ranking would return nothing
    answer = server.search("cosine distance between embedding arrays", path="guide/", top_k=5)
    assert len(answer["results"]) == 5
    assert {r["path"] for r in answer["results"]} == {"guide/telescope.md"}
    assert answer["filters"] == {"path": "guide/"}
    pdf = server.search("pip install wheels", path="**/*.pdf")
    assert {r["path"] for r in pdf["results"]} == {"manual.pdf"}
    one_file = server.search("tomato sun", path="garden")  # a page without its extension
    assert {r["path"] for r in one_file["results"]} == {"garden.md"}


def test_a_filter_that_keeps_everything_ranks_as_no_filter(server: LiveClient):
    for query in ("cosine distance between embedding arrays", "bearer token", "sourdough"):
        plain = server.search(query, top_k=8)
        everything = server.search(query, top_k=8, path="**", version="all")
        assert [(r["chunk_id"], r["score"]) for r in everything["results"]] == [
            (r["chunk_id"], r["score"]) for r in plain["results"]
        ]


def test_section_filter_keeps_matching_headings(server: LiveClient):
    answer = server.search("what to check before observing", section="polar alignment")
    assert answer["results"]
    for result in answer["results"]:
        assert "Polar alignment" in result["section_hierarchy"]
    both = server.search("dough", section="proofing", path="baking.md")
    assert both["results"] and all("Proofing" in r["section_hierarchy"] for r in both["results"])


def test_filters_that_match_nothing_say_what_exists(server: LiveClient):
    message = server.error("search", query="stars", path="recipes/")
    assert "no document path matches 'recipes/'" in message
    assert "guide/" in message and "baking.md" in message
    assert "zebra" in server.error("search", query="stars", section="zebra")
    message = server.error("search", query="stars", section="proofing", path="guide/")
    assert "proofing" in message and "guide/" in message
    assert "unlabelled" in server.error("search", query="stars", version="2.0")
    assert server.search("tomato", version="all")["results"]  # "all" is every version there is


def test_outline_lists_documents_then_one_page(server: LiveClient, built: Built):
    result = server.call("outline")
    listing, text = result.structured_content, text_of(result)
    paths = sorted(d["path"] for d in listing["documents"])
    assert listing["total"] == built.report.documents == len(paths)
    assert listing["next_offset"] is None
    for path in paths:
        assert f"- {path} — " in text
    result = server.call("outline", path="guide/telescope.md")
    page, text = result.structured_content, text_of(result)
    headings = [s["heading"] for s in page["sections"]]
    assert headings == ["Telescope care", *TELESCOPE_TOPICS]
    ranges = [(s["first_chunk"], s["last_chunk"]) for s in page["sections"][1:]]
    assert ranges == sorted(ranges) and all(lo <= hi for lo, hi in ranges)
    assert "  - Polar alignment (chunk" in text and "get_document(path='guide/telescope.md'" in text
    later = server.call("outline", offset=4)
    assert [d["path"] for d in later.structured_content["documents"]] == paths[4:]
    assert text_of(later).startswith(f"{len(paths)} document(s), from number 5:")
    folder = server.tool("outline", path="guide/")
    assert [d["path"] for d in folder["documents"]] == ["guide/telescope.md"]
    assert "no document matches 'nope/'" in server.error("outline", path="nope/")


def test_get_document_reads_a_page_or_a_section_in_order(server: LiveClient):
    result = server.call("get_document", path="vectors.md")
    page, text = result.structured_content, text_of(result)
    assert text.startswith("# Vector similarity\nhttps://docs.example.org/vectors")
    body = page["content"]
    assert body.index("Cosine distance") < body.index("```sql") < body.index("Inner product")
    assert body.count("```") % 2 == 0 and page["next_offset"] is None
    section = server.tool("get_document", path="vectors.md", section="inner product")
    assert section["section"][-1] == "Inner product"
    assert "array_inner_product" in section["content"]
    assert "array_cosine_distance(a, b)" not in section["content"]
    message = server.error("get_document", path="vectors.md", section="quaternions")
    assert "'Cosine distance'" in message and "'Inner product'" in message
    message = server.error("get_document", path="telescope.md")
    assert "no document 'telescope.md'" in message and "guide/telescope.md" in message


def test_resources_outline_and_document(server: LiveClient):
    templates = {t.uri_template for t in server.run(lambda c: c.list_resource_templates())}
    assert {f"{NAME}://outline/{{path*}}", f"{NAME}://document/{{path*}}"} <= templates
    assert "- guide/telescope.md — Telescope care" in server.read(f"{NAME}://outline")
    assert "- Star testing" in server.read(f"{NAME}://outline/guide/telescope.md")
    assert "array_inner_product" in server.read(f"{NAME}://document/vectors.md")


def test_server_info_names_this_server_and_its_build(server: LiveClient, built: Built):
    import docbuild
    import docserve

    info = server.run(lambda c: asyncio.sleep(0, c.server_info))
    snapshot = built.report.snapshot.snapshot_id
    assert info.name == NAME and info.version == f"{docserve.__version__}+build.{snapshot}"
    assert docserve.__version__ == docbuild.__version__


def capped_config(built: Built, folder: Path, cap: int) -> Path:
    config = folder / "server_config.yaml"
    text = (built.server_root / "config" / "server_config.yaml").read_text()
    config.write_text(text.replace("max_response_tokens: 4000", f"max_response_tokens: {cap}"))
    return config


def test_answers_stay_within_the_response_cap(built: Built, tmp_path: Path):
    from docserve.tokens import TokenCounter

    cap = 500
    tokens = TokenCounter(built.server_root / "runtime" / "model").count
    config = capped_config(built, tmp_path, cap)
    with built.stdio(tmp_path / "server.log", "--config", str(config)) as client:
        result = client.call("search", query="check before observing", top_k=20, path="guide/")
        text, answer = text_of(result), result.structured_content
        assert tokens(text) <= cap
        assert 0 < len(answer["results"]) < 20
        assert headers(text) == list(range(1, len(answer["results"]) + 1))
        assert text.rstrip().endswith("or read one page with get_document.]")
        assert any("answer limit 500 tokens" in note for note in answer["notes"])
        parts, offset = [], 0
        while offset is not None:
            result = client.call("get_document", path="guide/telescope.md", offset=offset)
            text, part = text_of(result), result.structured_content
            assert tokens(text) <= cap and part["offset"] == offset
            if part["next_offset"] is not None:
                assert f"offset={part['next_offset']})]" in text
            parts.append(part["content"])
            offset = part["next_offset"]
        assert len(parts) >= 3
        whole = "\n\n".join(parts)
        positions = [whole.index(f"## {heading}") for heading in TELESCOPE_TOPICS]
        assert positions == sorted(positions)
        for n in range(1, 7):  # every sentence of the last section, read across parts
            assert f"Step {n} of star testing" in whole


# --- 5. hostile inputs (same server) ---------------------------------------------------------


def test_hostile_inputs_do_not_break_the_server(server: LiveClient):
    assert "query is empty" in server.error("search", query="")
    assert "query is empty" in server.error("search", query=" \t\n\u3000 ")
    long = server.search("cosine distance " * 6500)  # about 100 KB
    assert any("cut" in note for note in long["notes"]) and long["results"]
    assert len(long["query"]) == 2000
    for mode in ("hybrid", "vector", "keyword"):
        for query in HOSTILE_QUERIES:
            answer = server.search(query, mode=mode)
            assert answer["mode"] == mode and isinstance(answer["results"], list), query
    assert "top_k" in server.error("search", query="cosine", top_k=0)
    assert "top_k" in server.error("search", query="cosine", top_k=-1)
    capped = server.search("cosine", top_k=10000)
    assert any("capped at 50" in note for note in capped["notes"])
    assert 1 <= len(capped["results"]) <= 50
    assert server.error("search", query="cosine", mode="fuzzy")
    assert server.error("search", query="cosine", top_k="many")
    assert server.error("get_chunk", chunk_id="\x00")
    # still serving normally
    answer = server.search("array_cosine_distance")
    assert answer["retrievers"] == ["keyword", "vector"] and not answer["degraded"]
    assert answer["results"][0]["path"] == "vectors.md"


# --- 3. stdout carries nothing but JSON-RPC --------------------------------------------------


def test_stdout_is_only_json_rpc(built: Built, tmp_path: Path):
    stderr = tmp_path / "stderr.log"
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-W", "always", str(built.script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=child_env(),
            cwd=tmp_path,
        )
    lines: queue.Queue[bytes] = queue.Queue()
    assert process.stdout is not None and process.stdin is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout])
    reader.start()

    def send(message: dict[str, Any]) -> None:
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    seen: list[bytes] = []

    def response(request_id: int) -> dict[str, Any]:
        while True:
            line = lines.get(timeout=120)
            seen.append(line)
            message = json_rpc(line)
            if message.get("id") == request_id:
                return message

    def call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments}
        send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        return response(request_id)

    try:
        client = {"name": "raw", "version": "0"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        init = response(1)
        assert init["result"]["serverInfo"]["name"] == NAME
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        answer = call(2, "search", {"query": "array_cosine_distance"})
        structured = answer["result"]["structuredContent"]
        assert structured["results"][0]["path"] == "vectors.md"
        assert call(3, "search", {"query": "  "})["result"]["isError"] is True  # logs a traceback
        assert call(4, "search", {"query": "cosine", "top_k": 0})["result"]["isError"] is True
        assert call(5, "get_chunk", {"chunk_id": "nope"})["result"]["isError"] is True
        process.stdin.close()
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(10)
    while not lines.empty():
        seen.append(lines.get())
    assert len(seen) >= 5
    for line in seen:  # every line on stdout, the unsolicited ones too
        json_rpc(line)
    assert "Error calling tool" in stderr.read_text()  # the logs went to stderr


def json_rpc(line: bytes) -> dict[str, Any]:
    """``line`` as a JSON-RPC 2.0 message; fails the test on anything else."""
    try:
        message = json.loads(line)
    except ValueError:
        pytest.fail(f"not JSON-RPC on stdout: {line[:300]!r}")
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line[:300]
    assert line.endswith(b"\n") and b"\n" not in line[:-1]
    return message


# --- 2. streamable HTTP ----------------------------------------------------------------------


@contextlib.contextmanager
def http_server(built: Built, log: Path, *args: str, **env: str) -> Iterator[str]:
    """Run the script with ``--http`` on a free port; yields the MCP URL once it answers."""
    port = free_port()
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, str(built.script), "--http", "--port", str(port), *args],
            stdout=err,
            stderr=subprocess.STDOUT,
            env=child_env(**env),
            cwd=log.parent,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, f"server exited: {log.read_text()}"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline, f"server did not answer: {log.read_text()}"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp*) listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:
                    found.add(address)
    return found


async def http_search(url: str, query: str, auth: Any = None) -> dict[str, Any]:
    async with Client(url, auth=auth, timeout=60) as client:
        result = await client.call_tool("search", {"query": query})
        resource = await client.read_resource(f"{NAME}://search/{query.replace(' ', '%20')}")
    assert json.loads(resource[0].text)["results"]
    return result.structured_content


def test_http_search_binds_loopback(built: Built, tmp_path: Path):
    with http_server(built, tmp_path / "http.log") as url:
        answer = asyncio.run(http_search(url, "sourdough starter"))
        assert answer["retrievers"] == ["keyword", "vector"]
        assert answer["results"][0]["path"] == "baking.md"
        port = int(url.split(":")[2].split("/")[0])
        if Path("/proc/net/tcp").exists():
            assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only
    assert f"serving {NAME} on http://127.0.0.1:{port}/mcp" in (tmp_path / "http.log").read_text()


async def every_tool(url: str) -> dict[str, Any]:
    """One call of each tool over HTTP: (text, structured content) by tool, and a refusal."""
    async with Client(url, timeout=60) as client:
        calls = {
            "search": {"query": "check before observing", "path": "guide/", "section": "polar"},
            "outline": {"path": "guide/telescope.md"},
            "get_document": {"path": "vectors.md", "section": "Inner product"},
            "stats": {},
        }
        answers = {}
        for tool, arguments in calls.items():
            result = await client.call_tool(tool, arguments)
            answers[tool] = (text_of(result), result.structured_content)
        chunk_id = answers["search"][1]["results"][0]["chunk_id"]
        result = await client.call_tool("get_chunk", {"chunk_id": chunk_id})
        answers["get_chunk"] = (text_of(result), result.structured_content)
        refused = await client.call_tool(
            "search", {"query": "x", "version": "9"}, raise_on_error=False
        )
        answers["refused"] = (text_of(refused), refused.is_error)
    return answers


async def capped_search(url: str) -> tuple[str, dict[str, Any]]:
    async with Client(url, timeout=60) as client:
        arguments = {"query": "check before observing", "top_k": 20, "path": "guide/"}
        result = await client.call_tool("search", arguments)
    return text_of(result), result.structured_content


def test_http_serves_every_tool(built: Built, tmp_path: Path):
    with http_server(built, tmp_path / "http.log") as url:
        answers = asyncio.run(every_tool(url))
    config = capped_config(built, tmp_path, 500)
    with http_server(built, tmp_path / "capped.log", "--config", str(config)) as url:
        capped_text, capped = asyncio.run(capped_search(url))
    assert 0 < len(capped["results"]) < 20 and "500-token answer limit" in capped_text
    text, search = answers["search"]
    assert text.startswith("[1] Telescope care › Polar alignment\n")
    assert all("Polar alignment" in r["section_hierarchy"] for r in search["results"])
    assert "  - Star testing (chunk" in answers["outline"][0]
    assert "array_inner_product" in answers["get_document"][1]["content"]
    assert answers["get_chunk"][1]["chunk_id"] == search["results"][0]["chunk_id"]
    assert answers["get_chunk"][0].startswith("Telescope care › Polar alignment\n")
    assert answers["stats"][0].startswith(f"# {NAME}: ")
    assert answers["refused"][1] and "unknown version '9'" in answers["refused"][0]


def test_http_bearer_token(built: Built, tmp_path: Path):
    token = "t0k3n-for-tests"
    with http_server(built, tmp_path / "http.log", DOCMCP_BEARER_TOKEN=token) as url:
        initialize = INITIALIZE
        headers = {"Accept": "application/json, text/event-stream"}
        assert httpx.post(url, json=initialize, headers=headers, trust_env=False).status_code == 401
        wrong = {**headers, "Authorization": "Bearer nope"}
        assert httpx.post(url, json=initialize, headers=wrong, trust_env=False).status_code == 401
        with pytest.raises(Exception):  # noqa: B017 - whatever the client raises, it is refused
            asyncio.run(http_search(url, "tomato"))
        with pytest.raises(Exception):  # noqa: B017
            asyncio.run(http_search(url, "tomato", auth=BearerAuth("wrong")))
        answer = asyncio.run(http_search(url, "tomato stakes", auth=BearerAuth(token)))
        assert answer["results"][0]["path"] == "garden.md"
        answer = asyncio.run(http_search(url, "tomato stakes", auth=token))
        assert answer["results"][0]["path"] == "garden.md"


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def test_http_refuses_foreign_host_and_origin(built: Built, tmp_path: Path):
    """DNS rebinding: a page on evil.example.com that resolves to 127.0.0.1 must not get in."""
    log = tmp_path / "http.log"
    with http_server(built, log) as url:
        accept = {"Accept": "application/json, text/event-stream"}

        def status(**headers: str) -> int:
            answer = httpx.post(
                url, json=INITIALIZE, headers={**accept, **headers}, trust_env=False
            )
            return answer.status_code

        port = url.split(":")[2].split("/")[0]
        assert status() == 200  # no Origin: a non-browser client on loopback
        assert status(Origin=f"http://localhost:{port}") == 200
        assert status(Host="evil.example.com") == 403
        assert status(Host=f"evil.example.com:{port}", Origin="http://evil.example.com") == 403
        assert status(Origin="http://evil.example.com") == 403
        assert status(Origin="null") == 403
        answer = asyncio.run(http_search(url, "sourdough starter"))  # real clients still work
        assert answer["results"][0]["path"] == "baking.md"
    text = log.read_text()
    assert "refused HTTP request from 127.0.0.1: Host 'evil.example.com' is not allowed" in text
    assert (
        "Origin 'http://evil.example.com' is not allowed (add it to transport.allowed_origins)"
        in text
    )

    widened = {
        "DOCMCP_TRANSPORT__ALLOWED_HOSTS": "[docs.example.org]",
        "DOCMCP_TRANSPORT__ALLOWED_ORIGINS": "[https://app.example.org]",
    }
    with http_server(built, tmp_path / "widened.log", **widened) as url:
        headers = {"Accept": "application/json, text/event-stream", "Host": "docs.example.org"}
        ok = httpx.post(url, json=INITIALIZE, headers=headers, trust_env=False)
        assert ok.status_code == 200
        origin = {**headers, "Origin": "https://app.example.org"}
        assert httpx.post(url, json=INITIALIZE, headers=origin, trust_env=False).status_code == 200
        other = {**headers, "Origin": "https://other.example.org"}
        assert httpx.post(url, json=INITIALIZE, headers=other, trust_env=False).status_code == 403


# --- 4. degradation ---------------------------------------------------------------------------


def test_embedder_outage_then_recovery_without_restart(built: Built, tmp_path: Path, embedder):
    endpoint = EmbeddingEndpoint(embedder)  # its port stays closed until start()
    log = tmp_path / "server.log"
    env = {
        "DOCMCP_EMBEDDING__PROVIDER": "openai",
        "DOCMCP_EMBEDDING__BASE_URL": f"http://127.0.0.1:{endpoint.port}/v1",
        "DOCMCP_EMBEDDING__RETRY_AFTER": "1",
        "DOCMCP_EMBEDDING__TIMEOUT": "5",
    }
    with built.stdio(log, **env) as server:
        for _ in range(2):  # and a second call still answers
            answer = server.search("sourdough starter flour")
            assert answer["degraded"] is True and answer["retrievers"] == ["keyword"]
            assert any("vector search unavailable" in note for note in answer["notes"])
            assert answer["results"][0]["path"] == "baking.md"
            assert all(set(r["retrievers"]) == {"keyword"} for r in answer["results"])
        vector_only = server.search("sourdough starter", mode="vector")
        assert vector_only["degraded"] and vector_only["retrievers"] == ["keyword"]
        assert server.tool("stats")["vector_search"] is False
        assert "embedder unavailable" in log.read_text()
        with running(endpoint):
            time.sleep(1.5)  # retry_after
            answer = server.search("sourdough starter flour")
            assert answer["retrievers"] == ["keyword", "vector"], answer["notes"]
            assert answer["degraded"] is False and answer["notes"] == []
            assert set(answer["results"][0]["retrievers"]) == {"keyword", "vector"}
            assert server.tool("stats")["vector_search"] is True
            assert endpoint.requests and endpoint.requests[-1][0] == "/v1/embeddings"
        assert "embedder available again" in log.read_text()


def test_embedder_of_another_model_is_refused(built: Built, tmp_path: Path, embedder):
    with running(EmbeddingEndpoint(embedder)) as endpoint:
        log = tmp_path / "server.log"
        env = {
            "DOCMCP_EMBEDDING__PROVIDER": "openai",
            "DOCMCP_EMBEDDING__BASE_URL": f"http://127.0.0.1:{endpoint.port}/reversed/v1",
        }
        with built.stdio(log, **env) as server:
            for mode in ("hybrid", "vector"):
                answer = server.search("tomato suckers", mode=mode)
                assert answer["degraded"] is True and answer["retrievers"] == ["keyword"]
                assert any(
                    "does not match the model this database was built with" in note
                    and "all-MiniLM-L6-v2" in note
                    for note in answer["notes"]
                ), answer["notes"]
                assert answer["results"][0]["path"] == "garden.md"
            assert server.tool("stats")["vector_search"] is False
        assert any(path.startswith("/reversed/") for path, _ in endpoint.requests)
        assert "does not match" in log.read_text()


def test_missing_full_text_index_falls_back_to_vectors(built: Built, tmp_path: Path):
    database = tmp_path / "no_fts.db"
    shutil.copyfile(built.database, database)
    with connect(database, extensions=("vss", "fts")) as con:
        con.execute("PRAGMA drop_fts_index('chunks')")
    with built.stdio(tmp_path / "server.log", "--database", str(database)) as server:
        for mode in ("hybrid", "keyword", "hybrid"):
            answer = server.search("sourdough starter", mode=mode)
            assert answer["degraded"] is True and answer["retrievers"] == ["vector"]
            assert any("no full-text index" in note for note in answer["notes"])
            assert answer["results"][0]["path"] == "baking.md"
        stats = server.tool("stats")
        assert stats["keyword_search"] is False and Path(stats["database"]) == database


def test_missing_database_is_a_tool_error(built: Built, tmp_path: Path):
    database = tmp_path / "nowhere" / "missing.db"
    with built.stdio(tmp_path / "server.log", "--database", str(database)) as server:
        for _ in range(2):
            message = server.error("search", query="cosine")
            assert str(database) in message and f"tools/build_mcp.sh {NAME}" in message
        assert str(database) in server.error("stats")
        assert str(database) in server.error("get_chunk", chunk_id="x")
        with pytest.raises(Exception, match=r"missing\.db"):
            server.read(f"{NAME}://search/cosine")
        database.parent.mkdir()
        shutil.copyfile(built.database, database)  # built while the server runs: no restart needed
        assert server.search("cosine")["results"]


def test_corrupt_database_is_a_tool_error(built: Built, tmp_path: Path):
    database = tmp_path / "corrupt.db"
    database.write_bytes(b"\x00junk, not a DuckDB file\xff" * 4096)
    with built.stdio(tmp_path / "server.log", "--database", str(database)) as server:
        for _ in range(2):
            message = server.error("search", query="cosine")
            assert str(database) in message and "cannot be read" in message
        assert str(database) in server.error("stats")


def wait_for(check: Callable[[], Any], timeout: float = 60) -> Any:
    """Poll ``check`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.2)
    return value


def replace_atomically(target: Path, make: Callable[[Path], None]) -> None:
    """Write a new file beside ``target`` with ``make`` and rename it over ``target``, as a build does."""
    staged = target.with_name(target.name + ".next")
    make(staged)
    os.replace(staged, target)


def test_a_new_build_is_served_without_a_restart(built: Built, tmp_path: Path, embedder):
    database = tmp_path / "served.db"
    shutil.copyfile(built.database, database)
    with built.stdio(tmp_path / "server.log", "--database", str(database)) as server:
        assert server.search("sourdough starter")["results"][0]["path"] == "baking.md"
        first_chunks = server.tool("stats")["chunks"]

        # an unreadable new file: reported, and the previous build goes on answering
        replace_atomically(database, lambda p: p.write_bytes(b"not a database" * 1000))
        assert server.search("sourdough starter")["results"][0]["path"] == "baking.md"
        error = wait_for(lambda: server.tool("stats")["reload_error"])
        assert "still serving the previous build" in error and str(database) in error
        assert server.search("sourdough starter")["results"][0]["path"] == "baking.md"

        # the next build, made by the real pipeline in a copy of the project without baking.md
        # (and a lake of its own: a lake's data path is fixed)
        project = tmp_path / "next"
        shutil.copytree(built.project, project, ignore=shutil.ignore_patterns("lake"))
        config_file = project / "servers" / NAME / "config" / "processing_config.yaml"
        config_file.write_text(config_file.read_text().replace(str(built.project), str(project)))
        (project / "corpus" / "baking.md").unlink()
        report = Build(load_processing_config(NAME, project), embedder).run()
        next_database = project / "servers" / NAME / "runtime" / database_name()
        replace_atomically(database, lambda p: shutil.copyfile(next_database, p))
        stats = wait_for(lambda: (s := server.tool("stats"))["chunks"] == report.chunks and s)
        assert report.chunks < first_chunks and stats["reload_error"] is None
        paths = {r["path"] for r in server.search("sourdough starter", top_k=10)["results"]}
        assert "baking.md" not in paths and paths  # same session, the new build's answers
    assert "serving a new build of srv-docs" in (tmp_path / "server.log").read_text()


def database_name() -> str:
    return f"{NAME.replace('-', '_')}.db"


# --- 6. reranking -----------------------------------------------------------------------------


def test_cross_encoder_rerank(built: Built, tmp_path: Path, server: LiveClient):
    model = make_tiny_cross_encoder(tmp_path / "cross-encoder")
    env = {"DOCMCP_RERANK__PROVIDER": "cross-encoder", "DOCMCP_RERANK__MODEL_PATH": str(model)}
    query = "cosine distance of embeddings"
    with built.stdio(tmp_path / "server.log", **env) as reranked:
        answer = reranked.search(query, top_k=8)
        assert reranked.tool("stats")["reranker"] == "cross-encoder"
    assert not answer["degraded"] and answer["notes"] == []
    results = answer["results"]
    assert [r["retrievers"]["rerank"] for r in results] == list(range(1, len(results) + 1))
    # the same model in this process: the reranked head of the fused list, best first
    head = server.search(query, top_k=50)["results"][:20]  # rerank.candidates
    scores = CrossEncoder(model).score(query, [r["content"] for r in head])
    best = np.argsort(-scores, kind="stable")[: len(results)]
    assert [r["chunk_id"] for r in results] == [head[i]["chunk_id"] for i in best]
    np.testing.assert_allclose([r["score"] for r in results], scores[best], rtol=1e-3, atol=1e-4)


def test_http_rerank_orders_by_the_endpoint(built: Built, tmp_path: Path):
    with running(LengthReranker()) as endpoint:
        env = {
            "DOCMCP_RERANK__PROVIDER": "http",
            "DOCMCP_RERANK__URL": f"http://127.0.0.1:{endpoint.port}/rerank",
        }
        with built.stdio(tmp_path / "server.log", **env) as server:
            answer = server.search("sourdough starter", top_k=10)
    assert not answer["degraded"] and answer["notes"] == []
    lengths = [len(r["content"]) for r in answer["results"]]
    assert lengths == sorted(lengths, reverse=True)
    assert [r["score"] for r in answer["results"]] == [float(n) for n in lengths]
    assert [r["retrievers"]["rerank"] for r in answer["results"]] == list(
        range(1, len(lengths) + 1)
    )
    path, body = endpoint.requests[0]
    assert path == "/rerank" and body["query"] == "sourdough starter" and body["texts"]


def test_failing_reranker_keeps_fused_order(built: Built, tmp_path: Path, server: LiveClient):
    env = {
        "DOCMCP_RERANK__PROVIDER": "http",
        "DOCMCP_RERANK__URL": f"http://127.0.0.1:{free_port()}/rerank",
    }
    query = "bearer token authorization header"
    with built.stdio(tmp_path / "server.log", **env) as failing:
        answers = [failing.search(query) for _ in range(2)]
    fused = server.search(query)
    for answer in answers:
        assert answer["degraded"] is True and answer["retrievers"] == ["keyword", "vector"]
        assert any("reranker failed" in note for note in answer["notes"])
        assert [r["chunk_id"] for r in answer["results"]] == [
            r["chunk_id"] for r in fused["results"]
        ]
        assert all("rerank" not in r["retrievers"] for r in answer["results"])
    assert "reranker failed" in (tmp_path / "server.log").read_text()


def test_reranker_that_cannot_load_is_reported(built: Built, tmp_path: Path):
    env = {
        "DOCMCP_RERANK__PROVIDER": "cross-encoder",
        "DOCMCP_RERANK__MODEL_PATH": str(tmp_path / "no-such-model"),
    }
    with built.stdio(tmp_path / "server.log", **env) as server:
        answer = server.search("tomato stakes")
        resource = json.loads(server.read(f"{NAME}://search/tomato%20stakes"))
        stats = server.tool("stats")
    for found in (answer, resource):
        assert found["degraded"] is True and found["retrievers"] == ["keyword", "vector"]
        assert any("reranker disabled" in note for note in found["notes"]), found["notes"]
        assert found["results"][0]["path"] == "garden.md"
        assert all("rerank" not in r["retrievers"] for r in found["results"])
    assert "no-such-model" in stats["reranker_error"]


# --- 7. a copied server folder runs on its own -----------------------------------------------


def test_copied_server_folder_runs_from_anywhere(built: Built, tmp_path: Path):
    copy = tmp_path / "elsewhere" / NAME
    shutil.copytree(built.server_root, copy, ignore=shutil.ignore_patterns("build", "__pycache__"))
    assert REPO not in copy.parents
    script = copy / "runtime" / built.script.name
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    log = tmp_path / "server.log"
    # -v logs every import (with its file) to stderr: proof of where docserve comes from
    transport = StdioTransport(
        sys.executable,
        ["-v", str(script)],
        env={"PYTHONDONTWRITEBYTECODE": "1"},
        cwd=str(cwd),
        log_file=log,
    )
    with LiveClient(transport) as server:
        answer = server.search("array_cosine_distance")
        stats = server.tool("stats")  # after a search: the model is loaded
    assert Path(stats["database"]).is_relative_to(copy)
    assert str(copy / "runtime" / "model") in stats["query_embedder"]
    assert answer["retrievers"] == ["keyword", "vector"]
    assert answer["results"][0]["path"] == "vectors.md"
    imports = [line for line in log.read_text().splitlines() if "docserve" in line]
    assert any(str(copy / "runtime" / "docserve" / "server.py") in line for line in imports)
    assert not [line for line in imports if str(REPO) in line]


def test_environment_overrides_apply_without_a_config_file(built: Built, tmp_path: Path):
    copy = tmp_path / NAME
    shutil.copytree(built.server_root, copy, ignore=shutil.ignore_patterns("build", "__pycache__"))
    (copy / "config" / "server_config.yaml").unlink()
    script = copy / "runtime" / built.script.name
    log = tmp_path / "server.log"
    with built.stdio(log, script=script, DOCMCP_SEARCH__TOP_K="2") as server:
        answer = server.search("sourdough starter")
        stats = server.tool("stats")
    assert len(answer["results"]) == 2 and stats["search_settings"]["top_k"] == 2
    assert Path(stats["database"]) == copy / "runtime" / built.database.name
