"""The default embedder: all-MiniLM-L6-v2 in process with ONNX Runtime, no server."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from docserve.encoder import SentenceEncoder


class LocalEmbedder:
    """Embeds with a local sentence-transformers folder (the PyPI-shipped model by default)."""

    def __init__(
        self, model_path: str | Path | None = None, batch_size: int = 16, threads: int | None = None
    ) -> None:
        self.encoder = SentenceEncoder(model_path, threads=threads)
        self.batch_size = batch_size
        self.model_dir = self.encoder.model_dir
        self.model_id = self.encoder.model_id
        self.dimension = self.encoder.dimension
        self.cache_key = f"local:{self.model_id}:{self.encoder.weights_sha256[:16]}"

    def check(self) -> None:
        """The model is loaded in process: nothing to check."""

    def stop(self) -> None:
        """Nothing to release: the model lives as long as the object."""

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (mean pooling, L2-normalised)."""
        return self.encoder.embed(texts, batch_size=self.batch_size)
