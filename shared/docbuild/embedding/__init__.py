"""Embedding providers behind one small interface, and the embedding cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import numpy as np

from docbuild.config import EmbeddingConfig


class EmbeddingError(RuntimeError):
    """The embedder could not produce vectors; the message says which endpoint or model."""


class Embedder(Protocol):
    """Anything that turns texts into L2-normalized float32 vectors, declaring what it is and
    can do as attributes."""

    model_id: str
    cache_key: str  # what its vectors are cached under: model, weights and encoder
    dimension: int  # a server's is known after check()
    precision: str | None  # the in-process encoder's (fp32, int8); None: an embedding server
    batch_size: int  # texts per forward pass or request
    max_tokens: int | None  # the longest input it embeds whole (None: unknown)
    weights_sha256: str | None  # the model weights' hash (None: an embedding server)
    encoder_sha256: str | None  # the quantized encoder file's hash (None: not quantized)
    streams: bool  # embed_stream() has several requests in flight (see embed_parts)

    def check(self) -> None:
        """Raise :class:`EmbeddingError` if the embedder cannot serve (before a long stage)."""

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Return a float32 matrix of shape (len(texts), dimension), rows L2-normalized."""

    def embed_stream(self, texts: list[str]) -> Iterator[tuple[int, np.ndarray]]:
        """``(offset, vectors)`` for parts of ``texts`` in the order they finish (only when
        ``streams``)."""

    def notes(self) -> list[str]:
        """What the embedder has to say in the build summary (endpoints that failed, say)."""

    def stop(self) -> None:
        """Release what the embedder holds (a server it started, connections)."""


def make_embedder(config: EmbeddingConfig, log_dir: Path | None = None) -> Embedder:
    """Build the embedder the configuration names (``local`` or ``openai``)."""
    if config.provider == "local":
        from docbuild.embedding.local import LocalEmbedder

        return LocalEmbedder(
            config.model_path,
            batch_size=config.batch_size,
            threads=config.threads,
            precision=config.precision,
        )
    if config.provider == "openai":
        from docbuild.embedding.openai import OpenAIEmbedder

        return OpenAIEmbedder(config.openai, log_dir=log_dir)
    raise EmbeddingError(f"unknown embedding provider {config.provider!r}: use 'local' or 'openai'")


def embed_parts(
    embedder: Embedder, texts: list[str], group: int
) -> Iterator[tuple[int, np.ndarray]]:
    """``(offset, vectors)`` for parts of ``texts`` as they are embedded, in any order.

    An embedder with an ``embed_stream`` (the ``openai`` one: several requests in flight) yields
    each request's vectors as they arrive; any other embeds ``group`` texts at a time.
    """
    if embedder.streams:
        yield from embedder.embed_stream(texts)
        return
    for start in range(0, len(texts), group):
        yield start, embedder.embed_batch(texts[start : start + group])


def normalize(matrix: np.ndarray) -> np.ndarray:
    """L2-normalize rows (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)
