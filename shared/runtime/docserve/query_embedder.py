"""Embed search queries: in process or through an OpenAI-compatible server, with an LRU cache.

An embedder that fails is marked unavailable and tried again after ``retry_after`` seconds, so
vector search comes back by itself when the embedder does.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .build_info import BuildInfo
from .config import EmbedderSettings
from .tokens import TokenCounter


class EmbedderUnavailable(RuntimeError):
    """The query could not be embedded now; the message says why."""


class Backend(Protocol):
    """Turns one text into an L2-normalized vector."""

    description: str

    def embed(self, text: str) -> np.ndarray: ...


@dataclass(frozen=True)
class Encoder:
    """The quantized encoder a database's vectors came from (``build_info``): its ONNX file in
    the server's ``runtime/`` folder and that file's SHA-256."""

    precision: str
    file: Path
    sha256: str

    @classmethod
    def of_build(cls, settings: EmbedderSettings, info: BuildInfo, runtime: Path) -> Encoder | None:
        """The encoder the build ``info`` names, for queries embedded as ``settings`` say (None:
        the fp32 encoder made from the model's weights, or an embedding server)."""
        name = info.encoder_file
        if not name or settings.provider != "local":
            return None
        return cls(str(info.precision), runtime / name, str(info.encoder_sha256))

    def check(self) -> None:
        """Raise :class:`EmbedderUnavailable` unless the file is there, byte for byte."""
        from .doctor import file_sha256

        fix = "copy the whole server folder again, or rebuild the server"
        if not self.file.is_file():
            raise EmbedderUnavailable(
                f"this database was embedded with the {self.precision} encoder {self.file.name}, "
                f"which is missing: {fix}"
            )
        found = file_sha256(self.file)
        if found != self.sha256:
            raise EmbedderUnavailable(
                f"{self.file} is not the {self.precision} encoder this database was embedded with "
                f"(SHA-256 {found[:12]}, the build's {self.sha256[:12]}): {fix}"
            )


class LocalBackend:
    """The model in process (ONNX Runtime), loaded on first use; with ``encoder``, the
    quantized encoder the database was built with (checked against its hash first)."""

    def __init__(self, model_dir: Path | None, encoder: Encoder | None = None) -> None:
        from .encoder import SentenceEncoder, default_model_dir

        folder = model_dir or default_model_dir()
        self.description = f"local model {folder}"
        if encoder is not None:
            encoder.check()
            self.description += f" ({encoder.precision}: {encoder.file.name})"
        self.encoder = SentenceEncoder(
            folder,
            threads=min(2, os.cpu_count() or 1),
            onnx_file=encoder.file if encoder else None,
        )

    def embed(self, text: str) -> np.ndarray:
        """Embed one text."""
        return self.encoder.embed([text])[0]


class OpenAIBackend:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint."""

    def __init__(self, settings: EmbedderSettings) -> None:
        import httpx

        self.url = settings.base_url.rstrip("/") + "/embeddings"
        self.model = settings.model
        self.description = f"embedding endpoint {self.url} (model {self.model!r})"
        token = os.environ.get(settings.api_key_env or "", "")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(timeout=settings.timeout, headers=headers)

    def embed(self, text: str) -> np.ndarray:
        """Embed one text (normalized here: some servers return raw vectors)."""
        import httpx

        try:
            response = self.client.post(self.url, json={"model": self.model, "input": [text]})
            response.raise_for_status()
            vector = np.asarray(response.json()["data"][0]["embedding"], dtype=np.float32)
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise EmbedderUnavailable(f"{self.description} failed: {exc}") from None
        return vector / max(float(np.linalg.norm(vector)), 1e-12)


class QueryEmbedder:
    """Cached, failure-tolerant query embedding over a backend created on first use."""

    def __init__(
        self,
        settings: EmbedderSettings,
        default_model_dir: Path | None = None,
        encoder: Encoder | None = None,
    ) -> None:
        self.settings = settings
        self.default_model_dir = default_model_dir
        self.encoder = encoder  # the database's quantized encoder (local provider only)
        self.backend: Backend | None = None
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.failed_at: float | None = None
        self.last_error: str | None = None
        self.lock = threading.Lock()

    def _make_backend(self) -> Backend:
        if self.settings.provider == "openai":
            try:
                return OpenAIBackend(self.settings)
            except Exception as exc:  # e.g. httpx missing: degrade, do not fail the search
                raise EmbedderUnavailable(f"embedding endpoint client failed: {exc}") from None
        if self.settings.provider != "local":
            raise EmbedderUnavailable(
                f"unknown embedding provider {self.settings.provider!r} (use local or openai)"
            )
        folder = (
            Path(self.settings.model_path) if self.settings.model_path else self.default_model_dir
        )
        try:
            return LocalBackend(folder if folder and folder.is_dir() else None, self.encoder)
        except EmbedderUnavailable:
            raise
        except Exception as exc:  # a missing or broken model must degrade, not crash
            raise EmbedderUnavailable(f"local model could not be loaded: {exc}") from None

    @property
    def description(self) -> str:
        """What embeds queries (for stats and notes)."""
        if self.backend is not None:
            return self.backend.description
        return f"{self.settings.provider} embedder (not loaded yet)"

    def embed(self, text: str) -> np.ndarray:
        """The query's vector; raises :class:`EmbedderUnavailable` (at most once per retry period)."""
        with self.lock:
            cached = self.cache.get(text)
            if cached is not None:
                self.cache.move_to_end(text)
                return cached
            if (
                self.failed_at is not None
                and time.monotonic() - self.failed_at < self.settings.retry_after
            ):
                raise EmbedderUnavailable(self.last_error or "embedder unavailable")
            try:
                if self.backend is None:
                    self.backend = self._make_backend()
                vector = self.backend.embed(text)
            except EmbedderUnavailable as exc:
                if self.failed_at is None:
                    print(
                        f"embedder unavailable, searching by keyword only: {exc}", file=sys.stderr
                    )
                self.failed_at, self.last_error = time.monotonic(), str(exc)
                raise
            if self.failed_at is not None:
                print(f"embedder available again: {self.description}", file=sys.stderr)
            self.failed_at = self.last_error = None
            self.cache[text] = vector
            if len(self.cache) > self.settings.cache_size:
                self.cache.popitem(last=False)
            return vector


class EmbedderPool:
    """One :class:`QueryEmbedder` per encoder, shared by every database embedded with it (the
    libraries of a hub), so each query is embedded once per encoder and each model loaded once."""

    def __init__(self) -> None:
        self.embedders: dict[tuple[str, ...], QueryEmbedder] = {}
        self.counters: dict[str, TokenCounter] = {}
        self.lock = threading.Lock()

    def token_counter(self, model_dir: Path) -> TokenCounter:
        """The tokenizer of ``model_dir`` for token budgets, one per distinct tokenizer file."""
        from .doctor import file_sha256

        key = file_sha256(model_dir / "tokenizer.json")
        with self.lock:
            if key not in self.counters:
                self.counters[key] = TokenCounter(model_dir)
            return self.counters[key]

    @staticmethod
    def key(settings: EmbedderSettings, info: BuildInfo, encoder: Encoder | None) -> tuple:
        """What makes two databases' query vectors the same: the endpoint and model for an
        embedding server; else the model's weights (their hash in ``build_info``), the encoder
        file's hash when quantized, and a configured model folder."""
        if settings.provider != "local":
            return (settings.provider, settings.base_url, settings.model)
        weights = str(info.model_sha256 or info.model_id or "")
        return ("local", weights, encoder.sha256 if encoder else "fp32", settings.model_path or "")

    def get(
        self,
        settings: EmbedderSettings,
        info: BuildInfo,
        model_dir: Path | None,
        encoder: Encoder | None,
    ) -> QueryEmbedder:
        """The shared embedder for a database built as ``info`` says (made on first request)."""
        key = self.key(settings, info, encoder)
        with self.lock:
            if key not in self.embedders:
                self.embedders[key] = QueryEmbedder(settings, model_dir, encoder)
            return self.embedders[key]
