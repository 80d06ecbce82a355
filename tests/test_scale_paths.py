"""The search structures for large databases, exercised at small scale: partitioned
vectors (what a server of 200,000 chunks or more uses), impact-ordered BM25 postings with a cap
per term, and the stored index being what the runtime reads. The 1M-chunk figures come from
bench/bench_scale.py, not from here."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import build_pages
from docbuild.stages.materialize import FTS_FIELDS, FTS_OPTIONS, _sql_options
from docbuild.util.partition import partitioned_index
from docserve.config import EmbedderSettings, SearchSettings
from docserve.duck import connect
from docserve.query_embedder import QueryEmbedder
from docserve.search import SearchEngine
from docserve.store import ChunkStore
from docserve.vectors import VectorIndex
from fastmcp import Client
from fastmcp.client.transports import PythonStdioTransport

TOPICS = [
    "baking bread with a sourdough starter",
    "pruning tomato plants in the greenhouse",
    "tuning a bicycle derailleur",
    "brewing green tea at the right temperature",
    "configuring a firewall on a home router",
    "knitting a scarf with two colours",
    "repairing a leaking kitchen tap",
    "training a puppy to walk on a lead",
]


def clustered(n: int, dim: int = 64, clusters: int = 20, seed: int = 0) -> np.ndarray:
    """Unit vectors around a few centres, like embeddings of a corpus with topics."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    vectors = centres[rng.integers(0, clusters, n)] + rng.normal(0, 0.6, (n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_partitioned_vectors_find_what_exact_search_finds():
    vectors = clustered(5000)
    exact, partitioned = VectorIndex(vectors), partitioned_index(vectors, probes=12)
    assert len(partitioned.centroids) == 71 and partitioned.order is not None
    queries = clustered(50, seed=1)
    recall = [
        len({r for r, _ in exact.search(q, 10)} & {r for r, _ in partitioned.search(q, 10)}) / 10
        for q in queries
    ]
    assert np.mean(recall) >= 0.95
    # a stored vector finds itself first: its own partition is the nearest one
    row = 1234
    assert partitioned.search(vectors[row], 1)[0][0] == row


@pytest.mark.parametrize("kept", [40, 2500])  # few rows: scored exactly; many: more partitions
def test_partitioned_search_honours_filters(kept: int):
    vectors = clustered(5000)
    partitioned = partitioned_index(vectors, probes=4)
    mask = np.zeros(len(vectors), dtype=bool)
    mask[np.random.default_rng(2).choice(len(vectors), kept, replace=False)] = True
    q = clustered(1, seed=3)[0]
    found = partitioned.search(q, 10, mask)
    assert len(found) == 10 and all(mask[row] for row, _ in found)
    truth = VectorIndex(vectors).search(q, 10, mask)
    overlap = len({r for r, _ in found} & {r for r, _ in truth})
    assert overlap == 10 if kept == 40 else overlap >= 8


@pytest.fixture(scope="module")
def project(tmp_path_factory, embedder) -> Path:
    """A 40-page server built with vectors partitioned from the first chunk and 2 probes."""
    root = tmp_path_factory.mktemp("scale")
    pages = {
        f"page{i:02}.md": f"# Note {i} on {TOPICS[i % len(TOPICS)]}\n\nThis page, number {i}, is "
        f"about {TOPICS[i % len(TOPICS)]}. It adds detail {i * 7} that no other page has.\n"
        for i in range(40)
    }
    edits = {
        "processing_config.yaml": ("partition_from: 200000", "partition_from: 1"),
        "server_config.yaml": ("vector_probes: 32", "vector_probes: 2"),
    }
    build_pages(root, "scale-docs", pages, embedder, edits)
    return root


