"""A persistent embedding cache keyed by (embedder cache key, text hash).

An unchanged rebuild embeds nothing; vectors are written as each batch finishes, so a build
that is interrupted resumes where it stopped.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa


class EmbeddingCache:
    """Vectors by (model key, SHA-256 of the embedded text), in a DuckDB file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.con = duckdb.connect(str(path))
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS embeddings ("
            " model VARCHAR NOT NULL, text_hash VARCHAR NOT NULL, embedding FLOAT[] NOT NULL,"
            " PRIMARY KEY (model, text_hash))"
        )

    def get_many(self, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
        """Return the cached vectors among ``hashes``."""
        if not hashes:
            return {}
        wanted = pa.table({"text_hash": pa.array(sorted(set(hashes)), pa.string())})
        self.con.register("wanted", wanted)
        try:
            found = self.con.execute(
                "SELECT e.text_hash, e.embedding FROM embeddings e"
                " JOIN wanted w USING (text_hash) WHERE e.model = ?",
                [model],
            ).fetch_arrow_table()
        finally:
            self.con.unregister("wanted")
        if not found.num_rows:
            return {}
        # one model, one dimension: the lists flatten into one matrix (far faster than per row)
        matrix = found["embedding"].combine_chunks().flatten().to_numpy()
        matrix = matrix.astype(np.float32).reshape(found.num_rows, -1)
        return dict(zip(found["text_hash"].to_pylist(), matrix, strict=True))

    def put_many(self, model: str, hashes: list[str], vectors: np.ndarray) -> None:
        """Store vectors (rows of ``vectors``) for ``hashes``."""
        if not hashes:
            return
        table = pa.table(
            {
                "model": pa.array([model] * len(hashes), pa.string()),
                "text_hash": pa.array(hashes, pa.string()),
                "embedding": pa.array(
                    list(np.asarray(vectors, np.float32)), pa.list_(pa.float32())
                ),
            }
        )
        self.con.register("incoming", table)
        try:
            self.con.execute("INSERT OR REPLACE INTO embeddings SELECT * FROM incoming")
        finally:
            self.con.unregister("incoming")

    def count(self, model: str | None = None) -> int:
        """Number of cached vectors (for ``model`` when given)."""
        if model is None:
            return self.con.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        return self.con.execute(
            "SELECT count(*) FROM embeddings WHERE model = ?", [model]
        ).fetchone()[0]

    def close(self) -> None:
        """Close the cache file."""
        self.con.close()
