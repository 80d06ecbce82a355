"""Embedding fleets: the ``openai`` provider over several endpoints (``base_urls``) with
``concurrency`` requests in flight.

The fleet tests run two real infinity servers on 127.0.0.1 (``tools/install_test_servers.sh``);
they skip when it is not installed. A server is "stopped part-way" by SIGKILL from a response hook
of the build's own HTTP client, right after that server has embedded its N-th batch, so the build
is sure to be in the middle of the stage. The tests before them need no infinity: the same
provider against small real HTTP servers on 127.0.0.1 backed by the local model.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml
from docbuild.build_report import BuildError, format_summary
from docbuild.config import ConfigError, OpenAIConfig, ProcessingConfig, load_processing_config
from docbuild.embedding import EmbeddingError
from docbuild.embedding.cache import EmbeddingCache
from docbuild.embedding.openai import HEALTH_TEXT, OpenAIEmbedder
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docserve.duck import connect
from endpoints import (
    MODEL_NAME,
    READY_TIMEOUT,
    REPO,
    EmbeddingEndpoint,
    ServerProcess,
    free_port,
    free_ports,
    require_infinity,
    running,
    start_infinity,
)

NAME = "fleet-docs"
TEXTS = [f"Note {i}: {topic}" for i, topic in enumerate(["vectors", "BM25", "fusion"] * 4)]


@pytest.fixture(autouse=True)
def _no_settings_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("DOCMCP_")]:
        monkeypatch.delenv(key)


def fleet(*base_urls: str, **settings: Any) -> OpenAIEmbedder:
    """The provider over ``base_urls``, serving infinity's name for the local model."""
    return OpenAIEmbedder(OpenAIConfig(base_urls=list(base_urls), model=MODEL_NAME, **settings))


def rowwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def dead_url() -> str:
    """An endpoint URL on a port nothing listens on."""
    return f"http://127.0.0.1:{free_port()}/v1"


# --- configuration -------------------------------------------------------------------------------


def test_base_urls_and_concurrency_settings():
    assert OpenAIConfig().urls() == ["http://127.0.0.1:8000/v1"]
    assert OpenAIConfig().in_flight() == 1
    two = OpenAIConfig(base_urls=["http://a:1/v1/", "http://b:2/v1"])
    assert two.urls() == ["http://a:1/v1", "http://b:2/v1"] and two.in_flight() == 2
    assert OpenAIConfig(base_url="http://b:2/v1", base_urls=two.base_urls).urls() == two.urls()
    assert OpenAIConfig(base_urls=["http://a:1/v1"], concurrency=8).in_flight() == 8

    refused = {
        "is not one of base_urls": OpenAIConfig(
            base_url="http://c:3/v1", base_urls=["http://a/v1"]
        ),
        "more than once": OpenAIConfig(base_urls=["http://a/v1", "http://a/v1/"]),
        "non-empty list": OpenAIConfig(base_urls=[]),
        "not an http": OpenAIConfig(base_urls=["127.0.0.1:8000/v1"]),
        "at least 1": OpenAIConfig(concurrency=0),
        "whole number": OpenAIConfig(concurrency="4"),  # type: ignore[arg-type]
    }
    for message, config in refused.items():
        with pytest.raises(ConfigError, match=message):
            config.check(Path("processing_config.yaml"))


def test_fleet_settings_from_the_environment_and_auto_start_needing_one_endpoint(
    project: Path, monkeypatch: pytest.MonkeyPatch
):
    (project / "corpus").mkdir()
    (project / "corpus" / "a.md").write_text("# A\n\nText.\n")
    scaffold(NAME, str(project / "corpus"), "md", root=project)
    monkeypatch.setenv("DOCMCP_EMBEDDING__OPENAI__BASE_URL", "")  # the scaffold's own base_url
    monkeypatch.setenv(
        "DOCMCP_EMBEDDING__OPENAI__BASE_URLS",
        "[http://127.0.0.1:7001/v1, http://127.0.0.1:7002/v1]",
    )
    monkeypatch.setenv("DOCMCP_EMBEDDING__OPENAI__CONCURRENCY", "3")
    openai = load_processing_config(NAME, project).embedding.openai
    assert openai.urls() == ["http://127.0.0.1:7001/v1", "http://127.0.0.1:7002/v1"]
    assert openai.in_flight() == 3

    monkeypatch.setenv("DOCMCP_EMBEDDING__OPENAI__AUTO_START", "true")
    with pytest.raises(ConfigError, match="auto_start starts one server") as caught:
        load_processing_config(NAME, project)
    assert "processing_config.yaml" in str(caught.value)


