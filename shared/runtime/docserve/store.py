"""The runtime database, opened read-only and held in memory where it makes search fast.

Vectors: the embeddings as one float32 matrix, searched exactly (a matrix-vector product beats
the HNSW index at documentation scale and has perfect recall). Keywords: BM25 over postings read
from DuckDB's full-text index tables into numpy, scored as ``match_bm25`` scores them (without
its per-query scan of the index tables), with a term's frequency weighted by the field it occurs
in (title and headings can count more than body text). Chunk text is read from DuckDB per result.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from .catalog import Catalog
from .codeterms import code_terms
from .duck import connect

RESULT_COLUMNS = (
    "chunk_id, document_id, path, title, section_hierarchy, section_url, url, content, "
    "page, chunk_index, has_code, token_count"
)


def open_read_only(path: Path) -> duckdb.DuckDBPyConnection:
    """A connection that reads ``path`` as it is now.

    The file is attached to a fresh in-memory database rather than opened directly: DuckDB shares
    one instance per path within a process, so a direct open after the build replaced the file
    could still see the old one while any connection to it lives.
    """
    con = connect(extensions=("fts",))
    quoted = str(path).replace("'", "''")
    con.execute(f"ATTACH '{quoted}' AS served (READ_ONLY)")
    con.execute("USE served")
    return con


def read_build_info(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The database's ``build_info`` table as a dict."""
    rows = con.execute("SELECT key, value FROM build_info").fetchall()
    return {key: json.loads(value) for key, value in rows}


class DatabaseError(RuntimeError):
    """The database is missing or unreadable; the message names the file and how to build it."""


@dataclass
class Postings:
    """BM25 postings: for term ``t``, documents ``docs[start[t]:start[t+1]]`` with frequencies."""

    term_ids: dict[str, int]
    df: np.ndarray
    start: np.ndarray
    docs: np.ndarray
    tf: np.ndarray
    doc_len: np.ndarray
    avgdl: float


