"""The default embedder: all-MiniLM-L6-v2 in process with ONNX Runtime, no server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

import numpy as np
from docserve.encoder import SentenceEncoder, default_model_dir, file_sha256, read_model_id

from docbuild.config import PRECISIONS


def model_folder(model_path: str | Path | None) -> Path:
    """The model a local embedder uses: ``model_path``, else the PyPI-shipped model."""
    return Path(model_path) if model_path else default_model_dir()


class LocalEmbedder:
    """Embeds with a local sentence-transformers folder (the PyPI-shipped model by default).

    With ``precision="int8"`` the encoder is the quantized one (:mod:`docbuild.embedding.quantize`,
    made once per machine). The model is loaded on the first batch, so a rebuild that finds every
    vector in the cache never loads it.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        batch_size: int = 16,
        threads: int | None = None,
        precision: str = "fp32",
    ) -> None:
        self.model_dir = model_folder(model_path)
        self.batch_size = batch_size
        self.threads = threads
        self.model_id = read_model_id(self.model_dir)
        self.dimension = int(
            json.loads((self.model_dir / "config.json").read_text())["hidden_size"]
        )
        self.max_tokens: int | None = json.loads(
            (self.model_dir / "sentence_bert_config.json").read_text()
        ).get("max_seq_length")
        self.streams = False
        self.weights_sha256: str | None = file_sha256(self.model_dir / "model.safetensors")
        self.cache_key = f"local:{self.model_id}:{self.weights_sha256[:16]}"
        self.precision: str | None = precision
        self.encoder_file: Path | None = None  # the int8 encoder's ONNX file
        self.encoder_sha256: str | None = None
        if precision == "int8":
            from docbuild.embedding.quantize import int8_encoder

            self.encoder_file = int8_encoder(self.model_dir)
            self.encoder_sha256 = file_sha256(self.encoder_file)
            self.cache_key += f":int8:{self.encoder_sha256[:16]}"
        elif precision != "fp32":
            raise ValueError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")

    @cached_property
    def encoder(self) -> SentenceEncoder:
        """The ONNX Runtime session, created on first use."""
        return SentenceEncoder(self.model_dir, threads=self.threads, onnx_file=self.encoder_file)

    def check(self) -> None:
        """The model is in process: nothing to check."""

    def notes(self) -> list[str]:
        """Nothing to report: the model is in process."""
        return []

    def embed_stream(self, texts: list[str]) -> Iterator[tuple[int, np.ndarray]]:
        """All of ``texts`` at once (it does not stream: :func:`embed_parts` groups them)."""
        yield 0, self.embed_batch(texts)

    def stop(self) -> None:
        """Nothing to release: the model lives as long as the object."""

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (mean pooling, L2-normalized)."""
        return self.encoder.embed(texts, batch_size=self.batch_size)
