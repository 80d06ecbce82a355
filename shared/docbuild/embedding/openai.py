"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (MAX, vLLM, infinity, Ollama).

Batches, a timeout per request, retries with exponential backoff, a health check before the
stage, and optionally starting the server (``auto_start``) and waiting for it, bounded in time.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

from docbuild.config import OpenAIConfig
from docbuild.embedding import EmbeddingError, normalise

RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}


class EndpointUnavailable(EmbeddingError):
    """No usable answer after every retry: a failed connection or a retryable HTTP status."""

    def __init__(self, message: str, connect_failed: bool) -> None:
        super().__init__(message)
        self.connect_failed = connect_failed


class OpenAIEmbedder:
    """Client of an OpenAI-compatible embeddings endpoint."""

    def __init__(self, config: OpenAIConfig, log_dir: Path | None = None) -> None:
        self.config = config
        self.url = config.base_url.rstrip("/") + "/embeddings"
        self.model_id = config.model
        self.cache_key = f"openai:{config.model}"  # not the URL: a moved server keeps its cache
        self.dimension = 0
        self.log_dir = log_dir
        self.process: subprocess.Popen[bytes] | None = None
        api_key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=config.timeout, headers=headers)

    def _where(self) -> str:
        return f"embedding endpoint {self.url} (model {self.config.model!r})"

    def _request(self, texts: list[str], retries: int) -> np.ndarray:
        last: Exception | None = None
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(min(30.0, 0.5 * 2 ** (attempt - 1)))
            try:
                response = self.client.post(
                    self.url, json={"model": self.config.model, "input": texts}
                )
            except httpx.HTTPError as exc:
                last = exc
                continue
            if response.status_code in RETRYABLE_STATUS:
                last = EmbeddingError(f"HTTP {response.status_code}: {response.text[:200]}")
                continue
            if response.status_code != 200:
                raise EmbeddingError(
                    f"{self._where()} answered HTTP {response.status_code}: {response.text[:300]}"
                )
            return self._parse(response, len(texts))
        raise EndpointUnavailable(
            f"{self._where()} failed after {retries + 1} attempt(s): {last}",
            connect_failed=isinstance(last, httpx.ConnectError | httpx.ConnectTimeout),
        )

    def _parse(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            data = sorted(response.json()["data"], key=lambda item: item.get("index", 0))
            matrix = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"{self._where()} returned an unexpected body: {exc}") from None
        if matrix.ndim != 2 or matrix.shape[0] != expected:
            raise EmbeddingError(
                f"{self._where()} returned {matrix.shape[0]} vectors for {expected} texts"
            )
        if self.dimension and matrix.shape[1] != self.dimension:
            raise EmbeddingError(
                f"{self._where()} changed dimension {self.dimension} → {matrix.shape[1]}"
            )
        self.dimension = matrix.shape[1]
        return normalise(matrix)

    def check(self) -> None:
        """Embed one short text; start the server first when ``auto_start`` allows it.

        Only a refused or timed-out connection starts the server: a server that answers with an
        error (a wrong model name, still loading) is running already, and a second one would only
        fail to bind the port.
        """
        try:
            self._request(["health check"], retries=0)
            return
        except EndpointUnavailable as exc:
            if not (exc.connect_failed and self.config.auto_start and self.config.start_command):
                hint = (
                    ""
                    if self.config.auto_start or not exc.connect_failed
                    else " (set embedding.openai.auto_start to start it)"
                )
                raise EmbeddingError(f"{exc}. Is the server running?{hint}") from None
        self._start_server()

    def _start_server(self) -> None:
        command = shlex.split(self.config.start_command or "")
        log_path = (self.log_dir or Path.cwd()) / "embedding-server.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        print(f"starting embedding server: {' '.join(command)} (log: {log_path})", file=sys.stderr)
        with log_path.open("ab") as log:
            try:
                self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            except OSError as exc:
                raise EmbeddingError(
                    f"cannot start embedding server {command[0]!r}: {exc}"
                ) from None
        deadline = time.monotonic() + self.config.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EmbeddingError(
                    f"embedding server exited with code {self.process.returncode} before it was ready; see {log_path}"
                )
            try:
                self._request(["health check"], retries=0)
                return
            except EndpointUnavailable:
                time.sleep(max(0.0, min(2.0, deadline - time.monotonic())))
            except EmbeddingError:  # it answered, but with an error no waiting will cure
                self.stop()
                raise
        self.stop()
        raise EmbeddingError(
            f"{self._where()} not ready {self.config.start_timeout:.0f} s after starting it; see {log_path}"
        )

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in requests of ``batch_size``."""
        size = max(1, self.config.batch_size)
        parts = [
            self._request(texts[i : i + size], self.config.retries)
            for i in range(0, len(texts), size)
        ]
        return np.vstack(parts) if parts else np.zeros((0, self.dimension), np.float32)

    def stop(self) -> None:
        """Stop a server this embedder started (servers it found running are left alone)."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None
