"""The default embedder: all-MiniLM-L6-v2 in process with ONNX Runtime, no server."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

import numpy as np
from docserve.encoder import SentenceEncoder, default_model_dir, file_sha256, read_model_id


class LocalEmbedder:
    """Embeds with a local sentence-transformers folder (the PyPI-shipped model by default).

    The model is loaded on the first batch, so a rebuild that finds every vector in the cache
    never loads it.
    """

    def __init__(
        self, model_path: str | Path | None = None, batch_size: int = 16, threads: int | None = None
    ) -> None:
        self.model_dir = Path(model_path) if model_path else default_model_dir()
        self.batch_size = batch_size
        self.threads = threads
        self.model_id = read_model_id(self.model_dir)
        self.dimension = int(
            json.loads((self.model_dir / "config.json").read_text())["hidden_size"]
        )
        self.weights_sha256 = file_sha256(self.model_dir / "model.safetensors")
        self.cache_key = f"local:{self.model_id}:{self.weights_sha256[:16]}"

    @cached_property
    def encoder(self) -> SentenceEncoder:
        """The ONNX Runtime session, created on first use."""
        return SentenceEncoder(self.model_dir, threads=self.threads)

    def check(self) -> None:
        """The model is in process: nothing to check."""

    def stop(self) -> None:
        """Nothing to release: the model lives as long as the object."""

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (mean pooling, L2-normalised)."""
        return self.encoder.embed(texts, batch_size=self.batch_size)
