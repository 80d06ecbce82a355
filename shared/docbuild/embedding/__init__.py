"""Embedding providers behind one small interface, and the embedding cache."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from docbuild.config import EmbeddingConfig


class EmbeddingError(RuntimeError):
    """The embedder could not produce vectors; the message says which endpoint or model."""


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors."""

    model_id: str
    cache_key: str
    dimension: int

    def check(self) -> None:
        """Raise :class:`EmbeddingError` if the embedder cannot serve (before a long stage)."""

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Return a float32 matrix of shape (len(texts), dimension), rows L2-normalised."""

    def stop(self) -> None:
        """Release what the embedder holds (a server it started, connections)."""


def make_embedder(config: EmbeddingConfig, log_dir: Path | None = None) -> Embedder:
    """Build the embedder the configuration names (``local`` or ``openai``)."""
    if config.provider == "local":
        from docbuild.embedding.local import LocalEmbedder

        return LocalEmbedder(
            config.model_path, batch_size=config.batch_size, threads=config.threads
        )
    if config.provider == "openai":
        from docbuild.embedding.openai import OpenAIEmbedder

        return OpenAIEmbedder(config.openai, log_dir=log_dir)
    raise EmbeddingError(f"unknown embedding provider {config.provider!r}: use 'local' or 'openai'")


def normalise(matrix: np.ndarray) -> np.ndarray:
    """L2-normalise rows (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)
