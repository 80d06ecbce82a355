"""Embeddings from OpenAI-compatible ``/v1/embeddings`` endpoints (MAX, vLLM, infinity, Ollama).

One endpoint (``base_url``) or a fleet serving the same model (``base_urls``). Texts go out in
requests of ``batch_size`` with ``concurrency`` requests in flight, each to the least busy
endpoint that is up. A request that fails (no connection, a timeout, a retryable HTTP status)
hands its batch to another endpoint, and the endpoint that failed rests for an exponential
back-off before it gets work again; a batch is given up after ``retries + 1`` attempts per
endpoint, and then the stage fails. Before the stage every endpoint is health-checked (and
endpoints of a fleet must agree on a test vector); ``auto_start`` starts a single server.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from docbuild.config import OpenAIConfig
from docbuild.embedding import EmbeddingError, normalize

RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}
HEALTH_TEXT = "health check"
AGREEMENT = 0.99
"""Least cosine between two endpoints' vectors of :data:`HEALTH_TEXT`: below, different models."""
MAX_BACKOFF = 30.0


class RequestFailed(Exception):
    """One request got no usable answer; the same batch may succeed elsewhere or later."""

    def __init__(self, detail: str, reason: str, connect_failed: bool) -> None:
        super().__init__(detail)
        self.detail = detail  # for the error message
        self.reason = reason  # short, for the summary: "connection refused", "HTTP 503"
        self.connect_failed = connect_failed


def backoff(streak: int) -> float:
    """Seconds an endpoint rests after ``streak`` failures in a row: 0.5, 1, 2, ... 30."""
    return min(MAX_BACKOFF, 0.5 * 2 ** (streak - 1))


def short_reason(exc: httpx.HTTPError) -> str:
    """What went wrong with a request, in a few words."""
    if isinstance(exc, httpx.ConnectError):
        return "connection refused" if "refused" in str(exc).lower() else "cannot connect"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        return "connection dropped"
    return type(exc).__name__


@dataclass
class Endpoint:
    """One server of the fleet, and what this build saw of it."""

    base_url: str
    verified: bool  # known to serve the fleet's model (a lone endpoint has nothing to differ from)
    in_flight: int = 0
    sent: int = 0  # requests dispatched to it
    batches: int = 0  # batches it embedded
    failures: Counter[str] = field(default_factory=Counter)  # short reason → failed requests
    streak: int = 0  # failures in a row (requests in flight together count once)
    failed_at: float = -math.inf
    up_at: float = 0.0  # resting until then (time.monotonic)

    @property
    def url(self) -> str:
        """Where its embeddings are requested."""
        return f"{self.base_url}/embeddings"

    def failed(self, reason: str, started: float, now: float) -> None:
        """Count a failed request; rest unless the request was in flight at the last failure."""
        self.failures[reason] += 1
        if started >= self.failed_at:
            self.streak += 1
            self.failed_at = now
            self.up_at = now + backoff(self.streak)

    def succeeded(self) -> None:
        """Count an embedded batch; the next failure rests it for the shortest back-off again."""
        self.batches += 1
        self.streak = 0

    def note(self, fleet: bool) -> str | None:
        """The summary line about its failures (None when it never failed)."""
        count = sum(self.failures.values())
        if not count:
            return None
        reasons = ", ".join(
            reason if len(self.failures) == 1 else f"{reason} {n}"
            for reason, n in self.failures.most_common()
        )
        fate = "its batches went to the others" if fleet else "its batches were retried"
        return (
            f"endpoint {self.base_url} failed {count} time{'s' * (count != 1)} ({reasons}); {fate}"
        )


@dataclass
class Batch:
    """Consecutive texts sent in one request, and how its attempts went."""

    start: int
    texts: list[str]
    attempts: int = 0
    errors: dict[str, str] = field(default_factory=dict)  # endpoint URL → its last error


@dataclass
class Flight:
    """A request in flight: its batch, where it went, and when it was sent."""

    batch: Batch
    endpoint: Endpoint
    started: float


