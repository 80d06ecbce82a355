"""Scaling reads by running copies: two real HTTP server processes on one database file.

Both replicas answer concurrent clients the same; a client on the current protocol era
(2026-07-28, which fastmcp's ``Client`` negotiates) sends self-contained requests that any replica
can answer, so a load balancer needs no sticky sessions for it; a client on the older handshake
era gets a session that only the replica it initialised knows, unless the replicas run with
``FASTMCP_STATELESS_HTTP=true``; and both replicas follow a rebuild of the file on their own.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import build_pages
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from fastmcp import Client
from test_server import INITIALIZE, Built, http_server

NAME = "replicated"
PAGES = {
    "stars.md": "# Stars\n\nStars fuse hydrogen into helium in their hot, dense cores.\n",
    "moons.md": "# Moons\n\nMoons orbit planets, and their gravity raises tides in the oceans.\n",
    "comets.md": "# Comets\n\nNear the sun a comet grows long tails of dust and ionised gas.\n",
    "rivers.md": "# Rivers\n\nA river drops its sediment where it meets the sea and builds a delta.\n",
}
QUERIES = {
    "hydrogen fusion in stars": "stars.md",
    "what raises ocean tides": "moons.md",
    "comet dust tail": "comets.md",
    "river delta sediment": "rivers.md",
}
MODERN = "2026-07-28"  # the protocol era without an initialize handshake or sessions
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder) -> Built:
    """Server ``replicated`` over four one-topic pages."""
    project = tmp_path_factory.mktemp("project")
    config, report = build_pages(project, NAME, PAGES, embedder)
    root = config.server_root
    return Built(
        project, root, root / "runtime" / f"{NAME}_server.py", config.database_path, report
    )


@pytest.fixture(scope="module")
def replicas(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The MCP URLs of two replicas (default settings) serving the same database file."""
    logs = tmp_path_factory.mktemp("replica-logs")
    with http_server(built, logs / "a.log") as a, http_server(built, logs / "b.log") as b:
        yield [a, b]


def rpc_result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer sent as JSON or as one server-sent event."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return json.loads(data[-1])


def modern(url: str, request_id: int, method: str, params: dict[str, Any]) -> httpx.Response:
    """One self-contained 2026-07-28 request: the protocol version, client info and capabilities
    travel in every request's ``_meta``, so no earlier request is needed."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {**ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**params, "_meta": meta},
    }
    return httpx.post(url, json=body, headers=headers, trust_env=False, timeout=60)


def search_params(query: str) -> dict[str, Any]:
    return {"name": "search", "arguments": {"query": query, "top_k": 1}}


def search_call(request_id: int, query: str) -> dict[str, Any]:
    """A handshake-era ``tools/call`` of ``search``."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": search_params(query),
    }


def top_path(message: dict[str, Any]) -> str:
    return message["result"]["structuredContent"]["results"][0]["path"]


