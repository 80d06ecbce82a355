"""Materialize a DuckLake snapshot into the runtime database, atomically.

The file holds the ``chunks`` table (in document order, numbered by ``chunk_row``), a BM25
full-text index on title, heading breadcrumb, content and the split code identifiers
(``code_terms``), the runtime's search structures (``search_arrays``: its vectors, partitioned
from ``index.partition_from`` rows, and impact-ordered BM25 postings), ``build_info``, and, only when
asked for, an HNSW index (cosine) on the embeddings for SQL users (the runtime does not use it:
see docs/search-design.md). It is written to a temporary file beside the target and renamed over
it only when complete, so a failed build never breaks a working server.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
from docserve.arrays import write_arrays
from docserve.build_info import BuildInfo
from docserve.codeterms import code_terms
from docserve.config import SearchSettings
from docserve.duck import connect
from docserve.keywords import Bm25Params, build_keyword_index
from docserve.store import SEARCH_INDEX_FORMAT
from docserve.vectors import VectorIndex

from docbuild.config import IndexConfig
from docbuild.stages.snapshot import LAKE_ALIAS, LakeLocation
from docbuild.util.fulltext import create_full_text_index
from docbuild.util.partition import partition_count, partitioned_index

FTS_OPTIONS = {
    "stemmer": "porter",
    "stopwords": "english",
    "ignore": r"(\\.|[^a-z0-9_])+",
    "strip_accents": 1,
    "lower": 1,
}
FTS_FIELDS = ("title", "headings", "content", "code_terms")
HNSW_OPTIONS = {"metric": "cosine", "ef_construction": 128, "M": 16}


def materialize(
    lake: LakeLocation,
    snapshot_id: int,
    target: Path,
    dimension: int,
    build_info: BuildInfo,
    finalize: Callable[[Path], dict[str, object]] | None = None,
    search: SearchSettings | None = None,
    index: IndexConfig | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, int]:
    """Write snapshot ``snapshot_id`` of the lake to ``target``; returns row counts.

    ``search`` holds the BM25 parameters the postings are scored with (the server's settings);
    ``index`` says whether to add the HNSW index and from how many rows to partition the vectors. ``finalize`` runs on the finished file before it replaces
    ``target`` (for example an eval) and returns more ``build_info`` entries. ``log`` gets a line
    per step with its time.
    """
    search, index = search or SearchSettings(), index or IndexConfig()
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned_files(target)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        con = connect(tmp, extensions=("vss", "fts", "ducklake"))
        try:
            lake.attach(con, read_only=True)
            con.create_function(
                "code_terms_of", code_terms_batch, ["VARCHAR"], "VARCHAR", type="arrow"
            )
            with timed(log, "chunks table"):
                con.execute(chunks_query(con, snapshot_id, int(dimension)))
            con.execute(f"DETACH {LAKE_ALIAS}")
            # a snapshot from before documentation versions: every chunk is unversioned
            con.execute("ALTER TABLE chunks ADD COLUMN IF NOT EXISTS version VARCHAR")
            with timed(log, "full-text index"):
                create_full_text_index(
                    con, FTS_FIELDS, _sql_options(FTS_OPTIONS), str(FTS_OPTIONS["stemmer"])
                )
            with timed(log, "keys"):
                con.execute("ALTER TABLE chunks ADD PRIMARY KEY (chunk_id)")
                con.execute("CREATE UNIQUE INDEX chunks_row ON chunks (chunk_row)")
            if index.hnsw:
                with timed(log, "HNSW index"):
                    con.execute("SET hnsw_enable_experimental_persistence = true")
                    con.execute(
                        f"CREATE INDEX chunks_embedding_hnsw ON chunks USING HNSW (embedding) "
                        f"WITH ({_sql_options(HNSW_OPTIONS)})"
                    )
            search_index = write_search_index(
                con, int(dimension), search, index.partition_from, log
            )
            counts = {
                "chunks": con.execute("SELECT count(*) FROM chunks").fetchone()[0],
                "documents": con.execute(
                    "SELECT count(DISTINCT document_id) FROM chunks"
                ).fetchone()[0],
            }
            info = replace(
                build_info,
                snapshot_id=snapshot_id,
                chunk_count=counts["chunks"],
                document_count=counts["documents"],
                fts={"fields": list(FTS_FIELDS), **FTS_OPTIONS},
                hnsw=HNSW_OPTIONS if index.hnsw else None,
                search_index=search_index,
            )
            con.execute("CREATE TABLE build_info (key VARCHAR PRIMARY KEY, value JSON)")
            con.executemany("INSERT INTO build_info VALUES (?, ?)", info.rows())
            con.execute("CHECKPOINT")
        finally:
            con.close()
        if finalize is not None:
            extra = finalize(tmp)
            con = connect(tmp, extensions=("vss",))
            try:
                con.execute("SET hnsw_enable_experimental_persistence = true")
                con.executemany(
                    "INSERT OR REPLACE INTO build_info VALUES (?, ?)",
                    [(key, json.dumps(value, default=str)) for key, value in sorted(extra.items())],
                )
                con.execute("CHECKPOINT")
            finally:
                con.close()
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    return counts


def served_is_current(database: Path, snapshot_id: int, key: str) -> bool:
    """Whether ``database`` was materialized from snapshot ``snapshot_id`` with the same build
    info, settings and code (``key``): materializing it again would write the same file."""
    if not database.is_file():
        return False
    try:
        with connect(database, read_only=True, extensions=()) as con:
            served = dict(
                con.execute(
                    "SELECT key, value FROM build_info "
                    "WHERE key IN ('snapshot_id', 'materialize_key')"
                ).fetchall()
            )
    except duckdb.Error:  # unreadable: materialize it afresh
        return False
    return served == {
        "snapshot_id": json.dumps(snapshot_id),
        "materialize_key": json.dumps(key),
    }


def chunks_query(con: duckdb.DuckDBPyConnection, snapshot_id: int, dimension: int) -> str:
    """The statement that copies the snapshot's chunks into ``chunks``, in document order.

    ``code_terms`` come with the chunks; a snapshot written before they did (or rows it kept
    from then) gets them computed here, by the same function.
    """
    source = f"{LAKE_ALIAS}.chunks AT (VERSION => {int(snapshot_id)})"
    columns = {d[0] for d in con.execute(f"FROM {source} LIMIT 0").description}
    computed = "code_terms_of(array_to_string(section_hierarchy, ' ') || ' ' || content)"
    embedding = f"embedding::FLOAT[{dimension}] AS embedding"
    if "code_terms" in columns:
        replaced, added = f"{embedding}, coalesce(code_terms, {computed}) AS code_terms", ""
    else:
        replaced, added = embedding, f"{computed} AS code_terms, "
    order = "path, document_id, chunk_index"
    return (
        f"CREATE TABLE chunks AS SELECT * REPLACE ({replaced}), "
        f"array_to_string(section_hierarchy, ' ') AS headings, {added}"
        f"(row_number() OVER (ORDER BY {order}) - 1)::INTEGER AS chunk_row "
        f"FROM {source} ORDER BY {order}"
    )


def code_terms_batch(texts: pa.Array) -> pa.Array:
    """:func:`code_terms` over a batch of texts (one Python call per batch, not per row)."""
    return pa.array(
        [None if text is None else code_terms(text) for text in texts.to_pylist()], pa.string()
    )


@contextmanager
def timed(log: Callable[[str], None], step: str) -> Iterator[None]:
    """Log ``step`` and its time once it is done."""
    start = time.perf_counter()
    yield
    log(f"[materialize] {step}: {time.perf_counter() - start:.1f} s")


def write_search_index(
    con: duckdb.DuckDBPyConnection,
    dimension: int,
    search: SearchSettings,
    partition_from: int,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, object]:
    """Store the runtime's vectors and BM25 postings in ``search_arrays``; returns their
    description for ``build_info``."""
    rows = con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    embeddings = con.execute("SELECT embedding FROM chunks ORDER BY chunk_row").fetch_arrow_table()
    vectors = (
        embeddings.column(0).combine_chunks().flatten().to_numpy().reshape(rows, dimension)
    ).astype(np.float32)
    del embeddings
    partitioned = rows >= max(partition_from, 1)
    with timed(log, "vector partitions" if partitioned else "vectors"):
        index = (
            partitioned_index(vectors, search.vector_probes)
            if partitioned
            else VectorIndex(vectors)
        )
    params = Bm25Params.of(search.bm25_k1, search.bm25_b, search.field_weights)
    with timed(log, "BM25 postings"):
        keywords = build_keyword_index(con, params)
    with timed(log, "search arrays written"):
        write_arrays(con, index.arrays() | keywords.arrays())
    return {
        "format": SEARCH_INDEX_FORMAT,
        "rows": rows,
        "vectors": str(index.vectors.dtype),
        "partitions": partition_count(rows) if partitioned else 0,
        "bm25": params.to_dict(),
        "postings": len(keywords.rows),
        "terms": len(keywords.term_ids),
    }


def remove_abandoned_files(target: Path) -> None:
    """Delete temporary files that builds killed before they finished left beside ``target``."""
    for path in target.parent.glob(f"{target.name}.tmp-*"):
        pid = path.name.removeprefix(f"{target.name}.tmp-").removesuffix(".wal")
        if pid.isdigit() and not process_alive(int(pid)):
            path.unlink(missing_ok=True)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a build still writing its temporary file)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sql_options(options: dict[str, object]) -> str:
    """``key = value`` pairs for a PRAGMA or WITH clause (strings quoted as SQL literals)."""
    return ", ".join(
        f"{key} = '{value}'" if isinstance(value, str) else f"{key} = {value}"
        for key, value in options.items()
    )
