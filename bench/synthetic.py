"""Synthetic chunks shaped like real ones, grown from the chunks of real built servers.

Texts: each synthetic chunk takes a real chunk as its template, keeps its length and replaces
about a third of its words by words drawn from the pool's own word frequencies, and 2% by rare
identifiers drawn from a Zipf law over a large space, so the vocabulary keeps growing with the
corpus as real vocabularies do (Heaps' law) and common terms stay common. Documents hold ten
chunks under paths spread over folders. Vectors: the template's real MiniLM vector plus a real
vector of another chunk (weight 0.35) and Gaussian noise (relative norm about 0.35), normalized:
they keep the real vectors' anisotropy and cluster structure without being near-duplicates.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

CHUNKS_PER_DOCUMENT = 10
REPLACED = 0.33
RARE = 0.02
RARE_SPACE = 5_000_000
MIX = 0.35
NOISE = 0.018  # per dimension; a unit 384-d vector has about 0.051


@dataclass
class Pool:
    """Real chunks: their words (as vocabulary ids), titles, headings and vectors."""

    words: list[np.ndarray]
    vocabulary: np.ndarray  # id -> word (object array)
    cumulative: np.ndarray  # id -> cumulative word frequency (to draw words by frequency)
    titles: list[str]
    headings: list[list[str]]
    vectors: np.ndarray
    build_info: dict[str, object]


def read_pool(databases: list[Path]) -> Pool:
    """The chunks of ``databases`` (built servers with the same model)."""
    texts, titles, headings, vectors = [], [], [], []
    info: dict[str, object] = {}
    for path in databases:
        con = duckdb.connect(str(path), read_only=True)
        rows = con.execute(
            "SELECT content, coalesce(title, ''), coalesce(section_hierarchy, []), embedding "
            "FROM chunks"
        ).fetchall()
        info = info or {k: json.loads(v) for k, v in con.execute("FROM build_info").fetchall()}
        con.close()
        for content, title, hierarchy, vector in rows:
            texts.append(content.split())
            titles.append(title)
            headings.append(list(hierarchy))
            vectors.append(vector)
    counts = Counter(word for words in texts for word in words)
    vocabulary = np.array(list(counts), dtype=object)
    ids = {word: i for i, word in enumerate(vocabulary)}
    frequency = np.cumsum([counts[w] for w in vocabulary], dtype=np.float64)
    return Pool(
        words=[np.array([ids[w] for w in words], dtype=np.int32) for words in texts],
        vocabulary=vocabulary,
        cumulative=frequency / frequency[-1],
        titles=titles,
        headings=headings,
        vectors=np.asarray(vectors, dtype=np.float32),
        build_info=info,
    )


def synthetic_batches(
    pool: Pool, total: int, batch: int = 20_000, seed: int = 0
) -> Iterator[pa.Table]:
    """``total`` synthetic chunks as Arrow tables of the ``chunks`` schema."""
    rng = np.random.default_rng(seed)
    dimension = pool.vectors.shape[1]
    for first in range(0, total, batch):
        n = min(batch, total - first)
        template = rng.integers(0, len(pool.words), n)
        other = rng.integers(0, len(pool.words), n)
        vectors = (
            pool.vectors[template]
            + MIX * pool.vectors[other]
            + rng.normal(0, NOISE, (n, dimension)).astype(np.float32)
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        contents = _mutate(pool, template, rng)
        rows = np.arange(first, first + n)
        documents = rows // CHUNKS_PER_DOCUMENT
        paths = [f"area-{d % 37}/topic-{(d // 37) % 211}/page-{d}.md" for d in documents.tolist()]
        yield pa.table(
            {
                "chunk_id": [f"c{r}" for r in rows.tolist()],
                "document_id": [f"d{d}" for d in documents.tolist()],
                "path": paths,
                "title": [
                    f"{pool.titles[t]} {d}" for t, d in zip(template, documents, strict=True)
                ],
                "section_hierarchy": [pool.headings[t] for t in template],
                "section_url": [None] * n,
                "url": [f"https://docs.example.org/{p}" for p in paths],
                "content": contents,
                "token_count": [int(len(c) / 3.7) for c in contents],
                "has_code": [False] * n,
                "page": pa.array([None] * n, pa.int32()),
                "chunk_index": (rows % CHUNKS_PER_DOCUMENT).astype(np.int32),
                "content_hash": [f"h{r}" for r in rows.tolist()],
                "embedding": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.reshape(-1)), dimension
                ),
                "version": pa.array([None] * n, pa.string()),
            }
        )


def _mutate(pool: Pool, templates: np.ndarray, rng: np.random.Generator) -> list[str]:
    """The templates' words with some replaced by common and rare words, one text each."""
    words = [pool.words[t] for t in templates.tolist()]
    ends = np.cumsum([len(w) for w in words])
    out = pool.vocabulary[np.concatenate(words)]
    draw = rng.random(len(out))
    common = draw < REPLACED
    drawn = np.searchsorted(pool.cumulative, rng.random(int(common.sum())))
    out[common] = pool.vocabulary[np.minimum(drawn, len(pool.vocabulary) - 1)]
    rare = draw > 1 - RARE
    out[rare] = [f"id{z % RARE_SPACE}" for z in rng.zipf(1.2, int(rare.sum())).tolist()]
    return [" ".join(part) for part in np.split(out, ends[:-1])]


def write_parquet(pool: Pool, total: int, target: Path, seed: int = 0) -> Path:
    """``total`` synthetic chunks written to the Parquet file ``target`` (the build's
    consolidated form)."""
    import pyarrow.parquet as pq

    writer = None
    try:
        for table in synthetic_batches(pool, total, seed=seed):
            if writer is None:
                writer = pq.ParquetWriter(target, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return target