class OpenAIEmbedder:
    """Client of one or several OpenAI-compatible embeddings endpoints serving one model."""

    def __init__(self, config: OpenAIConfig, log_dir: Path | None = None) -> None:
        self.config = config
        urls = config.urls()
        self.endpoints = [Endpoint(url, verified=len(urls) == 1) for url in urls]
        self.concurrency = config.in_flight()
        self.attempts = (config.retries + 1) * len(urls)  # per batch
        self.model_id = config.model
        self.cache_key = f"openai:{config.model}"  # not the URL: a moved server keeps its cache
        self.dimension = 0  # learned from the health check
        self.precision: str | None = None
        self.batch_size = config.batch_size
        self.max_tokens: int | None = None
        self.weights_sha256: str | None = None
        self.encoder_sha256: str | None = None
        self.streams = True
        self.reference: tuple[str, np.ndarray] | None = None  # who set it, its HEALTH_TEXT vector
        self.lock = threading.Lock()
        self.log_dir = log_dir
        self.process: subprocess.Popen[bytes] | None = None
        api_key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=self.concurrency)
        self.client = httpx.Client(timeout=config.timeout, headers=headers, limits=limits)

    def _where(self, endpoint: Endpoint) -> str:
        return f"embedding endpoint {endpoint.url} (model {self.config.model!r})"

    def _post(self, endpoint: Endpoint, texts: list[str]) -> np.ndarray:
        """One request; :class:`RequestFailed` if another attempt may succeed."""
        try:
            response = self.client.post(
                endpoint.url, json={"model": self.config.model, "input": texts}
            )
        except httpx.HTTPError as exc:
            raise RequestFailed(
                str(exc) or type(exc).__name__,
                short_reason(exc),
                connect_failed=isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout),
            ) from None
        status = response.status_code
        if status in RETRYABLE_STATUS:
            raise RequestFailed(f"HTTP {status}: {response.text[:200]}", f"HTTP {status}", False)
        if status != 200:
            raise EmbeddingError(
                f"{self._where(endpoint)} answered HTTP {status}: {response.text[:300]}"
            )
        return self._parse(endpoint, response, len(texts))

    def _parse(self, endpoint: Endpoint, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            data = sorted(response.json()["data"], key=lambda item: item.get("index", 0))
            matrix = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(
                f"{self._where(endpoint)} returned an unexpected body: {exc}"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != expected:
            raise EmbeddingError(
                f"{self._where(endpoint)} returned {matrix.shape[0]} vectors for {expected} texts"
            )
        with self.lock:
            if self.dimension and matrix.shape[1] != self.dimension:
                raise EmbeddingError(
                    f"{self._where(endpoint)} changed dimension {self.dimension} → {matrix.shape[1]}"
                )
            self.dimension = matrix.shape[1]
        return normalize(matrix)

    def _agree(self, endpoint: Endpoint, vector: np.ndarray) -> None:
        """Refuse ``endpoint`` unless its vector of :data:`HEALTH_TEXT` agrees with the fleet's
        (the first endpoint's that answered)."""
        with self.lock:
            self.reference = self.reference or (endpoint.base_url, vector)
            first, reference = self.reference
        cosine = float(vector @ reference)
        if cosine < AGREEMENT:
            raise EmbeddingError(
                f"{self._where(endpoint)} does not serve the same model as {first} (cosine "
                f"{cosine:.3f} on a test text): every URL in base_urls must serve "
                f"{self.config.model!r}"
            )
        endpoint.verified = True

    def _embed_on(self, endpoint: Endpoint, texts: list[str]) -> np.ndarray:
        if not endpoint.verified:
            self._agree(endpoint, self._post(endpoint, [HEALTH_TEXT])[0])
        return self._post(endpoint, texts)

    def _health(self, endpoint: Endpoint) -> np.ndarray | RequestFailed:
        """The endpoint's vector of :data:`HEALTH_TEXT`, or why it did not answer."""
        try:
            return self._post(endpoint, [HEALTH_TEXT])[0]
        except RequestFailed as exc:
            return exc

    def check(self) -> None:
        """Embed one short text on every endpoint; start the server first when ``auto_start``
        allows it (one endpoint only).

        Endpoints of a fleet that do not answer rest and are tried again later (the summary names
        them); the stage fails only when none answers. Only a refused or timed-out connection
        starts the server: a server that answers with an error (a wrong model name, still loading)
        is running already, and a second one would only fail to bind the port.
        """
        with ThreadPoolExecutor(len(self.endpoints), thread_name_prefix="health") as pool:
            outcomes = list(pool.map(self._health, self.endpoints))
        failed = []
        for endpoint, outcome in zip(self.endpoints, outcomes, strict=True):
            if isinstance(outcome, RequestFailed):
                failed.append((endpoint, outcome))
            else:  # in the order of base_urls: the first that answered sets the reference
                self._agree(endpoint, outcome)
        if len(failed) < len(self.endpoints):
            now = time.monotonic()
            for endpoint, exc in failed:
                endpoint.failed(exc.reason, now, now)
            return
        if len(failed) > 1:
            details = "; ".join(f"{e.url}: {exc.detail}" for e, exc in failed)
            raise EmbeddingError(
                f"no embedding endpoint answered (model {self.config.model!r}): {details}. "
                "Are the servers running?"
            )
        endpoint, exc = failed[0]
        if exc.connect_failed and self.config.auto_start and self.config.start_command:
            self._start_server(endpoint)
            return
        hint = (
            " (set embedding.openai.auto_start to start it)"
            if exc.connect_failed and not self.config.auto_start
            else ""
        )
        raise EmbeddingError(
            f"{self._where(endpoint)} failed after 1 attempt(s): {exc.detail}. "
            f"Is the server running?{hint}"
        )

    def _start_server(self, endpoint: Endpoint) -> None:
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
                self._post(endpoint, [HEALTH_TEXT])
                return
            except RequestFailed:
                time.sleep(max(0.0, min(2.0, deadline - time.monotonic())))
            except EmbeddingError:  # it answered, but with an error no waiting will cure
                self.stop()
                raise
        self.stop()
        raise EmbeddingError(
            f"{self._where(endpoint)} not ready {self.config.start_timeout:.0f} s after starting it; see {log_path}"
        )

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; the rows come back in their order."""
        parts = dict(self.embed_stream(texts))
        if not parts:
            return np.zeros((0, self.dimension), np.float32)
        return np.vstack([parts[start] for start in sorted(parts)])

    def embed_stream(self, texts: list[str]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(offset, vectors)`` for each request's texts as it completes, in any order.

        When a batch is given up, the requests still in flight are awaited and yielded before the
        error is raised, so that the caller keeps every vector that was made.
        """
        size = max(1, self.config.batch_size)
        pending = deque(Batch(i, texts[i : i + size]) for i in range(0, len(texts), size))
        running: dict[Future[np.ndarray], Flight] = {}
        error: EmbeddingError | None = None
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="embed")
        try:
            while running or (pending and error is None):
                if error is None:
                    self._dispatch(pool, pending, running)
                if not running:  # every endpoint rests
                    time.sleep(self._rest())
                    continue
                starved = error is None and bool(pending) and len(running) < self.concurrency
                done, _ = wait(
                    running, timeout=self._rest() if starved else None, return_when=FIRST_COMPLETED
                )
                for future in done:
                    flight = running.pop(future)
                    vectors, failure = self._settle(future, flight, pending)
                    if vectors is not None:
                        yield flight.batch.start, vectors
                    error = error or failure
            if error is not None:
                raise error
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _dispatch(
        self,
        pool: ThreadPoolExecutor,
        pending: deque[Batch],
        running: dict[Future[np.ndarray], Flight],
    ) -> None:
        """Send pending batches while there is room in flight and an endpoint is up."""
        while pending and len(running) < self.concurrency:
            endpoint = self._pick()
            if endpoint is None:
                return
            batch = pending.popleft()
            endpoint.in_flight += 1
            endpoint.sent += 1
            future = pool.submit(self._embed_on, endpoint, batch.texts)
            running[future] = Flight(batch, endpoint, time.monotonic())

    def _settle(
        self, future: Future[np.ndarray], flight: Flight, pending: deque[Batch]
    ) -> tuple[np.ndarray | None, EmbeddingError | None]:
        """A finished request's vectors; or its batch back in ``pending`` for another endpoint;
        or, when the batch has had all its attempts or the answer cannot be used, the error."""
        batch, endpoint = flight.batch, flight.endpoint
        endpoint.in_flight -= 1
        try:
            vectors = future.result()
        except RequestFailed as exc:
            endpoint.failed(exc.reason, flight.started, time.monotonic())
            batch.errors[endpoint.url] = exc.detail
            batch.attempts += 1
            if batch.attempts >= self.attempts:
                return None, self._gave_up(batch)
            pending.appendleft(batch)
            return None, None
        except EmbeddingError as exc:
            return None, exc
        endpoint.succeeded()
        return vectors, None

    def _pick(self) -> Endpoint | None:
        """The least busy endpoint that is not resting (None when all rest)."""
        now = time.monotonic()
        ready = [e for e in self.endpoints if e.up_at <= now]
        return min(ready, key=lambda e: (e.in_flight, e.sent), default=None)

    def _rest(self) -> float:
        """Seconds until the next resting endpoint is up again."""
        return max(0.01, min(e.up_at for e in self.endpoints) - time.monotonic())

    def _gave_up(self, batch: Batch) -> EmbeddingError:
        if len(self.endpoints) == 1:
            (detail,) = batch.errors.values()
            return EmbeddingError(
                f"{self._where(self.endpoints[0])} failed after {batch.attempts} attempt(s): "
                f"{detail}"
            )
        details = "; ".join(f"{url}: {detail}" for url, detail in batch.errors.items())
        return EmbeddingError(
            f"embedding endpoints {', '.join(e.url for e in self.endpoints)} "
            f"(model {self.config.model!r}) failed after {batch.attempts} attempt(s) at a batch "
            f"of {len(batch.texts)} text(s): {details}"
        )

    def notes(self) -> list[str]:
        """Summary lines: each endpoint's share of a fleet's batches, and the failures seen."""
        fleet = len(self.endpoints) > 1
        lines = []
        if fleet:
            shares = ", ".join(f"{e.base_url} {e.batches}" for e in self.endpoints)
            lines.append(
                f"embedding endpoints ({self.concurrency} requests in flight), batches: {shares}"
            )
        lines += [note for e in self.endpoints if (note := e.note(fleet))]
        return lines

    def stop(self) -> None:
        """Stop a server this embedder started (servers it found running are left alone)."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None