# --- real HTTP servers backed by the local model (no infinity needed) ---------------------------


class SlowEndpoint(EmbeddingEndpoint):
    """The local model over HTTP, answering each request after ``delay`` seconds, counting the
    requests it holds at once."""

    def __init__(self, embedder: Any, delay: float) -> None:
        super().__init__(embedder)
        self.delay = delay
        self.lock = threading.Lock()
        self.holding = self.most_held = 0

    def handle(self, path: str, body: Any) -> tuple[int, Any]:
        with self.lock:
            self.holding += 1
            self.most_held = max(self.most_held, self.holding)
        try:
            time.sleep(self.delay)
            return super().handle(path, body)
        finally:
            with self.lock:
                self.holding -= 1


def test_requests_are_spread_over_the_fleet_with_concurrency_in_flight(embedder):
    texts = [f"Sentence {i} about {word}." for i, word in enumerate(["search", "rank"] * 8)]
    with running(SlowEndpoint(embedder, 0.25)) as a, running(SlowEndpoint(embedder, 0.25)) as b:
        urls = [f"http://127.0.0.1:{e.port}/v1" for e in (a, b)]
        remote = fleet(*urls, concurrency=4, batch_size=2)
        remote.check()
        vectors = remote.embed_batch(texts)
    # 8 requests of 0.25 s, 4 at a time: each server holds two at once (counted by the server,
    # not timed, so a busy machine cannot fail it)
    assert a.most_held == b.most_held == 2
    assert sum(e.batches for e in remote.endpoints) == 8
    local = embedder.embed_batch(texts)
    assert rowwise_cosine(vectors, local).min() > 0.999
    assert (np.argmax(vectors @ local.T, axis=1) == np.arange(len(texts))).all()  # in order


def test_a_dead_endpoint_hands_its_batches_to_the_others_and_is_named(embedder):
    dead = dead_url()
    with running(EmbeddingEndpoint(embedder)) as live:
        remote = fleet(dead, f"http://127.0.0.1:{live.port}/v1", concurrency=2, batch_size=3)
        vectors = remote.embed_batch(TEXTS)  # no health check first: the dead one gets a batch
        remote.check()  # and one endpoint answering is enough to start
    assert rowwise_cosine(vectors, embedder.embed_batch(TEXTS)).min() > 0.999
    notes = remote.notes()
    assert notes[0].startswith("embedding endpoints (2 requests in flight), batches: ")
    assert f"{dead} 0" in notes[0]
    assert notes[1].startswith(f"endpoint {dead} failed ")
    assert notes[1].endswith("(connection refused); its batches went to the others")


def test_every_endpoint_down_fails_naming_each_within_bounded_retries():
    urls = [dead_url(), dead_url()]
    remote = fleet(*urls, retries=1, timeout=5)
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as caught:
        remote.embed_batch(["hello"])
    assert time.monotonic() - start < 5  # rests of 0.5 s, then 1 s, per endpoint
    message = str(caught.value)
    assert "failed after 4 attempt(s)" in message and f"'{MODEL_NAME}'" in message
    assert all(f"{url}/embeddings: " in message for url in urls)
    assert "Connection refused" in message
    with pytest.raises(EmbeddingError, match=r"no embedding endpoint answered.*running\?"):
        remote.check()


def test_endpoints_serving_different_models_are_refused(embedder):
    with running(EmbeddingEndpoint(embedder)) as server:
        same = f"http://127.0.0.1:{server.port}/v1"
        other = f"http://127.0.0.1:{server.port}/reversed/v1"  # another model, same dimension
        with pytest.raises(EmbeddingError, match="does not serve the same model") as caught:
            fleet(same, other).check()
        assert str(caught.value).startswith(f"embedding endpoint {other}/embeddings ")
        assert f"the same model as {same} " in str(caught.value)  # the first in base_urls


# --- two real infinity servers --------------------------------------------------------------------


