"""The chunk step for one document (its chunks and their hygiene figures), run in the build's
process or in worker processes (:func:`docbuild.workers.ordered_map`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from docbuild.chunker import Chunk, Chunker
from docbuild.config import ChunkingConfig
from docbuild.documents import Document
from docbuild.hygiene import Hygiene, measure_hygiene
from docbuild.tokens import TokenCounter
from docbuild.workers import ordered_map

_chunker: Chunker | None = None  # this process's, made by start()


def start(model_dir: str | Path | None, config: ChunkingConfig) -> None:
    """Load the tokenizer and make this process's chunker."""
    global _chunker
    _chunker = Chunker(TokenCounter(model_dir), config)


def chunk(doc: Document) -> tuple[list[Chunk], Hygiene]:
    """``doc``'s chunks and their hygiene figures."""
    assert _chunker is not None, "start() first"
    chunks = _chunker.chunk_document(doc)
    counter = _chunker.count_tokens
    assert isinstance(counter, TokenCounter)
    return chunks, measure_hygiene(chunks, counter, _chunker.config.max_tokens)


def chunk_all(
    documents: list[Document], model_dir: str | Path | None, config: ChunkingConfig
) -> Iterator[tuple[list[Chunk], Hygiene]]:
    """Each document's chunks and hygiene, in order, on every core when there are many."""
    return ordered_map(chunk, documents, start, (model_dir, config))
