"""Benchmark the runtime server: search latency, cold start, memory, and the vector path.

Run: .venv/bin/python bench/bench_server.py [--server servers/NAME] [--scale 100000] [--hnsw-at-scale]

Without --server it builds the Mojo manual server into a temporary project first (about a
minute). It prints, for that server and for a synthetic copy grown to --scale chunks:
  - warm hybrid search latency in process, query embedding included (every query distinct, so
    the query cache never answers), p50 and p95;
  - the same through a real MCP client over stdio (Mojo scale);
  - cold start of the stdio server to its first answer, and its resident memory;
  - with --hnsw-at-scale, the vector path on the copy: exact search over the in-memory matrix vs
    DuckDB's HNSW index (persisted in the file), latency and recall@10 against exact.
For 1M chunks and the partitioned vectors, see bench/bench_scale.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MOJO = REPO.parent / "shared" / "corpora" / "mojo-manual-2025-11" / "docs"
WORDS = [
    "pointer",
    "struct",
    "trait",
    "ownership",
    "lifetime",
    "borrow",
    "copy",
    "move",
    "value",
    "reference",
    "parameter",
    "function",
    "decorator",
    "inline",
    "register",
    "gpu",
    "kernel",
    "thread",
    "block",
    "warp",
    "tensor",
    "layout",
    "python",
    "import",
    "module",
    "package",
    "error",
    "raise",
    "handle",
    "loop",
    "iterate",
    "list",
    "dict",
    "string",
    "int",
    "float",
    "simd",
    "vector",
    "memory",
    "alloc",
]


def queries(n: int, seed: int = 7) -> list[str]:
    """Distinct, plausible queries (so the query-embedding cache never answers)."""
    rng = np.random.default_rng(seed)
    stems = [
        "how do I use",
        "what is",
        "example of",
        "difference between",
        "why does",
        "when to use",
    ]
    return [f"{rng.choice(stems)} {' '.join(rng.choice(WORDS, size=3))} #{i}" for i in range(n)]


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):6.1f} ms  p95 {p95:6.1f} ms  (n={len(ordered)})"


def build_mojo(root: Path) -> Path:
    from docbuild.config import load_processing_config
    from docbuild.pipeline import Build
    from docbuild.services.scaffold import scaffold

    (root / "servers").mkdir(parents=True)
    scaffold("mojo-manual-mcp", str(MOJO), "mdx", "https://docs.modular.com/mojo/manual", root=root)
    Build(load_processing_config("mojo-manual-mcp", root)).run()
    return root / "servers" / "mojo-manual-mcp"


def engine_for(server: Path, database: Path | None = None):
    from docserve.config import load_settings
    from docserve.query_embedder import QueryEmbedder
    from docserve.search import SearchEngine
    from docserve.store import ChunkStore

    settings = load_settings(server.name, server)
    settings.embedding.cache_size = 0
    store = ChunkStore(database or settings.database, "build it", settings.search)
    return SearchEngine(
        store, QueryEmbedder(settings.embedding, server / "runtime" / "model"), settings.search
    )


def in_process_latency(server: Path, database: Path | None = None, n: int = 200) -> str:
    engine = engine_for(server, database)
    for q in queries(10, seed=1):
        engine.search(q)
    times = []
    for q in queries(n):
        start = time.perf_counter()
        engine.search(q, 5, "hybrid")
        times.append((time.perf_counter() - start) * 1000)
    return percentiles(times)


async def client_latency(script: Path, n: int = 100) -> str:
    from fastmcp import Client

    async with Client(script) as client:
        for q in queries(5, seed=2):
            await client.call_tool("search", {"query": q})
        times = []
        for q in queries(n, seed=3):
            start = time.perf_counter()
            await client.call_tool("search", {"query": q})
            times.append((time.perf_counter() - start) * 1000)
    return percentiles(times)


def rpc(proc: subprocess.Popen, message: dict) -> dict | None:
    assert proc.stdin and proc.stdout
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        reply = json.loads(proc.stdout.readline())
        if reply.get("id") == message["id"]:
            return reply


def script_command(script: Path, database: Path | None = None) -> list[str]:
    """The command that runs a server folder's script (on ``database`` if given)."""
    return [sys.executable, str(script)] + (["--database", str(database)] if database else [])


