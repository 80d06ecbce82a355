"""The runtime database, opened read-only, with what makes search fast held in memory.

The build stores the search structures in the database itself (``search_arrays``, see
``docs/search-design.md``): the vectors (float32; grouped in partitions for large databases)
and impact-ordered BM25 postings. They are read once at start, with the documents'
metadata; chunk text is read from DuckDB per result, by the ``chunk_row`` column (row number,
indexed), so nothing per chunk is kept in Python objects.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from .arrays import stored_arrays
from .build_info import BuildInfo
from .catalog import Catalog
from .codeterms import code_terms
from .config import SearchSettings
from .duck import connect
from .keywords import ARRAYS as KEYWORD_ARRAYS
from .keywords import Bm25Params, KeywordIndex, build_keyword_index
from .vectors import VectorIndex

SEARCH_INDEX_FORMAT = 1
MEMORY_LIMIT = "512MB"  # DuckDB's own buffers while the arrays are read at start (as a stream)
LOOKUP_MEMORY_LIMIT = "64MB"  # then, for the rows of answers (a search reads a few dozen)
RESULT_COLUMNS = (
    "chunk_row, chunk_id, document_id, path, title, section_hierarchy, section_url, url, "
    "content, page, chunk_index, has_code, token_count"
)


def open_read_only(path: Path) -> duckdb.DuckDBPyConnection:
    """A connection that reads ``path`` as it is now.

    The file is attached to a fresh in-memory database rather than opened directly: DuckDB shares
    one instance per path within a process, so a direct open after the build replaced the file
    could still see the old one while any connection to it lives.
    """
    con = connect(extensions=("fts",))
    # what the server reads at start it holds itself: DuckDB need not cache the file's blocks too
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    quoted = str(path).replace("'", "''")
    con.execute(f"ATTACH '{quoted}' AS served (READ_ONLY)")
    con.execute("USE served")
    return con


class DatabaseError(RuntimeError):
    """The database is missing or unreadable; the message names the file and how to build it."""


class ChunkStore:
    """Read-only access to a built server database."""

    def __init__(self, path: Path, build_hint: str, settings: SearchSettings | None = None) -> None:
        self.path = path
        settings = settings or SearchSettings()
        self.lock = threading.Lock()
        if not path.is_file():
            raise DatabaseError(f"database {path} not found: build it with `{build_hint}`")
        try:
            self.con = open_read_only(path)
            self.info = BuildInfo.read(self.con)
            index = self.info.search_index
            if index.get("format") != SEARCH_INDEX_FORMAT:
                raise ValueError(
                    "it has no search index of the format this runtime reads (built by an "
                    "older docbuild)"
                )
            self.size = int(index["rows"])
            self.vectors = VectorIndex.read(
                self.con, bool(index.get("partitions")), settings.vector_probes
            )
            self.keywords = self._keyword_index(index, settings)
            self.catalog = self._read_catalog()
            # from here on only small lookups: one thread, and few of the file's blocks kept
            self.con.execute(f"SET threads = 1; SET memory_limit = '{LOOKUP_MEMORY_LIMIT}'")
        except (duckdb.Error, ValueError, KeyError) as exc:
            raise DatabaseError(
                f"database {path} cannot be read ({exc}); rebuild it with `{build_hint}`"
            ) from None

    def _keyword_index(
        self, index: dict[str, Any], settings: SearchSettings
    ) -> KeywordIndex | None:
        """The stored BM25 postings, or postings computed now when the settings differ from the
        build's (slow on a large database: rebuild to store them); None without DuckDB's full-text
        index."""
        fts = self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'fts_main_chunks'"
        ).fetchone()[0]
        if not fts:  # queries are tokenised by the full-text index's own macros
            return None
        if not set(KEYWORD_ARRAYS) <= stored_arrays(self.con):
            raise ValueError("its keyword index is incomplete")
        wanted = Bm25Params.of(settings.bm25_k1, settings.bm25_b, settings.field_weights)
        if index.get("bm25") == wanted.to_dict():
            return KeywordIndex.read(self.con, self.size)
        print(
            f"BM25 settings {wanted.to_dict()} differ from the build's {index.get('bm25')}: "
            "computing postings at start (rebuild the server to store them)",
            file=sys.stderr,
        )
        self.con.execute("RESET memory_limit")  # a large sort: DuckDB's default limit
        try:
            return build_keyword_index(self.con, wanted)
        finally:
            self.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")

    def _read_catalog(self) -> Catalog:
        """Documents (contiguous rows, first row and count), versions and sections."""
        columns = {
            name
            for (name,) in self.con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'served' "
                "AND table_name = 'chunks'"
            ).fetchall()
        }
        version = "any_value(version)" if "version" in columns else "NULL"
        documents = self.con.execute(
            "SELECT document_id, any_value(path) AS path, coalesce(any_value(title), '') AS title, "
            f"coalesce(any_value(url), '') AS url, coalesce({version}, '') AS version, "
            "min(chunk_row) AS first, count(*) AS chunks, max(chunk_row) AS last, "
            "count(DISTINCT coalesce(section_hierarchy, [])) AS sections "
            "FROM chunks GROUP BY document_id ORDER BY first"
        ).fetchnumpy()
        if np.any(documents["last"] - documents["first"] + 1 != documents["chunks"]):
            raise ValueError("a document's chunks are not contiguous rows")
        versions = self.info.version_labels or sorted({v for v in documents["version"] if v})
        default = self.info.default_version or (versions[-1] if versions else None)
        return Catalog(documents, self.size, versions, default, self._breadcrumbs)

    def _breadcrumbs(self) -> list[tuple[tuple[str, ...], np.ndarray]]:
        """Each distinct (title, heading…) breadcrumb and its rows (for section filters)."""
        with self.lock:
            # a scan of every row: the limits of the start
            self.con.execute(f"RESET threads; SET memory_limit = '{MEMORY_LIMIT}'")
            try:
                found = self.con.execute(
                    "SELECT coalesce(title, ''), coalesce(section_hierarchy, []), list(chunk_row) "
                    "FROM chunks GROUP BY ALL"
                ).fetchall()
            finally:
                self.con.execute(f"SET threads = 1; SET memory_limit = '{LOOKUP_MEMORY_LIMIT}'")
        return [((title, *hierarchy), np.asarray(rows)) for title, hierarchy, rows in found]

    def query_terms(self, query: str) -> list[str]:
        """The query's terms as the index has them (same tokenizer, stemmer and code terms)."""
        query = f"{query} {code_terms(query)}"
        with self.lock:
            row = self.con.execute(
                "SELECT list(DISTINCT stem(t, ?)) FROM (SELECT unnest(fts_main_chunks.tokenize(?)) AS t)",
                [self.info.fts.get("stemmer", "porter"), query],
            ).fetchone()
        return [t for t in (row[0] or []) if t]

    def rows_at(self, rows: list[int]) -> dict[int, dict[str, Any]]:
        """Full rows (without embeddings) by row number."""
        if not rows:
            return {}
        listed = ", ".join(str(int(row)) for row in rows)  # integers: safe to inline (index scan)
        return self._fetch(f"SELECT {RESULT_COLUMNS} FROM chunks WHERE chunk_row IN ({listed})")

    def sections_at(self, rows: list[int]) -> dict[int, tuple[list[str], int | None]]:
        """The breadcrumb and PDF page of each row (two small columns: cheaper than full rows)."""
        if not rows:
            return {}
        listed = ", ".join(str(int(row)) for row in rows)
        with self.lock:
            found = self.con.execute(
                f"SELECT chunk_row, section_hierarchy, page FROM chunks WHERE chunk_row IN ({listed})"
            ).fetchall()
        return {int(row): (list(hierarchy or []), page) for row, hierarchy, page in found}

    def row_of(self, chunk_id: str) -> int | None:
        """The row number of ``chunk_id`` (None when no chunk has it)."""
        with self.lock:
            found = self.con.execute(
                "SELECT chunk_row FROM chunks WHERE chunk_id = ?", [chunk_id]
            ).fetchone()
        return None if found is None else int(found[0])

    def neighbours(self, row: int, before: int, after: int) -> list[dict[str, Any]]:
        """Chunks from ``before`` rows before ``row`` to ``after`` after it, within its document,
        in order."""
        document = self.catalog.documents[int(self.catalog.doc_of_row[row])]
        low = max(document.first, row - before)
        high = min(document.first + document.chunks - 1, row + after)
        found = self.rows_at(list(range(low, high + 1)))
        return [found[r] for r in range(low, high + 1) if r in found]

    def document_rows(self, document_id: str) -> list[dict[str, Any]]:
        """Every chunk of ``document_id``, in reading order."""
        document = self.catalog.by_id(document_id)
        first = document.first
        return self.neighbours(first, 0, document.chunks - 1)

    def _fetch(self, sql: str) -> dict[int, dict[str, Any]]:
        """Rows of ``sql`` (selecting ``chunk_row`` first) by row number, with their version."""
        with self.lock:
            cursor = self.con.execute(sql)
            names = [d[0] for d in cursor.description][1:]
            found = cursor.fetchall()
        out = {}
        for number, *values in found:
            row = dict(zip(names, values, strict=True))
            code = self.catalog.row_versions[number]
            row["version"] = self.catalog.versions[code] if code >= 0 else None
            out[number] = row
        return out

    def counts(self) -> dict[str, int]:
        """Chunk and document counts."""
        return {"chunks": self.size, "documents": len(self.catalog.documents)}

    def close(self) -> None:
        """Close the database."""
        self.con.close()
