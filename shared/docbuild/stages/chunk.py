"""The chunk stage: each document's chunks and their hygiene figures, made in the build's process
or in worker processes (:func:`docbuild.util.workers.ordered_map`), and cached."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from docserve.tokens import TokenCounter

from docbuild.build_report import BuildReport, progress
from docbuild.chunker import Chunk, Chunker
from docbuild.config import ChunkingConfig, ProcessingConfig
from docbuild.documents import Document
from docbuild.embedding.local import model_folder
from docbuild.util.hygiene import Hygiene, measure_hygiene
from docbuild.util.step_cache import StepCache, content_key
from docbuild.util.workers import ordered_map

_chunker: Chunker | None = None  # this process's, made by start()


def start(model_dir: Path, config: ChunkingConfig) -> None:
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
    documents: list[Document], model_dir: Path, config: ChunkingConfig
) -> Iterator[tuple[list[Chunk], Hygiene]]:
    """Each document's chunks and hygiene, in order, on every core when there are many."""
    return ordered_map(chunk, documents, start, (model_dir, config))


def chunk_documents(
    config: ProcessingConfig, documents: list[Document], report: BuildReport
) -> list[Chunk]:
    """Every document's chunks, in order; counts and hygiene go into ``report``. Chunks are
    cached by document, chunking settings and tokenizer."""
    tokenizer = model_folder(config.embedding.model_path) / "tokenizer.json"
    cache: StepCache[tuple[list[Chunk], Hygiene]] = StepCache(
        config.work_dir / "cache" / "chunks.pickle",
        [vars(config.chunking), tokenizer.read_bytes()],
    )
    chunks: list[Chunk] = []
    hygiene = Hygiene(0, 0, 0, 0, 0, config.chunking.max_tokens)
    keyed = [(content_key(doc), doc) for doc in documents]
    results = cache.get_all(keyed, lambda docs: chunk_all(docs, tokenizer.parent, config.chunking))
    counted = 0  # documents reused from the cache so far
    for doc, (found, measured) in zip(
        documents, progress(results, desc="chunk", unit="doc", total=len(documents)), strict=True
    ):
        chunks += found
        hygiene += measured
        counts = report.version(doc.version)
        if counts is not None:
            counts.documents_unchanged += cache.reused - counted
            counts.chunks += len(found)
        counted = cache.reused
    cache.save()
    report.documents_unchanged = cache.reused
    report.chunks = len(chunks)
    report.hygiene = hygiene
    return chunks
