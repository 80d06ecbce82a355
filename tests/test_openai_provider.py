"""The ``openai`` embedding provider against a real OpenAI-compatible server (infinity-emb).

The server runs from ``.venv-infinity`` (``tools/install_test_servers.sh`` installs it) on
127.0.0.1, serving the model folder the local embedder uses, offline. Tests that need it skip
when it is not installed; the failure-path tests need no server and always run.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from docbuild.build_report import BuildReport
from docbuild.config import OpenAIConfig, ProcessingConfig, load_processing_config
from docbuild.embedding import EmbeddingError
from docbuild.embedding import openai as openai_module
from docbuild.embedding.openai import OpenAIEmbedder
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docserve.duck import connect
from endpoints import MODEL_DIR as MODEL_DIR  # re-exported: test_max_provider imports it here
from endpoints import (
    MODEL_NAME,
    OFFLINE_ENV,
    READY_TIMEOUT,
    ServerProcess,
    free_port,
    infinity_command,
    require_infinity,
)
from endpoints import REPO as REPO  # re-exported, as MODEL_DIR
from endpoints import free_ports as free_ports  # re-exported, as MODEL_DIR

DECOY_NAME = "decoy"
TEXTS = [
    "How do I create an HNSW index in DuckDB?",
    "array_cosine_distance(a, b) returns one minus the cosine similarity.",
    "```python\ndef add(a, b):\n    return a + b\n```",
    "Die Einbettung wird L2-normaliziert, damit das Skalarprodukt der Kosinusähnlichkeit entspricht.",
    "日本語のテキストも埋め込めます。",
    "x",
    "   leading and trailing whitespace   ",
    "SELECT * FROM chunks WHERE a < b AND c > d;",
    "Emoji 🚀 and symbols ©®™ — “curly quotes”.",
    # far beyond 256 wordpieces: both sides must truncate the same way
    " ".join(f"Sentence {i} covers vector search, BM25 and rank fusion." for i in range(80)),
]


@pytest.fixture(scope="module")
def infinity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a running infinity server with two names for the same model folder.

    The second name (a decoy) makes infinity check the name in each request: with a single
    model it would answer to any name, and the wrong-name test would prove nothing.
    """
    require_infinity()
    port = free_port()
    log_path = tmp_path_factory.mktemp("infinity") / "infinity.log"
    server = ServerProcess(infinity_command(port, (MODEL_NAME, DECOY_NAME)), log_path, OFFLINE_ENV)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        seconds = server.wait_ready(base_url, MODEL_NAME, READY_TIMEOUT)
        print(f"infinity ready in {seconds:.1f} s")
        yield base_url
    finally:
        server.stop()


def client(base_url: str, **overrides: object) -> OpenAIEmbedder:
    return OpenAIEmbedder(OpenAIConfig(base_url=base_url, model=MODEL_NAME, **overrides))


def rowwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def test_vectors_agree_with_the_local_embedder(infinity, embedder):
    remote = client(infinity)
    try:
        remote.check()
        vectors = remote.embed_batch(TEXTS)
    finally:
        remote.stop()
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    assert remote.dimension == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = rowwise_cosine(vectors, embedder.embed_batch(TEXTS))
    assert cosines.min() >= 0.999, dict(zip(TEXTS, cosines.round(5).tolist(), strict=True))


def test_more_texts_than_batch_size_come_back_in_order(infinity, embedder):
    texts = [f"Note {i}: {topic}" for i, topic in enumerate([*TEXTS, "rate limits", "ducks"])]
    remote = client(infinity, batch_size=5)
    requests: list[int] = []
    remote.client.event_hooks["request"] = [
        lambda request: requests.append(len(json.loads(request.content)["input"]))
    ]
    try:
        vectors = remote.embed_batch(texts)
    finally:
        remote.stop()
    assert requests == [5, 5, 2]
    local = embedder.embed_batch(texts)
    assert rowwise_cosine(vectors, local).min() >= 0.999
    assert (np.argmax(vectors @ local.T, axis=1) == np.arange(len(texts))).all()


CORPUS = {
    "guide.md": "# Vector guide\n\nIntro to vectors.\n\n## Cosine distance\n\n"
    "Use `array_cosine_distance` to compare embeddings.\n\n```sql\nSELECT a < b;\n```\n",
    "limits.md": "# Rate limits\n\nThe API allows 60 requests a minute per key. "
    "Retries back off exponentially.\n",
    "install.md": "# Installation\n\n"
    + " ".join(f"Step {i}: run installer {i}, then check version {i}." for i in range(120)),
}


def build(root: Path, embedder=None) -> tuple[ProcessingConfig, BuildReport]:
    """Scaffold and build a small corpus under ``root`` (configured embedder unless given)."""
    (root / "servers").mkdir(parents=True)
    source = root / "corpus"
    for name, text in CORPUS.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    scaffold("tiny-docs", str(source), "auto", "https://docs.example.org", root=root)
    config = load_processing_config("tiny-docs", root)
    return config, Build(config, embedder).run()


def read_database(path: Path) -> tuple[dict[str, object], dict[str, np.ndarray]]:
    con = connect(path, read_only=True)
    try:
        info = {
            k: json.loads(v) for k, v in con.execute("SELECT key, value FROM build_info").fetchall()
        }
        rows = con.execute("SELECT chunk_id, embedding FROM chunks").fetchall()
    finally:
        con.close()
    return info, {chunk_id: np.asarray(vector, np.float32) for chunk_id, vector in rows}