def cold_start(
    args: list[str], runs: int = 5, env: dict[str, str] | None = None
) -> tuple[str, float]:
    """Seconds from running ``args`` (a stdio server) to its first search answer; RSS after 20
    queries."""
    times, rss = [], 0.0
    for run in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        try:
            rpc(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "1"},
                    },
                },
            )
            rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            reply = rpc(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "search", "arguments": {"query": "how do pointers work"}},
                },
            )
            times.append(time.perf_counter() - start)
            assert reply and "result" in reply and not reply["result"].get("isError"), reply
            if run == 0:
                for i, q in enumerate(queries(20, seed=4)):
                    rpc(
                        proc,
                        {
                            "jsonrpc": "2.0",
                            "id": 10 + i,
                            "method": "tools/call",
                            "params": {"name": "search", "arguments": {"query": q}},
                        },
                    )
                status = Path(f"/proc/{proc.pid}/status").read_text()
                rss = (
                    int(
                        next(
                            line.split()[1]
                            for line in status.splitlines()
                            if line.startswith("VmRSS")
                        )
                    )
                    / 1024
                )
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return (
        f"median {statistics.median(times):.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times)})",
        rss,
    )


def vector_paths(database: Path, n: int = 100) -> str:
    """Exact search over the in-memory matrix vs the persisted HNSW index."""
    from docserve.duck import connect
    from docserve.store import ChunkStore

    store = ChunkStore(database, "build it")
    matrix = store.vectors.vectors
    con = connect(database, read_only=True, extensions=("vss",))
    con.execute("SET disabled_optimizers = 'late_materialization'")
    dim = matrix.shape[1]
    rng = np.random.default_rng(0)
    probes = matrix[rng.choice(len(matrix), n, replace=False)] + rng.normal(
        0, 0.02, (n, dim)
    ).astype(np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    exact_t, hnsw_t, recall = [], [], []
    for v in probes:
        start = time.perf_counter()
        scores = matrix @ v
        top = np.argpartition(-scores, 9)[:10]
        exact_t.append((time.perf_counter() - start) * 1000)
        truth = set(top.tolist())
        start = time.perf_counter()
        rows = con.execute(
            f"SELECT chunk_row FROM chunks ORDER BY array_cosine_distance(embedding, ?::VARCHAR::FLOAT[{dim}]) LIMIT 10",
            ["[" + ",".join(f"{x:.7f}" for x in v) + "]"],
        ).fetchall()
        hnsw_t.append((time.perf_counter() - start) * 1000)
        recall.append(len(truth & {r[0] for r in rows}) / 10)
    return (
        f"exact (numpy)  {percentiles(exact_t)}  recall@10 1.00\n"
        f"    HNSW (DuckDB) {percentiles(hnsw_t)}  recall@10 {statistics.mean(recall):.2f}"
    )


def grow(database: Path, target: Path, scale: int, hnsw: bool) -> float:
    """A synthetic copy of ``database`` with ``scale`` chunks (real rows repeated as new
    documents, vectors jittered), indexed as the build indexes it."""
    from docbuild.config import IndexConfig
    from docbuild.stages.materialize import (
        FTS_FIELDS,
        FTS_OPTIONS,
        _sql_options,
        write_search_index,
    )
    from docbuild.util.fulltext import create_full_text_index
    from docserve.config import SearchSettings
    from docserve.duck import connect

    shutil.copyfile(database, target)
    con = connect(target, extensions=("vss", "fts"))
    n = con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    dim = con.execute("SELECT value::INT FROM build_info WHERE key = 'dimension'").fetchone()[0]
    copies = -(-scale // n) - 1
    con.execute("PRAGMA drop_fts_index('chunks')")
    start = time.perf_counter()
    con.execute(f"""
        CREATE TABLE grown AS SELECT * EXCLUDE (chunk_row) FROM chunks UNION ALL (
        SELECT chunks.* EXCLUDE (chunk_row) REPLACE (
            chunk_id || '-' || c AS chunk_id, document_id || '-' || c AS document_id,
            list_transform(embedding::FLOAT[], x -> x + (random() - 0.5) * 0.02)::FLOAT[{dim}] AS embedding)
        FROM chunks, range(1, {copies + 1}) t(c) LIMIT {scale - n})""")
    con.execute("DROP TABLE chunks")
    con.execute(f"""
        CREATE TABLE chunks AS SELECT * REPLACE (list_transform(embedding::FLOAT[],
            x -> x / sqrt(list_sum(list_transform(embedding::FLOAT[], y -> y * y))))::FLOAT[{dim}]
            AS embedding),
        (row_number() OVER (ORDER BY path, document_id, chunk_index) - 1)::INTEGER AS chunk_row
        FROM grown ORDER BY path, document_id, chunk_index""")
    con.execute("DROP TABLE grown")
    create_full_text_index(con, FTS_FIELDS, _sql_options(FTS_OPTIONS), "porter")
    con.execute("ALTER TABLE chunks ADD PRIMARY KEY (chunk_id)")
    con.execute("CREATE UNIQUE INDEX chunks_row ON chunks (chunk_row)")
    index = write_search_index(con, dim, SearchSettings(), IndexConfig().partition_from)
    con.execute("UPDATE build_info SET value = ? WHERE key = 'search_index'", [json.dumps(index)])
    if hnsw:
        con.execute("SET hnsw_enable_experimental_persistence = true")
        con.execute(
            "CREATE INDEX chunks_embedding_hnsw ON chunks USING HNSW (embedding) WITH (metric = 'cosine')"
        )
    con.execute("CHECKPOINT")
    con.close()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--server", type=Path, help="a built server folder (default: build the Mojo manual)"
    )
    parser.add_argument(
        "--scale", type=int, default=100_000, help="chunks in the synthetic copy (0: skip)"
    )
    parser.add_argument(
        "--hnsw-at-scale", action="store_true", help="also build HNSW on the copy (minutes)"
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-server-"))
    server = args.server.resolve() if args.server else build_mojo(tmp)
    script = next((server / "runtime").glob("*_server.py"))
    database = next((server / "runtime").glob("*.db"))
    from docserve.store import ChunkStore

    chunks = ChunkStore(database, "").size
    print(f"server {server.name}: {chunks} chunks; cpus {os.cpu_count()}")
    print(f"  hybrid search, in process (query embedding included): {in_process_latency(server)}")
    print(
        f"  hybrid search, MCP client over stdio:                 {asyncio.run(client_latency(script))}"
    )
    start, rss = cold_start(script_command(script))
    print(f"  cold start to first answer (stdio):                   {start}")
    print(f"  resident memory after 20 queries:                     {rss:.0f} MB")
    if args.scale:
        big = tmp / f"scaled_{args.scale}.db"
        seconds = grow(database, big, args.scale, args.hnsw_at_scale)
        print(f"\nsynthetic copy: {args.scale} chunks (built in {seconds:.0f} s)")
        print(f"  hybrid search, in process: {in_process_latency(server, big)}")
        start, rss = cold_start(script_command(script, big), runs=3)
        print(f"  cold start to first answer: {start}")
        print(f"  resident memory after 20 queries: {rss:.0f} MB")
        if args.hnsw_at_scale:
            print(f"  vector path at {args.scale} chunks:\n    {vector_paths(big)}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