@dataclass
class Infinity:
    """A running infinity server of the fleet, which a test may kill and restart."""

    port: int
    log_dir: Path
    server: ServerProcess | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Infinity:
        self.server = start_infinity(self.port, self.log_dir, threads=1)  # two on two cores
        return self

    def wait_ready(self) -> None:
        assert self.server is not None
        self.server.wait_ready(self.base_url, MODEL_NAME, READY_TIMEOUT)

    def alive(self) -> bool:
        return self.server is not None and self.server.process.poll() is None

    def kill(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server.stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Infinity, Infinity]]:
    """Two infinity servers (started together) serving the local model."""
    require_infinity()
    log_dir = tmp_path_factory.mktemp("fleet-infinity")
    pair = tuple(Infinity(port, log_dir).start() for port in free_ports(2))
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(Infinity.wait_ready, pair))
        yield pair
    finally:
        for server in pair:
            server.kill()


def write_corpus(source: Path) -> None:
    """Eight pages of four sections: about 40 short chunks, 20 batches of two."""
    topics = ["vectors", "keywords", "fusion", "chunking", "caching", "rollback", "HTTP", "Parquet"]
    for f, topic in enumerate(topics):
        sections = [f"# {topic.title()}\n"]
        for s in range(4):
            sections.append(
                f"## Part {s} of {topic}\n\nSection {s} explains how {topic} works in step {s}: "
                f"{topic} item {f * 10 + s} is configured, built and checked.\n"
            )
        (source / f"{topic.lower()}.md").parent.mkdir(parents=True, exist_ok=True)
        (source / f"{topic.lower()}.md").write_text("\n".join(sections))


def project_config(root: Path, *base_urls: str, **settings: Any) -> ProcessingConfig:
    """A scaffolded server under ``root`` over the corpus whose ``processing_config.yaml`` embeds
    with ``base_urls`` in batches of two."""
    (root / "servers").mkdir(parents=True)
    write_corpus(root / "corpus")
    scaffold(NAME, str(root / "corpus"), "md", root=root)
    path = root / "servers" / NAME / "config" / "processing_config.yaml"
    data = yaml.safe_load(path.read_text())
    data["embedding"]["provider"] = "openai"
    data["embedding"]["openai"].update(
        base_url=None, base_urls=list(base_urls), model=MODEL_NAME, batch_size=2, **settings
    )
    path.write_text(yaml.safe_dump(data))
    return load_processing_config(NAME, root)


def vectors_by_chunk(path: Path) -> dict[str, np.ndarray]:
    con = connect(path, read_only=True)
    try:
        rows = con.execute("SELECT chunk_id, embedding FROM chunks").fetchall()
    finally:
        con.close()
    return {chunk_id: np.asarray(vector, np.float32) for chunk_id, vector in rows}


