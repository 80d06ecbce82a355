"""Builds that die or fail half-way: nothing embedded twice, nothing half-made served or recorded.

The builds run as real ``docbuild`` processes and are killed with SIGKILL; the failing embedder is
a real HTTP endpoint (the real model behind it) that starts answering HTTP 500 part-way through.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from docbuild.config import ProcessingConfig, load_processing_config
from docbuild.pipeline import Build
from docbuild.services.ask import ask, server_script
from docbuild.services.scaffold import scaffold
from docbuild.stages.embed import EMBED_GROUP
from docbuild.stages.snapshot import lake_location, list_snapshots
from endpoints import EmbeddingEndpoint, running

NAME = "faulty"
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "nu",
    "pe",
    "ri",
    "so",
    "ta",
    "vu",
    "xe",
    "ba",
    "do",
    "fi",
    "gu",
    "he",
    "ji",
]


def write_corpus(src: Path, files: int, sections: int) -> Path:
    """Pages of distinct pseudo-word sections (one chunk each), the same on every call."""
    rng = random.Random(7)
    words = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES]
    src.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        parts = [f"# Topic {f}\n"]
        for s in range(sections):
            parts.append(f"## Part {s}\n\n{' '.join(rng.choices(words, k=30))}.\n")
        (src / f"topic-{f:02d}.md").write_text("\n".join(parts))
    return src


def start_build(project: Path, **env: str) -> subprocess.Popen[str]:
    """``docbuild build faulty`` as its own process (stderr piped, line by line)."""
    return subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "docbuild"), "build", NAME],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project), **env},
    )


def wait_until(check: Any, process: subprocess.Popen[str], timeout: float = 300) -> None:
    """Poll ``check`` while ``process`` runs; fail if it ends first or time runs out."""
    deadline = time.monotonic() + timeout
    while not check():
        assert process.poll() is None, "the build finished before the fault could be injected"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    assert process.returncode == -signal.SIGKILL


def cached_vectors(config: ProcessingConfig) -> int:
    """Vectors in the embedding cache, as a new process finds them (the WAL replayed)."""
    import duckdb

    con = duckdb.connect(str(config.work_dir / "embeddings.duckdb"), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM vectors").fetchone()[0]
    finally:
        con.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_kill_during_embedding_then_during_materialization(project: Path, embedder):
    write_corpus(project / "corpus", files=24, sections=40)
    scaffold(NAME, str(project / "corpus"), "md", root=project)
    config = load_processing_config(NAME, project)

    # 1. killed while embedding, after some batches reached the cache
    wal = Path(f"{config.work_dir / 'embeddings.duckdb'}.wal")
    build = start_build(project)
    wait_until(lambda: wal.exists() and wal.stat().st_size > 300_000, build)  # one group
    kill(build)
    assert not config.database_path.exists()
    assert not (config.work_dir / "lake" / "catalog.ducklake").exists()  # no snapshot
    saved = cached_vectors(config) - 1  # the probe is embedded (and cached) first, alone

    resumed = Build(config, embedder).run()
    assert 0 < saved < resumed.chunks
    assert resumed.cached == saved and resumed.embedded == resumed.chunks - saved  # none twice
    assert len(list_snapshots(lake_location(config))) == 1

    # 2. killed while materializing: the previous database is untouched and still serves
    served = digest(config.database_path)
    page = config.source.path / "topic-00.md"
    page.write_text(page.read_text() + "\n## Late addition\n\nA section about quasars.\n")
    build = start_build(project)
    abandoned = lambda: list(config.database_path.parent.glob("*.tmp-*"))  # noqa: E731
    wait_until(abandoned, build)
    kill(build)
    assert digest(config.database_path) == served
    answer = asyncio.run(ask(server_script(NAME, project), "Topic 3 Part 7"))
    assert answer["results"] and not answer["degraded"]
    assert {r["path"] for r in answer["results"]} <= {p.name for p in config.source.path.iterdir()}

    rebuilt = Build(config, embedder).run()
    assert rebuilt.embedded <= 2  # the edited section (and the probe had been cached)
    assert not abandoned()  # the killed build's temporary file was cleared away
    answer = asyncio.run(ask(server_script(NAME, project), "quasars", top_k=1))
    assert answer["results"][0]["path"] == "topic-00.md"


class FailingEmbeddingEndpoint(EmbeddingEndpoint):
    """The real model over HTTP that answers HTTP 500 after ``healthy`` requests."""

    def __init__(self, embedder: Any, healthy: int) -> None:
        super().__init__(embedder)
        self.healthy = healthy

    def handle(self, path: str, body: Any) -> tuple[int, Any]:
        if len(self.requests) > self.healthy:
            return 500, {"error": "CUDA out of memory"}
        return super().handle(path, body)


def test_embedder_failing_mid_build(project: Path, embedder):
    write_corpus(project / "corpus", files=4, sections=EMBED_GROUP // 4 + 20)
    scaffold(NAME, str(project / "corpus"), "md", root=project)
    config = load_processing_config(NAME, project)
    first = Build(config, embedder).run()
    served = digest(config.database_path)
    page = config.source.path / "topic-01.md"
    page.write_text(page.read_text().replace("# Topic 1", "# Topic one, revised"))

    # the health check, the probe (alone), one cache group (EMBED_GROUP chunks in batches of 8),
    # two more batches
    endpoint = FailingEmbeddingEndpoint(embedder, healthy=1 + 1 + EMBED_GROUP // 8 + 2)
    env = {
        "DOCMCP_EMBEDDING__PROVIDER": "openai",
        "DOCMCP_EMBEDDING__OPENAI__BASE_URL": f"http://127.0.0.1:{endpoint.port}/v1",
        "DOCMCP_EMBEDDING__OPENAI__BATCH_SIZE": "8",
        "DOCMCP_EMBEDDING__OPENAI__RETRIES": "1",
    }
    with running(endpoint):
        build = start_build(project, **env)
        _, stderr = build.communicate(timeout=300)
    assert build.returncode == 1
    url = f"http://127.0.0.1:{endpoint.port}/v1/embeddings"
    assert f"error: stage 'embed' failed: embedding endpoint {url}" in stderr
    assert "HTTP 500" in stderr and "Traceback" not in stderr
    assert [s["snapshot_id"] for s in list_snapshots(lake_location(config))] == [
        first.snapshot.snapshot_id
    ]  # no partial snapshot
    assert digest(config.database_path) == served

    with running(FailingEmbeddingEndpoint(embedder, healthy=10_000)) as healthy:
        env["DOCMCP_EMBEDDING__OPENAI__BASE_URL"] = f"http://127.0.0.1:{healthy.port}/v1"
        build = start_build(project, **env)
        _, stderr = build.communicate(timeout=300)
    assert build.returncode == 0, stderr
    batches = [body for path, body in healthy.requests if path.endswith("/embeddings")]
    embedded_again = sum(len(b["input"]) for b in batches[1:])  # after the health check
    # every batch that succeeded was kept: the probe, the first group's and the two after it
    assert embedded_again == first.chunks - EMBED_GROUP - 2 * 8
    assert len(list_snapshots(lake_location(config))) == 2


@pytest.fixture(autouse=True)
def _no_settings_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("DOCMCP_")]:
        monkeypatch.delenv(key)