class ChunkStore:
    """Read-only access to a built server database."""

    def __init__(
        self, path: Path, build_hint: str, field_weights: dict[str, float] | None = None
    ) -> None:
        self.path = path
        self.field_weights = field_weights or {}
        if not path.is_file():
            raise DatabaseError(f"database {path} not found: build it with `{build_hint}`")
        try:
            self.con = open_read_only(path)
            self.info = read_build_info(self.con)
            rows = self._read_rows()
        except (duckdb.Error, ValueError) as exc:
            raise DatabaseError(
                f"database {path} cannot be read ({exc}); rebuild it with `{build_hint}`"
            ) from None
        self.chunk_ids: list[str] = list(rows["chunk_id"])
        self.row_of = {chunk_id: row for row, chunk_id in enumerate(self.chunk_ids)}
        self.matrix = (
            np.stack(rows["embedding"]).astype(np.float32)
            if len(self.chunk_ids)
            else np.zeros((0, 1), np.float32)
        )
        self.lock = threading.Lock()
        self.postings = self._read_postings()
        versions = [v["label"] for v in self.info.get("versions") or []] or sorted(
            {v for v in rows["version"] if v}
        )
        default = self.info.get("default_version") or (versions[-1] if versions else None)
        self.catalog = Catalog(rows, versions, default)

    def _read_rows(self) -> dict[str, np.ndarray]:
        """Per-row embedding and the metadata filters and outlines need, in row order."""
        columns = {
            name
            for (name,) in self.con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'served' "
                "AND table_name = 'chunks'"
            ).fetchall()
        }
        version = "coalesce(version, '')" if "version" in columns else "''"
        rows = self.con.execute(
            "SELECT chunk_id, embedding, document_id, path, coalesce(title, '') AS title, "
            "coalesce(url, '') AS url, coalesce(section_hierarchy, []) AS section_hierarchy, "
            f"{version} AS version FROM chunks ORDER BY rowid"
        ).fetchnumpy()
        plain = {key: np.asarray(column) for key, column in rows.items()}
        hierarchies = np.empty(len(plain["chunk_id"]), dtype=object)
        hierarchies[:] = [tuple(h) for h in plain["section_hierarchy"]]
        plain["section_hierarchy"] = hierarchies
        return plain

    def _read_postings(self) -> Postings | None:
        """The FTS index as postings, or None when the database has no FTS index."""
        present = self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'fts_main_chunks' AND table_name = 'terms'"
        ).fetchone()[0]
        if not present:
            return None
        docs = self.con.execute("SELECT docid, name, len FROM fts_main_chunks.docs").fetchnumpy()
        row_of_doc = np.full(int(docs["docid"].max(initial=-1)) + 1, -1, dtype=np.int64)
        doc_len = np.zeros(len(self.chunk_ids), dtype=np.float32)
        for docid, name, length in zip(docs["docid"], docs["name"], docs["len"], strict=True):
            row = self.row_of.get(name)
            if row is not None:
                row_of_doc[docid] = row
                doc_len[row] = length
        terms = self.con.execute("SELECT termid, term, df FROM fts_main_chunks.dict").fetchnumpy()
        fields = dict(
            self.con.execute("SELECT fieldid, field FROM fts_main_chunks.fields").fetchall()
        )
        weights = [(fid, float(self.field_weights.get(name, 1.0))) for fid, name in fields.items()]
        postings = self.con.execute(
            "SELECT t.termid, t.docid, sum(w.weight)::FLOAT AS tf FROM fts_main_chunks.terms t "
            "JOIN (SELECT unnest(?) AS fieldid, unnest(?) AS weight) w USING (fieldid) "
            "GROUP BY ALL ORDER BY t.termid, t.docid",
            [[f for f, _ in weights], [w for _, w in weights]],
        ).fetchnumpy()
        n_terms = int(terms["termid"].max(initial=-1)) + 1
        df = np.zeros(n_terms, dtype=np.float32)
        df[terms["termid"]] = terms["df"]
        counts = np.bincount(postings["termid"], minlength=n_terms)
        start = np.concatenate([[0], np.cumsum(counts)])
        avgdl = self.con.execute("SELECT avgdl FROM fts_main_chunks.stats").fetchone()[0] or 1.0
        return Postings(
            term_ids=dict(zip(terms["term"].tolist(), terms["termid"].tolist(), strict=True)),
            df=df,
            start=start,
            docs=row_of_doc[postings["docid"]],
            tf=postings["tf"].astype(np.float32),
            doc_len=doc_len,
            avgdl=float(avgdl),
        )

    def query_terms(self, query: str) -> list[str]:
        """The query's terms as the index has them (same tokenizer, stemmer and code terms)."""
        query = f"{query} {code_terms(query)}"
        with self.lock:
            row = self.con.execute(
                "SELECT list(DISTINCT stem(t, ?)) FROM (SELECT unnest(fts_main_chunks.tokenize(?)) AS t)",
                [self.info.get("fts", {}).get("stemmer", "porter"), query],
            ).fetchone()
        return [t for t in (row[0] or []) if t]

    def rows(self, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Full rows (without embeddings) for ``chunk_ids``."""
        if not chunk_ids:
            return {}
        with self.lock:
            cursor = self.con.execute(
                f"SELECT {RESULT_COLUMNS} FROM chunks WHERE chunk_id IN (SELECT unnest(?))",
                [chunk_ids],
            )
            names = [d[0] for d in cursor.description]
            found = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        return {row["chunk_id"]: self._with_version(row) for row in found}

    def neighbours(self, document_id: str, low: int, high: int) -> list[dict[str, Any]]:
        """Chunks of ``document_id`` with ``low <= chunk_index <= high``, in order."""
        with self.lock:
            cursor = self.con.execute(
                f"SELECT {RESULT_COLUMNS} FROM chunks WHERE document_id = ? AND chunk_index BETWEEN ? AND ? "
                "ORDER BY chunk_index",
                [document_id, low, high],
            )
            names = [d[0] for d in cursor.description]
            found = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        return [self._with_version(row) for row in found]

    def document_rows(self, document_id: str) -> list[dict[str, Any]]:
        """Every chunk of ``document_id``, in reading order."""
        return self.neighbours(document_id, 0, 2**31 - 1)

    def _with_version(self, row: dict[str, Any]) -> dict[str, Any]:
        """``row`` with its documentation version (None on a server without versions)."""
        code = self.catalog.row_versions[self.row_of[row["chunk_id"]]]
        row["version"] = self.catalog.versions[code] if code >= 0 else None
        return row

    def counts(self) -> dict[str, int]:
        """Chunk and document counts."""
        with self.lock:
            chunks, documents = self.con.execute(
                "SELECT count(*), count(DISTINCT document_id) FROM chunks"
            ).fetchone()
        return {"chunks": chunks, "documents": documents}

    def close(self) -> None:
        """Close the database."""
        self.con.close()
