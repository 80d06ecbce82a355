"""Write the chunks of a build, with their embeddings, to one Parquet file (the chunk schema)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from docbuild.chunker import Chunk


def chunk_schema(dimension: int) -> pa.Schema:
    """The chunk schema of DESIGN.md, with ``embedding`` as FLOAT[dimension], the
    documentation ``version`` of each chunk and its ``code_terms`` for the full-text index."""
    return pa.schema(
        [
            ("chunk_id", pa.string()),
            ("document_id", pa.string()),
            ("path", pa.string()),
            ("version", pa.string()),  # the documentation version's label; null when unversioned
            ("title", pa.string()),
            ("section_hierarchy", pa.list_(pa.string())),
            ("section_url", pa.string()),
            ("url", pa.string()),
            ("content", pa.string()),
            ("token_count", pa.int32()),
            ("has_code", pa.bool_()),
            ("page", pa.int32()),
            ("chunk_index", pa.int32()),
            ("content_hash", pa.string()),
            ("code_terms", pa.string()),
            ("embedding", pa.list_(pa.float32(), dimension)),
        ]
    )


def chunks_table(chunks: list[Chunk], embeddings: np.ndarray) -> pa.Table:
    """An Arrow table of ``chunks`` with their embedding rows."""
    if len(chunks) != len(embeddings):
        raise ValueError(f"{len(chunks)} chunks but {len(embeddings)} embeddings")
    dimension = int(embeddings.shape[1])
    flat = pa.array(np.ascontiguousarray(embeddings, dtype=np.float32).reshape(-1))
    columns = {
        name: [getattr(c, name) for c in chunks]
        for name in chunk_schema(dimension).names
        if name != "embedding"
    }
    columns["embedding"] = pa.FixedSizeListArray.from_arrays(flat, dimension)
    return pa.table(columns, schema=chunk_schema(dimension))


def write_parquet(table: pa.Table, path: Path) -> Path:
    """Write ``table`` to ``path`` atomically (temp file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)
    return path