def test_full_build_with_the_openai_provider_matches_a_local_build(
    infinity, tmp_path, monkeypatch, embedder
):
    local_config, _ = build(tmp_path / "local", embedder)
    monkeypatch.setenv("DOCMCP_EMBEDDING__PROVIDER", "openai")
    monkeypatch.setenv("DOCMCP_EMBEDDING__OPENAI__BASE_URL", infinity)
    monkeypatch.setenv("DOCMCP_EMBEDDING__OPENAI__MODEL", MODEL_NAME)
    monkeypatch.setenv("DOCMCP_EMBEDDING__OPENAI__BATCH_SIZE", "3")
    remote_config, report = build(tmp_path / "remote")
    assert remote_config.embedding.provider == "openai"
    assert report.embedded == report.chunks >= 4

    local_info, local_vectors = read_database(local_config.database_path)
    info, vectors = read_database(remote_config.database_path)
    assert local_info["embedding_provider"] == "local"
    assert info["embedding_provider"] == "openai"
    assert info["model_id"] == MODEL_NAME and info["dimension"] == 384
    assert info["model_cache_key"] == f"openai:{MODEL_NAME}"
    assert set(vectors) == set(local_vectors)
    ids = sorted(vectors)
    cosines = rowwise_cosine(
        np.stack([vectors[i] for i in ids]), np.stack([local_vectors[i] for i in ids])
    )
    assert cosines.min() >= 0.999


def test_unreachable_url_fails_naming_url_and_model_within_bounded_retries():
    url = f"http://127.0.0.1:{free_port()}/v1"
    remote = OpenAIEmbedder(OpenAIConfig(base_url=url, model="some-model", retries=2, timeout=5))
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as caught:
        remote.embed_batch(["hello"])
    elapsed = time.monotonic() - start
    message = str(caught.value)
    assert f"{url}/embeddings" in message and "'some-model'" in message
    assert "3 attempt(s)" in message
    assert 1.0 < elapsed < 10.0  # backoff of 0.5 s + 1 s between the three attempts
    with pytest.raises(EmbeddingError, match=r"Is the server running\?.*auto_start"):
        remote.check()


def test_wrong_model_name_is_a_clear_error_and_starts_no_server(infinity, tmp_path):
    config = OpenAIConfig(base_url=infinity, model="no-such-model", retries=3)
    with pytest.raises(EmbeddingError) as caught:
        OpenAIEmbedder(config).embed_batch(["hello"])
    message = str(caught.value)
    assert "HTTP 400" in message and "no-such-model" in message and MODEL_NAME in message
    assert f"{infinity}/embeddings" in message

    # the server answered, so auto_start must not try to start another one
    config.auto_start, config.start_command = True, "false"
    remote = OpenAIEmbedder(config, log_dir=tmp_path)
    with pytest.raises(EmbeddingError, match="HTTP 400") as caught:
        remote.check()
    assert "running?" not in str(caught.value)
    assert remote.process is None and not (tmp_path / "embedding-server.log").exists()


def test_auto_start_starts_the_server_and_stop_stops_it(tmp_path, monkeypatch, embedder):
    require_infinity()
    for key, value in OFFLINE_ENV.items():
        monkeypatch.setenv(key, value)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    config = OpenAIConfig(
        base_url=base_url,
        model=MODEL_NAME,
        auto_start=True,
        start_command=shlex.join(infinity_command(port)),
        start_timeout=READY_TIMEOUT,
    )
    remote = OpenAIEmbedder(config, log_dir=tmp_path)
    process = None
    try:
        remote.check()
        process = remote.process
        assert process is not None and process.poll() is None
        vectors = remote.embed_batch(TEXTS[:4])
        assert rowwise_cosine(vectors, embedder.embed_batch(TEXTS[:4])).min() >= 0.999
    finally:
        remote.stop()
    assert process is not None and process.poll() is not None
    assert remote.process is None
    assert "Uvicorn running" in (tmp_path / "embedding-server.log").read_text()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base_url}/health", timeout=5)


def test_auto_start_command_that_exits_fails_fast_pointing_to_the_log(tmp_path):
    config = OpenAIConfig(
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        auto_start=True,
        start_command="false",
        start_timeout=120,
    )
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as caught:
        OpenAIEmbedder(config, log_dir=tmp_path).check()
    assert time.monotonic() - start < 10
    message = str(caught.value)
    assert "exited with code 1" in message and str(tmp_path / "embedding-server.log") in message


def test_auto_start_that_never_becomes_healthy_fails_within_the_timeout(tmp_path, monkeypatch):
    started: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(openai_module.subprocess, "Popen", recording_popen)
    config = OpenAIConfig(
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        auto_start=True,
        start_command="sleep 60",
        start_timeout=3,
    )
    start = time.monotonic()
    with pytest.raises(EmbeddingError) as caught:
        OpenAIEmbedder(config, log_dir=tmp_path).check()
    elapsed = time.monotonic() - start
    assert 3 <= elapsed < 8
    message = str(caught.value)
    assert "not ready 3 s after starting it" in message
    assert str(tmp_path / "embedding-server.log") in message
    assert len(started) == 1 and started[0].poll() is not None  # the command was stopped
