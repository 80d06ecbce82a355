"""Benchmark embedding fleets: build-time throughput of the ``openai`` provider against
``concurrency`` (requests in flight), over one and two endpoints, when latency dominates.

    .venv/bin/python bench/bench_fleet.py [--texts 256] [--batch-size 8] [--delay 1.0]
                                          [--concurrency 1 2 4 8]

Starts two real infinity servers on 127.0.0.1 (``tools/install_test_servers.sh`` installs them)
and, in front of each, a small real HTTP proxy that holds every request for ``--delay`` seconds
before forwarding it: the latency of a remote or busy server, made to dominate on purpose (on
this 2-core machine the servers' own compute is the other bound, and the two share the cores).
Embeds ``--texts`` sentences from README.md and docs/ in requests of ``--batch-size`` at each
concurrency, through one proxy and through both, and prints texts/s (Markdown), the speed-up over
one request in flight, and the least cosine between each run's vectors and the first run's.
The servers alone, without the proxies, are measured too: the compute bound (one torch thread
per server). Expect texts/s of about min(concurrency x batch size / (delay + compute per
request), that bound).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
from docbuild.config import OpenAIConfig
from docbuild.embedding.openai import OpenAIEmbedder

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from endpoints import (  # noqa: E402  (the test helpers that start infinity)
    INFINITY,
    MODEL_NAME,
    READY_TIMEOUT,
    ServerProcess,
    free_port,
    free_ports,
    start_infinity,
)


class DelayProxy:
    """A threaded HTTP proxy on 127.0.0.1 that forwards each POST to the same path on
    ``upstream`` (``http://host:port``) after ``delay`` seconds and relays the answer as it came."""

    def __init__(self, upstream: str, delay: float) -> None:
        self.upstream, self.delay = upstream, delay
        self.port = free_port()
        self.client = httpx.Client(timeout=120, limits=httpx.Limits(max_connections=None))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(proxy.delay)
                answer = proxy.client.post(
                    proxy.upstream + self.path,
                    content=body,
                    headers={"Content-Type": "application/json"},
                )
                self.send_response(answer.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.client.close()


def sentences(count: int) -> list[str]:
    """The first ``count`` distinct prose sentences (6 to 40 words) of README.md and docs/."""
    found: dict[str, None] = {}
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", " ", path.read_text(), flags=re.DOTALL)
        for paragraph in text.split("\n\n"):
            if paragraph.lstrip().startswith(("#", "|", "`")):
                continue
            words = " ".join(paragraph.split()).removeprefix("- ")
            for sentence in re.split(r"(?<=[.!?])\s+", words):
                if 6 <= len(sentence.split()) <= 40:
                    found.setdefault(sentence)
    if len(found) < count:
        sys.exit(f"the docs hold only {len(found)} sentences; ask for fewer --texts")
    return list(found)[:count]


def measure(
    base_urls: list[str], concurrency: int, batch_size: int, texts: list[str]
) -> tuple[float, np.ndarray]:
    """(seconds, vectors) to embed ``texts`` with a fleet over ``base_urls`` (health-checked)."""
    config = OpenAIConfig(
        base_urls=base_urls, concurrency=concurrency, batch_size=batch_size, model=MODEL_NAME
    )
    embedder = OpenAIEmbedder(config)
    embedder.check()
    start = time.perf_counter()
    vectors = embedder.embed_batch(texts)
    return time.perf_counter() - start, vectors


def start_servers(log_dir: Path, servers: list[tuple[ServerProcess, str]]) -> None:
    """Start two infinity servers, one torch thread each (the machine has two cores), into
    ``servers`` (so that the caller stops what started, whatever fails) and wait for them."""
    for port in free_ports(2):
        servers.append((start_infinity(port, log_dir, threads=1), f"http://127.0.0.1:{port}/v1"))
    with ThreadPoolExecutor(2) as pool:
        ready = list(pool.map(lambda s: s[0].wait_ready(s[1], MODEL_NAME, READY_TIMEOUT), servers))
    print(f"two infinity servers ready in {max(ready):.0f} s", file=sys.stderr)


def print_table(
    direct: list[str], delayed: list[str], args: argparse.Namespace, texts: list[str]
) -> None:
    """One row per (endpoints, proxy or not, concurrency), and the least agreement of vectors."""
    print(
        f"{len(texts)} sentences from README.md and docs/*.md in requests of {args.batch_size} "
        f"({-(-len(texts) // args.batch_size)} requests). Through the proxy each request is held "
        f"{args.delay * 1000:.0f} ms before it reaches infinity, so that latency dominates; the "
        "two servers share this machine's 2 cores, one torch thread each.\n"
    )
    print("| endpoints | proxy delay | concurrency | seconds | texts/s | speed-up |")
    print("|---|---|---|---|---|---|")
    first: np.ndarray | None = None
    least = 1.0
    for count, proxied in [(1, True), (2, True), (1, False), (2, False)]:
        urls = (delayed if proxied else direct)[:count]
        delay = f"{args.delay * 1000:.0f} ms" if proxied else "none"
        base = None
        for concurrency in args.concurrency:
            seconds, vectors = measure(urls, concurrency, args.batch_size, texts)
            first = vectors if first is None else first
            least = min(least, float(np.min(np.sum(vectors * first, axis=1))))
            base = base or seconds
            print(
                f"| {count} | {delay} | {concurrency} | {seconds:.2f} | "
                f"{len(texts) / seconds:.0f} | {base / seconds:.1f}x |",
                flush=True,
            )
    print(f"\nleast cosine between runs' vectors of the same text: {least:.6f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds each proxy adds")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    if not INFINITY.exists():
        sys.exit(f"{INFINITY} not installed: run tools/install_test_servers.sh")
    texts = sentences(args.texts)
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        servers: list[tuple[ServerProcess, str]] = []
        proxies: list[DelayProxy] = []
        try:
            start_servers(Path(tmp), servers)
            direct = [url for _, url in servers]
            proxies = [DelayProxy(url.removesuffix("/v1"), args.delay) for url in direct]
            measure(direct, 2, args.batch_size, texts[:32])  # warm both servers up
            print_table(direct, [proxy.base_url for proxy in proxies], args, texts)
        finally:
            for proxy in proxies:
                proxy.stop()
            for server, _ in servers:
                server.stop()


if __name__ == "__main__":
    main()