async def ask_everything(url: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every query at once through one client, then ``stats``."""
    async with Client(url, timeout=60) as client:
        answers = await asyncio.gather(
            *(client.call_tool("search", {"query": q, "top_k": 3}) for q in QUERIES)
        )
        stats = await client.call_tool("stats", {})
    return [a.structured_content for a in answers], stats.structured_content


def file_state(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns, info.st_size


def test_two_replicas_answer_the_same_concurrently(built: Built, replicas: list[str]):
    before = file_state(built.database)

    async def both() -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
        return await asyncio.gather(*(ask_everything(url) for url in replicas for _ in range(2)))

    answers = asyncio.run(both())
    for searches, stats in answers:
        assert [s["results"][0]["path"] for s in searches] == list(QUERIES.values())
        assert stats["build_info"]["snapshot_id"] == built.report.snapshot.snapshot_id
    ranked = [[[r["chunk_id"] for r in s["results"]] for s in searches] for searches, _ in answers]
    assert all(ids == ranked[0] for ids in ranked)  # every replica ranks alike
    assert file_state(built.database) == before  # opened read-only: never written
    assert not built.database.with_name(built.database.name + ".wal").exists()


def test_current_era_requests_need_no_sticky_sessions(replicas: list[str]):
    a, b = replicas
    discovered = modern(a, 1, "server/discover", {})
    assert "mcp-session-id" not in discovered.headers
    assert MODERN in rpc_result(discovered)["result"]["supportedVersions"]
    for request_id, (query, path) in enumerate(QUERIES.items(), start=2):
        replica = b if request_id % 2 else a  # alternate, as round robin would
        answer = modern(replica, request_id, "tools/call", search_params(query))
        assert "mcp-session-id" not in answer.headers
        assert top_path(rpc_result(answer)) == path


def handshake(url: str) -> dict[str, str]:
    """Initialise a handshake-era session at ``url``: the headers its later requests carry."""
    answer = httpx.post(url, json=INITIALIZE, headers=ACCEPT, trust_env=False, timeout=60)
    version = rpc_result(answer)["result"]["protocolVersion"]
    headers = {**ACCEPT, "MCP-Protocol-Version": version}
    if "mcp-session-id" in answer.headers:
        headers["Mcp-Session-Id"] = answer.headers["mcp-session-id"]
    return headers


def test_a_handshake_session_lives_in_the_replica_that_made_it(replicas: list[str]):
    a, b = replicas
    session = handshake(a)
    assert "Mcp-Session-Id" in session
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(a, json=initialized, headers=session, trust_env=False).status_code == 202
    elsewhere = httpx.post(
        b, json=search_call(2, "comet dust tail"), headers=session, trust_env=False
    )
    assert elsewhere.status_code == 404 and "Session not found" in elsewhere.text
    here = httpx.post(a, json=search_call(3, "comet dust tail"), headers=session, trust_env=False)
    assert top_path(rpc_result(here)) == "comets.md"


def test_stateless_replicas_serve_handshake_clients_anywhere(built: Built, tmp_path: Path):
    stateless = {"FASTMCP_STATELESS_HTTP": "true"}
    with (
        http_server(built, tmp_path / "a.log", **stateless) as a,
        http_server(built, tmp_path / "b.log", **stateless) as b,
    ):
        session = handshake(a)
        assert "Mcp-Session-Id" not in session
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert httpx.post(b, json=initialized, headers=session, trust_env=False).status_code == 202
        answer = httpx.post(
            b, json=search_call(2, "river delta sediment"), headers=session, trust_env=False
        )
        assert top_path(rpc_result(answer)) == "rivers.md"
        searches, _ = asyncio.run(ask_everything(b))  # the current era works there too
        assert [s["results"][0]["path"] for s in searches] == list(QUERIES.values())


def test_every_replica_follows_a_rebuild(built: Built, replicas: list[str], embedder):
    """Runs last: it rebuilds the module's server."""
    page = built.project / "corpus" / "stars.md"
    page.write_text(
        page.read_text() + "\nA star that runs out of fuel may collapse into a neutron star.\n"
    )
    rebuilt = Build(load_processing_config(NAME, built.project), embedder).run()
    new = rebuilt.snapshot.snapshot_id
    assert new != built.report.snapshot.snapshot_id

    async def follows(url: str) -> None:
        async with Client(url, timeout=60) as client:
            deadline = time.monotonic() + 60
            while True:
                stats = (await client.call_tool("stats", {})).structured_content
                if stats["build_info"]["snapshot_id"] == new:
                    break
                assert time.monotonic() < deadline, f"{url} still serves the old build"
                await asyncio.sleep(0.2)
            answer = await client.call_tool(
                "search", {"query": "neutron star collapse", "top_k": 1}
            )
            assert "neutron star" in answer.structured_content["results"][0]["content"]

    async def both() -> None:
        await asyncio.gather(*(follows(url) for url in replicas))

    asyncio.run(both())
