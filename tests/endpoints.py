"""Small but real HTTP endpoints for tests: stdlib servers in a thread on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