def test_a_partitioned_server_answers_through_mcp(project: Path, embedder):
    server = project / "servers" / "scale-docs"
    query = "Note 13 on knitting a scarf with two colours"
    con = connect(server / "runtime" / "scale_docs.db", read_only=True)
    index = json.loads(
        con.execute("SELECT value FROM build_info WHERE key = 'search_index'").fetchone()[0]
    )
    paths, vectors = zip(*con.execute("SELECT path, embedding FROM chunks").fetchall(), strict=True)
    con.close()
    assert index["partitions"] == 6 and index["vectors"] == "float32"
    exact = np.asarray(vectors, dtype=np.float32) @ embedder.embed_batch([query])[0]
    best = [paths[i] for i in np.argsort(-exact)[:3]]

    async def ask() -> tuple[str, str, dict]:
        transport = PythonStdioTransport(server / "runtime" / "scale_docs_server.py")
        async with Client(transport) as client:
            stats = await client.call_tool("stats", {})
            answer = await client.call_tool("search", {"query": query, "mode": "vector"})
            return stats.content[0].text, answer.content[0].text, answer.structured_content

    stats_text, text, data = asyncio.run(ask())
    assert "vector search: on (6 partitions, 2 probed per query)" in stats_text
    assert [r["path"] for r in data["results"][:3]] == best and best[0] in text
    assert all("knitting" in r["content"] for r in data["results"][:3])


def test_stored_postings_score_as_duckdb_match_bm25(project: Path):
    """With every field weighted 1, the stored impacts sum to DuckDB's own BM25 scores (times ln 10:
    DuckDB's idf takes a base-10 logarithm, ours the natural one; rankings are the same)."""
    database = project / "servers" / "scale-docs" / "runtime" / "scale_docs.db"
    flat = {"title": 1.0, "headings": 1.0, "content": 1.0, "code_terms": 1.0}
    settings = SearchSettings(field_weights=flat)
    store = ChunkStore(database, "build it", settings)  # postings computed for these weights
    engine = SearchEngine(store, QueryEmbedder(EmbedderSettings(provider="none")), settings)
    query = "sourdough starter detail 91"
    ours = {
        store.rows_at([row])[row]["chunk_id"]: score
        for row, score in engine.keyword_candidates(query, 50)
    }
    con = connect(database, read_only=True, extensions=("fts",))
    theirs = dict(
        con.execute(
            "SELECT chunk_id, s FROM (SELECT chunk_id, fts_main_chunks.match_bm25(chunk_id, ?) "
            "AS s FROM chunks) WHERE s IS NOT NULL",
            [query],
        ).fetchall()
    )
    assert set(ours) == set(theirs) and len(ours) >= 5
    assert all(abs(ours[c] - math.log(10) * theirs[c]) < 1e-4 * max(1.0, ours[c]) for c in ours)
    # a cap of one posting per term keeps each term's best chunk, so the best one stays first
    capped = store.keywords.search(store.query_terms(query), 50, None, cap=1)
    assert len(capped) < len(ours) and capped[0][0] == engine.keyword_candidates(query, 1)[0][0]


def test_full_text_index_equals_duckdbs_own(project: Path, tmp_path: Path):
    """The index tables the build fills in parallel hold what ``PRAGMA create_fts_index`` makes."""
    database = project / "servers" / "scale-docs" / "runtime" / "scale_docs.db"
    reference = tmp_path / "reference.db"
    shutil.copyfile(database, reference)
    con = connect(reference, extensions=("fts",))
    con.execute(
        f"PRAGMA create_fts_index('chunks', 'chunk_id', {', '.join(map(repr, FTS_FIELDS))}, "
        f"{_sql_options(FTS_OPTIONS)}, overwrite = 1)"
    )
    con.execute(f"ATTACH '{database}' AS built (READ_ONLY)")
    same = [
        "SELECT name, len FROM {s}.docs",
        "SELECT term, df FROM {s}.dict",
        "SELECT d.name, t.fieldid, k.term FROM {s}.terms t JOIN {s}.docs d USING (docid) "
        "JOIN {s}.dict k USING (termid)",
        "SELECT num_docs, avgdl FROM {s}.stats",
    ]
    for query in same:
        ours = sorted(con.execute(query.format(s="built.fts_main_chunks")).fetchall())
        theirs = sorted(con.execute(query.format(s="fts_main_chunks")).fetchall())
        assert ours == theirs and ours, query
    con.close()
