"""The embed stage: a vector for every chunk, from the embedding cache or the embedder, and the
probe vector the runtime checks its own model against."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from docbuild.build_report import BuildError, BuildReport, progress
from docbuild.chunker import Chunk, text_hash
from docbuild.embedding import Embedder, embed_parts
from docbuild.embedding.cache import EmbeddingCache

EMBED_GROUP = 256  # chunks embedded between two writes to the cache (what a killed build loses);
# an embedder with requests in flight (openai) writes each request's vectors as they arrive
PROBE_TEXT = "How do I search this documentation?"
"""Embedded with every build; the runtime embeds it too to prove it uses the same model."""


@dataclass
class Embedded:
    """The chunks' vectors, row for row, and the probe text's vector."""

    vectors: np.ndarray
    probe: np.ndarray


def check_fits(max_tokens: int, embedder: Embedder) -> None:
    """Fail before embedding when chunks of ``max_tokens`` would be cut short by the model."""
    if embedder.max_tokens is not None and max_tokens > embedder.max_tokens:
        raise BuildError(
            f"chunking.max_tokens is {max_tokens}, but {embedder.model_id} embeds at most "
            f"{embedder.max_tokens} tokens: the rest of each chunk would be cut off. Set "
            f"chunking.max_tokens to {embedder.max_tokens} or less"
        )


def embed_chunks(
    chunks: list[Chunk], embedder: Embedder, cache_path: Path, report: BuildReport
) -> Embedded:
    """Vectors for every chunk: from the cache, else embedded (and cached group by group, so a
    killed build loses at most one group). Counts go into ``report``."""
    cache = EmbeddingCache(cache_path)
    try:
        texts = {c.content_hash: c.embedding_text for c in chunks}
        probe = text_hash(PROBE_TEXT)
        vectors = cache.get_many(embedder.cache_key, [*texts, probe])
        missing = sorted((h for h in texts if h not in vectors), key=lambda h: len(texts[h]))
        report.cached, report.embedded = len(texts) - len(missing), len(missing)
        lacking = set(missing)
        for version in report.versions:
            own = {c.content_hash for c in chunks if c.version == version.label}
            version.embedded = len(own & lacking)
        if probe not in vectors:  # alone, as the server embeds a query: an int8 encoder
            # scales activations per batch, so its vector for a text depends on the batch
            vectors[probe] = embedder.embed_batch([PROBE_TEXT])[0]
            cache.put_many(embedder.cache_key, [probe], vectors[probe][None, :])
        with progress(total=len(missing), desc="embed", unit="chunk") as bar:
            wanted = [texts[h] for h in missing]
            for start, matrix in embed_parts(embedder, wanted, EMBED_GROUP):
                done = missing[start : start + len(matrix)]
                cache.put_many(embedder.cache_key, done, matrix)
                vectors.update(zip(done, matrix, strict=True))
                bar.update(len(done))
    finally:
        cache.close()
    report.embedding_notes = embedder.notes()
    matrix = np.stack([vectors[c.content_hash] for c in chunks]).astype(np.float32)
    return Embedded(matrix, vectors[probe])
