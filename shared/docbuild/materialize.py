"""Materialise a DuckLake snapshot into the runtime database, atomically.

The file holds the ``chunks`` table, an HNSW index (cosine) on the embeddings, a BM25 full-text
index on title, heading breadcrumb, content and the split code identifiers (``code_terms``), and
``build_info``. It is written to a temporary file beside the
target and renamed over it only when complete, so a failed build never breaks a working server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from docserve.codeterms import code_terms
from docserve.duck import connect

from docbuild.lake import LAKE_ALIAS, LakeLocation

FTS_OPTIONS = {
    "stemmer": "porter",
    "stopwords": "english",
    "ignore": r"(\\.|[^a-z0-9_])+",
    "strip_accents": 1,
    "lower": 1,
}
FTS_FIELDS = ("title", "headings", "content", "code_terms")
FTS_FIELDS_SQL = ", ".join(f"'{name}'" for name in FTS_FIELDS)
HNSW_OPTIONS = {"metric": "cosine", "ef_construction": 128, "M": 16}


def materialize(
    lake: LakeLocation,
    snapshot_id: int,
    target: Path,
    dimension: int,
    build_info: dict[str, object],
    finalize: Callable[[Path], dict[str, object]] | None = None,
) -> dict[str, int]:
    """Write snapshot ``snapshot_id`` of the lake to ``target``; returns row counts.

    ``finalize`` runs on the finished file before it replaces ``target`` (for example an eval)
    and returns more ``build_info`` entries.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned_files(target)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        con = connect(tmp, extensions=("vss", "fts", "ducklake"))
        try:
            lake.attach(con, read_only=True)
            con.create_function("code_terms", code_terms, ["VARCHAR"], "VARCHAR")
            con.execute(
                "CREATE TABLE chunks AS SELECT * REPLACE "
                f"(embedding::FLOAT[{int(dimension)}] AS embedding), "
                "array_to_string(section_hierarchy, ' ') AS headings, "
                "code_terms(array_to_string(section_hierarchy, ' ') || ' ' || content) AS code_terms "
                f"FROM {LAKE_ALIAS}.chunks AT (VERSION => ?) ORDER BY path, document_id, chunk_index",
                [snapshot_id],
            )
            con.execute(f"DETACH {LAKE_ALIAS}")
            # a snapshot from before documentation versions: every chunk is unversioned
            con.execute("ALTER TABLE chunks ADD COLUMN IF NOT EXISTS version VARCHAR")
            con.execute("ALTER TABLE chunks ADD PRIMARY KEY (chunk_id)")
            con.execute("SET hnsw_enable_experimental_persistence = true")
            con.execute(
                f"CREATE INDEX chunks_embedding_hnsw ON chunks USING HNSW (embedding) "
                f"WITH ({_sql_options(HNSW_OPTIONS)})"
            )
            con.execute(
                f"PRAGMA create_fts_index('chunks', 'chunk_id', {FTS_FIELDS_SQL}, {_sql_options(FTS_OPTIONS)})"
            )
            counts = {
                "chunks": con.execute("SELECT count(*) FROM chunks").fetchone()[0],
                "documents": con.execute(
                    "SELECT count(DISTINCT document_id) FROM chunks"
                ).fetchone()[0],
            }
            info = {
                "versions": [],  # unversioned, unless the build says otherwise
                "default_version": None,
                **build_info,
                "snapshot_id": snapshot_id,
                "chunk_count": counts["chunks"],
                "document_count": counts["documents"],
                "fts": {"fields": list(FTS_FIELDS), **FTS_OPTIONS},
                "hnsw": HNSW_OPTIONS,
            }
            con.execute("CREATE TABLE build_info (key VARCHAR PRIMARY KEY, value JSON)")
            con.executemany(
                "INSERT INTO build_info VALUES (?, ?)",
                [(key, json.dumps(value, default=str)) for key, value in sorted(info.items())],
            )
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