def assert_same_vectors(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(got) == set(want)
    ids = sorted(want)
    cosines = rowwise_cosine(np.stack([got[i] for i in ids]), np.stack([want[i] for i in ids]))
    assert cosines.min() > 0.999


@pytest.fixture(scope="module")
def reference(servers, tmp_path_factory) -> dict[str, np.ndarray]:
    """Vectors of the corpus built with one endpoint (the first server), by chunk id."""
    config = project_config(tmp_path_factory.mktemp("single"), servers[0].base_url)
    Build(config).run()
    return vectors_by_chunk(config.database_path)


def kill_after(server: Infinity, batches: int, remote: OpenAIEmbedder) -> list[int]:
    """Make ``remote`` kill ``server`` as soon as the server has embedded ``batches`` batches;
    returns the count of batches it embedded, which the hook keeps up to date."""
    lock, seen = threading.Lock(), [0]
    prefix = f"{server.base_url}/embeddings"

    def hook(response: httpx.Response) -> None:
        request = response.request
        if not str(request.url).startswith(prefix) or response.status_code != 200:
            return
        if json.loads(request.content)["input"] == [HEALTH_TEXT]:
            return
        response.read()  # the batch arrives whole; the crash hits the requests after it
        with lock:
            seen[0] += 1
            if seen[0] == batches:
                server.kill()

    remote.client.event_hooks["response"] = [hook]
    return seen


def texts_sent(remote: OpenAIEmbedder) -> Callable[[], int]:
    """Count the texts ``remote`` sends to embed (health checks left out)."""
    sent = [0]

    def hook(request: httpx.Request) -> None:
        texts = json.loads(request.content)["input"]
        if texts != [HEALTH_TEXT]:
            sent[0] += len(texts)

    remote.client.event_hooks["request"] = [hook]
    return lambda: sent[0]


def test_fleet_build_matches_a_single_endpoint_build(servers, reference, tmp_path):
    a, b = servers
    config = project_config(tmp_path, a.base_url, b.base_url, concurrency=3)
    report = Build(config).run()
    assert report.embedded == report.chunks >= 30
    assert_same_vectors(vectors_by_chunk(config.database_path), reference)
    shares = report.embedding_notes[0]
    assert shares.startswith("embedding endpoints (3 requests in flight), batches: ")
    counts = [int(part.rsplit(" ", 1)[1]) for part in shares.split(": ", 1)[1].split(", ")]
    assert sum(counts) == (report.chunks + 1 + 1) // 2 and min(counts) > 0  # the probe too
    assert len(report.embedding_notes) == 1  # no failures
    assert shares in format_summary(report)

    remote = fleet(a.base_url, b.base_url, concurrency=4, batch_size=3)
    single = fleet(a.base_url)
    texts = [*TEXTS, *(f"{t} (again, differently)" for t in TEXTS)]
    vectors, one = remote.embed_batch(texts), single.embed_batch(texts)
    assert rowwise_cosine(vectors, one).min() > 0.999
    assert (np.argmax(vectors @ one.T, axis=1) == np.arange(len(texts))).all()  # in order


def test_an_endpoint_stopped_part_way_hands_its_batches_to_the_other(servers, reference, tmp_path):
    a, b = servers
    config = project_config(tmp_path, a.base_url, b.base_url, concurrency=3)
    remote = OpenAIEmbedder(config.embedding.openai)
    b_batches = kill_after(b, 3, remote)
    report = Build(config, remote).run()
    assert not b.alive() and b_batches[0] == 3
    assert report.embedded == report.chunks
    assert_same_vectors(vectors_by_chunk(config.database_path), reference)
    summary = format_summary(report)
    failed = next(line for line in report.embedding_notes if line.startswith("endpoint"))
    assert failed.startswith(f"endpoint {b.base_url} failed ")
    assert failed.endswith("; its batches went to the others") and failed in summary
    assert f"{b.base_url} 3" in report.embedding_notes[0]  # the three it embedded before dying


def test_every_endpoint_stopped_fails_the_stage_and_a_rerun_resumes_from_the_cache(
    servers, reference, tmp_path
):
    a, b = servers
    b.kill()  # already dead when the test before it ran
    config = project_config(tmp_path, a.base_url, b.base_url, concurrency=2, retries=1)

    # 1. the fleet loses its last server part-way: the stage fails, what was embedded is kept
    remote = OpenAIEmbedder(config.embedding.openai)
    kill_after(a, 4, remote)
    with pytest.raises(BuildError) as caught:
        Build(config, remote).run()
    message = str(caught.value)
    assert message.startswith("stage 'embed' failed: embedding endpoints ")
    assert f"{a.base_url}/embeddings: " in message and f"{b.base_url}/embeddings: " in message
    assert not config.database_path.exists()
    cache = EmbeddingCache(config.work_dir / "embeddings.duckdb")
    try:
        kept = cache.count(remote.cache_key)
    finally:
        cache.close()
    # the four requests a answered (the probe, alone, then three batches) and any in flight
    assert 1 + 3 * 2 <= kept < 30

    # 2. as its own process, with both stopped: exit 1, a clear error, no traceback
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(tmp_path)}
    build = subprocess.run(
        [str(REPO / ".venv" / "bin" / "docbuild"), "build", NAME],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert build.returncode == 1, build.stderr
    assert "error: stage 'embed' failed: no embedding endpoint answered" in build.stderr
    assert "Traceback" not in build.stderr and not config.database_path.exists()

    # 3. one server back: the rerun embeds only what the cache lacks
    a.start().wait_ready()
    remote = OpenAIEmbedder(config.embedding.openai)
    sent = texts_sent(remote)
    report = Build(config, remote).run()
    assert report.cached == kept - 1  # every chunk vector kept (the probe is not a chunk)
    assert report.embedded == report.chunks - report.cached
    assert sent() == report.embedded  # the probe came from the cache too
    assert_same_vectors(vectors_by_chunk(config.database_path), reference)
    assert any(line.startswith(f"endpoint {b.base_url} failed") for line in report.embedding_notes)
