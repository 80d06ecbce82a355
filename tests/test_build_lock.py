"""One build of a server at a time: a second build stops at once naming the first one's pid (or,
with ``--wait``, waits for it), ``watch`` waits for a build started by hand, and the lock of a
killed build blocks nothing.

Builds run as real ``docbuild`` processes. To keep a build running for as long as a test needs,
its embedder is a real OpenAI-compatible HTTP endpoint (the real model behind it) that holds each
request until the test opens its gate; the lock is otherwise held by a real second process that
takes it with the module's own function.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, build_pages
from docbuild.config import ProcessingConfig
from docbuild.pipeline import Build
from docbuild.stages.snapshot import lake_location, list_snapshots
from docbuild.util.build_lock import LOCK_NAME, BuildLocked, build_lock
from docserve.duck import connect
from endpoints import EmbeddingEndpoint, running

NAME = "locked"
DOCBUILD = REPO / ".venv" / "bin" / "docbuild"
PAGES = {
    "stars.md": "# Stars\n\nStars fuse hydrogen into helium in their cores.\n",
    "moons.md": "# Moons\n\nMoons orbit planets and raise tides on them.\n",
}
HOLD = """import sys
from pathlib import Path
from docbuild.util.build_lock import build_lock
with build_lock(Path(sys.argv[1]), sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()
"""
"""Takes the build lock, says so, and holds it until its stdin closes (or it is killed)."""
AT_ONCE = 20.0  # seconds: a refused build starts Python, loads the config and stops (about 1 s)


class GatedEmbeddingEndpoint(EmbeddingEndpoint):
    """The real model over HTTP that answers nothing until ``gate`` is set: a build that reaches
    its embed stage stays there, for real, until the test lets it go on."""

    def __init__(self, embedder: Any) -> None:
        super().__init__(embedder)
        self.gate = threading.Event()

    def handle(self, path: str, body: Any) -> tuple[int, Any]:
        self.gate.wait(300)
        return super().handle(path, body)


@pytest.fixture
def config(project: Path, embedder) -> ProcessingConfig:
    """Server ``locked`` over two small pages, built once (in this process)."""
    return build_pages(project, NAME, PAGES, embedder)[0]


def environment(project: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a child build of ``project``: no outside settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCMCP_")}
    return {**env, "DOCMCP_PROJECT_ROOT": str(project), **extra}


def start(project: Path, log: Path, *args: str, **env: str) -> subprocess.Popen[bytes]:
    """``docbuild ARGS`` as its own process, its stderr written to ``log``."""
    with log.open("w") as err:
        return subprocess.Popen(
            [str(DOCBUILD), *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=environment(project, **env),
        )


def hold_lock(project: Path, config: ProcessingConfig) -> subprocess.Popen[str]:
    """A second process holding the server's build lock (release: close its stdin)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(config.work_dir), NAME],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment(project),
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def wait_until(check: Callable[[], object], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def served(config: ProcessingConfig) -> tuple[int, int, str]:
    """The served database's inode, mtime and content hash."""
    path = config.database_path
    info = path.stat()
    return info.st_ino, info.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


def use_endpoint(settings: str, port: int) -> str:
    """``processing_config.yaml`` text set to embed through the endpoint on ``port``."""
    for old, new in [
        ("  provider: local ", "  provider: openai "),
        ("    base_url: http://127.0.0.1:8000/v1", f"    base_url: http://127.0.0.1:{port}/v1"),
    ]:
        assert old in settings
        settings = settings.replace(old, new)
    return settings


def provider(config: ProcessingConfig) -> str:
    """The embedding provider recorded in the served database's ``build_info``."""
    with connect(config.database_path, read_only=True, extensions=()) as con:
        (value,) = con.execute(
            "SELECT value FROM build_info WHERE key = 'embedding_provider'"
        ).fetchone()
    return json.loads(value)


def refusal(pid: int) -> str:
    return f"error: another build of {NAME} is running (pid {pid}); wait for it or pass --wait"


def test_a_second_build_stops_at_once_and_a_waiting_one_follows(
    project: Path, config: ProcessingConfig, embedder, tmp_path: Path
):
    """The collision issue 12 describes (two builds in the embed stage; DuckDB's lock error
    half-way through): the second build now stops before it touches anything."""
    (config.source.path / "comets.md").write_text("# Comets\n\nComets grow tails of dust.\n")
    before = served(config)
    endpoint = GatedEmbeddingEndpoint(embedder)
    settings = config.server_root / "config" / "processing_config.yaml"
    local = settings.read_text()
    settings.write_text(use_endpoint(local, endpoint.port))  # for the first build only
    with running(endpoint):
        first = start(project, tmp_path / "first.log", "build", NAME)
        try:
            wait_until(lambda: endpoint.requests or first.poll() is not None)
            settings.write_text(local)  # the first build has read it; the others embed locally
            assert first.poll() is None, (tmp_path / "first.log").read_text()
            assert "[embed] ..." in (tmp_path / "first.log").read_text()  # held in embed stage

            began = time.monotonic()
            second = start(project, tmp_path / "second.log", "build", NAME)
            assert second.wait(AT_ONCE) == 1
            assert time.monotonic() - began < AT_ONCE
            text = (tmp_path / "second.log").read_text()
            assert text.strip() == refusal(first.pid), text  # no stage ran
            assert served(config) == before

            waiting = start(project, tmp_path / "waiting.log", "build", NAME, "--wait")
            message = f"another build of {NAME} is running (pid {first.pid}); waiting for it"
            wait_until(lambda: message in (tmp_path / "waiting.log").read_text())
            time.sleep(1.0)
            assert waiting.poll() is None and served(config) == before
        finally:
            endpoint.gate.set()
        assert first.wait(180) == 0, (tmp_path / "first.log").read_text()
    assert waiting.wait(180) == 0, (tmp_path / "waiting.log").read_text()
    log = (tmp_path / "waiting.log").read_text()
    assert log.index(message) < log.index("[discover] ...")
    assert "[package] done" in log
    assert list_snapshots(lake_location(config))[-1]["info"]["document_count"] == 3
    # the waiting build (local model) materialized last, over the first one's (openai) database
    assert provider(config) == "local" and served(config) != before
    assert (config.work_dir / LOCK_NAME).read_text() == ""  # no holder left behind


def test_the_lock_of_a_killed_build_blocks_nothing(project: Path, config: ProcessingConfig):
    holder = hold_lock(project, config)
    lock_file = config.work_dir / LOCK_NAME
    assert lock_file.read_text() == f"{holder.pid}\n"
    with pytest.raises(BuildLocked) as refused, build_lock(config.work_dir, NAME):
        pass
    assert refused.value.pid == holder.pid
    holder.send_signal(signal.SIGKILL)
    holder.wait(30)
    assert lock_file.read_text() == f"{holder.pid}\n"  # the dead holder's pid is still written
    with build_lock(config.work_dir, NAME):  # taken at once: a held lock would raise
        assert lock_file.read_text() == f"{os.getpid()}\n"
    assert lock_file.read_text() == ""


def test_a_rollback_takes_the_lock_too(project: Path, config: ProcessingConfig, embedder):
    snapshot = list_snapshots(lake_location(config))[-1]["snapshot_id"]
    before = served(config)
    holder = hold_lock(project, config)
    try:
        with pytest.raises(BuildLocked, match=rf"\(pid {holder.pid}\); wait for it or pass"):
            Build(config, embedder).rollback(snapshot)
        assert served(config) == before
    finally:
        holder.stdin.close()
        holder.wait(30)
    assert Build(config, embedder).rollback(snapshot).chunks == len(PAGES)


def test_watch_waits_for_a_build_started_by_hand(
    project: Path, config: ProcessingConfig, tmp_path: Path
):
    holder = hold_lock(project, config)
    log = tmp_path / "watch.log"
    watcher = start(project, log, "watch", NAME, "--interval", "0.2", "--debounce", "0.5")
    try:
        message = f"another build of {NAME} is running (pid {holder.pid}); waiting for it"
        wait_until(lambda: message in log.read_text() or watcher.poll() is not None)
        time.sleep(1.0)
        assert watcher.poll() is None and "build 1 " not in log.read_text()
        holder.stdin.close()
        holder.wait(30)
        wait_until(lambda: "build 1 done" in log.read_text() or watcher.poll() is not None)
        assert watcher.poll() is None, log.read_text()

        # between its builds the watcher holds no lock: a build by hand goes ahead
        by_hand = subprocess.run(
            [str(DOCBUILD), "build", NAME],
            capture_output=True,
            text=True,
            env=environment(project),
            timeout=180,
        )
        assert by_hand.returncode == 0, by_hand.stderr
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(60)
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert watcher.returncode == 0 and "failed" not in log.read_text(), log.read_text()
