"""A persistent embedding cache keyed by (embedder cache key, text hash).

An unchanged rebuild embeds nothing; vectors are written as each batch finishes, so a build
that is interrupted resumes where it stopped. The table is append-only, with each vector stored as
its float32 bytes and no index: a write costs the same at a million rows as at the first
(an ``INSERT OR REPLACE`` on a keyed list column slowed fourfold by 256,000 rows), and a build
reads every vector it needs in one hash join.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

TABLE = "vectors"
OLD_TABLE = "embeddings"  # the keyed FLOAT[] layout of earlier versions, moved over on opening


class EmbeddingCache:
    """Vectors by (model key, SHA-256 of the embedded text), in a DuckDB file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.con = duckdb.connect(str(path))
        self.con.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} ("
            " model VARCHAR NOT NULL, text_hash VARCHAR NOT NULL, embedding BLOB NOT NULL)"
        )
        self._move_old_table()

    def get_many(self, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
        """Return the cached vectors among ``hashes``."""
        if not hashes:
            return {}
        wanted = pa.table({"text_hash": pa.array(sorted(set(hashes)), pa.string())})
        self.con.register("wanted", wanted)
        try:
            found = self.con.execute(
                f"SELECT e.text_hash, e.embedding FROM {TABLE} e"
                " JOIN wanted w USING (text_hash) WHERE e.model = ?",
                [model],
            ).fetch_arrow_table()
        finally:
            self.con.unregister("wanted")
        if not found.num_rows:
            return {}
        # per Arrow chunk: one binary array holds at most 2 GB (1.4M vectors of 384 floats)
        parts = [_as_matrix(part) for part in found["embedding"].chunks if len(part)]
        matrix = np.concatenate(parts)
        return dict(zip(found["text_hash"].to_pylist(), matrix, strict=True))

    def put_many(self, model: str, hashes: list[str], vectors: np.ndarray) -> None:
        """Store vectors (rows of ``vectors``) for ``hashes``."""
        if not hashes:
            return
        matrix = np.ascontiguousarray(vectors, np.float32)
        table = pa.table(
            {
                "model": pa.array([model] * len(hashes), pa.string()),
                "text_hash": pa.array(hashes, pa.string()),
                "embedding": pa.array([row.tobytes() for row in matrix], pa.binary()),
            }
        )
        self.con.register("incoming", table)
        try:
            self.con.execute(f"INSERT INTO {TABLE} SELECT * FROM incoming")
        finally:
            self.con.unregister("incoming")

    def count(self, model: str | None = None) -> int:
        """Number of distinct cached texts (for ``model`` when given)."""
        where, params = ("WHERE model = ?", [model]) if model is not None else ("", [])
        return self.con.execute(
            f"SELECT count(*) FROM (SELECT DISTINCT model, text_hash FROM {TABLE} {where})",
            params,
        ).fetchone()[0]

    def close(self) -> None:
        """Close the cache file."""
        self.con.close()

    def _move_old_table(self) -> None:
        """Copy a cache written by an earlier version into the current layout, once."""
        old = self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            "AND table_name = ?",
            [OLD_TABLE],
        ).fetchone()[0]
        if not old:
            return
        models = [
            row[0] for row in self.con.execute(f"SELECT DISTINCT model FROM {OLD_TABLE}").fetchall()
        ]
        self.con.execute("BEGIN")
        for model in models:
            old_rows = self.con.execute(
                f"SELECT text_hash, embedding FROM {OLD_TABLE} WHERE model = ?", [model]
            ).fetch_arrow_table()
            lists = old_rows["embedding"].combine_chunks()
            matrix = lists.flatten().to_numpy().reshape(len(lists), -1)
            self.put_many(model, old_rows["text_hash"].to_pylist(), matrix)
        self.con.execute(f"DROP TABLE {OLD_TABLE}")
        self.con.execute("COMMIT")


def _as_matrix(blobs: pa.BinaryArray) -> np.ndarray:
    """Equal-length float32 blobs as one matrix, read straight from the Arrow buffer."""
    offsets = np.frombuffer(blobs.buffers()[1], np.int32)[
        blobs.offset : blobs.offset + len(blobs) + 1
    ]
    widths = np.diff(offsets)
    if len(widths) and (widths != widths[0]).any():
        raise ValueError("the embedding cache holds vectors of different lengths for one model")
    data = np.frombuffer(blobs.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    return data.view(np.float32).reshape(len(blobs), -1)
