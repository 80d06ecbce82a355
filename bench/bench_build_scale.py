"""Benchmark the whole build at scale: synthetic Markdown sources of 100k to 1M chunks.

Run: .venv/bin/python bench/bench_build_scale.py --pool DB [--pool DB ...] [--chunks 1000000]
         [--keep DIR]

Writes Markdown pages shaped like real documentation (front matter, a title, ten sections under
headings; section texts grown from the chunks of the --pool servers as bench/synthetic.py grows
them), scaffolds a server over them with the project's own scaffold, and builds it three times
with ``docbuild build`` in a child process:

  1. cold: every stage runs; the vectors come from a local OpenAI-compatible endpoint that
     answers with synthetic vectors (real pool vectors mixed with others and noise; 65,536
     distinct ones), since embedding a million chunks with the model takes hours here; this build
     fills the caches;
  2. cold but for the vectors: the parse and chunk step caches are deleted, the embedding cache
     kept, so every stage but embedding does all its work (the goal's case: "non-embedding stages
     with precomputed vectors from the cache");
  3. nothing changed: every cache is used (what a maintainer's rebuild costs).

For each it prints the seconds per stage (the build's own summary) and the build's peak memory.
--keep keeps the project (sources, caches, lake, database) in DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import yaml

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DOCBUILD = REPO / ".venv" / "bin" / "docbuild"
sys.path.insert(0, str(BENCH))

from synthetic import CHUNKS_PER_DOCUMENT, MIX, NOISE, Pool, _mutate, read_pool  # noqa: E402

NAME = "synthetic-docs"
MODEL = "synthetic-minilm-shaped"


def write_sources(pool: Pool, chunks: int, folder: Path, seed: int = 0) -> int:
    """About ``chunks`` sections' worth of Markdown pages under ``folder``; returns the pages."""
    rng = np.random.default_rng(seed)
    pages = -(-chunks // CHUNKS_PER_DOCUMENT)
    for first in range(0, pages, 1000):
        count = min(1000, pages - first)
        templates = rng.integers(0, len(pool.words), count * CHUNKS_PER_DOCUMENT)
        texts = _mutate(pool, templates, rng)
        for n in range(count):
            page = first + n
            path = folder / f"area-{page % 37}" / f"topic-{(page // 37) % 211}" / f"page-{page}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            own = range(n * CHUNKS_PER_DOCUMENT, (n + 1) * CHUNKS_PER_DOCUMENT)
            title = f"{pool.titles[templates[own[0]]] or 'Page'} {page}"
            sections = [
                f"## {(pool.headings[templates[i]] or ['Notes'])[-1]}\n\n{texts[i]}\n" for i in own
            ]
            path.write_text(
                f"---\ntitle: {json.dumps(title)}\n---\n\n# {title}\n\n" + "\n".join(sections)
            )
    return pages


VARIETY = 1 << 16  # distinct synthetic vectors the endpoint serves


class VectorEndpoint(BaseHTTPRequestHandler):
    """``POST /v1/embeddings`` with synthetic vectors shaped like the pool's real MiniLM ones
    (not a model: the build's other stages are what is measured). Each text gets one of
    :data:`VARIETY` vectors, chosen by a hash of the text and serialised in advance, so the
    endpoint's JSON work does not slow down the build it serves on a two-core machine."""

    encoded: list[bytes]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        items = b",".join(
            b'{"index":%d,"embedding":%s}' % (i, self.encoded[zlib.crc32(text.encode()) % VARIETY])
            for i, text in enumerate(body["input"])
        )
        payload = b'{"model":"%s","data":[%s]}' % (MODEL.encode(), items)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def start_endpoint(pool: Pool, seed: int = 1) -> str:
    """A vector endpoint on 127.0.0.1 in a thread; returns its base URL."""
    rng = np.random.default_rng(seed)
    template = rng.integers(0, len(pool.vectors), VARIETY)
    other = rng.integers(0, len(pool.vectors), VARIETY)
    noise = rng.normal(0, NOISE, (VARIETY, pool.vectors.shape[1])).astype(np.float32)
    vectors = pool.vectors[template] + MIX * pool.vectors[other] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    VectorEndpoint.encoded = [json.dumps(np.round(v, 5).tolist()).encode() for v in vectors]
    server = ThreadingHTTPServer(("127.0.0.1", 0), VectorEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def scaffold_project(project: Path, source: Path, endpoint: str) -> Path:
    """The server scaffolded over ``source``, embedding through ``endpoint``."""
    from docbuild.services.scaffold import scaffold

    server = scaffold(NAME, str(source), "md", root=project)
    settings = server / "config" / "processing_config.yaml"
    config = yaml.safe_load(settings.read_text())
    config["embedding"]["provider"] = "openai"
    config["embedding"]["openai"].update(
        base_url=endpoint, model=MODEL, concurrency=2, batch_size=256
    )
    settings.write_text(yaml.safe_dump(config, sort_keys=False))
    return server


def run_build(project: Path, label: str) -> None:
    """``docbuild build`` in a child process; prints its stage seconds and peak memory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCMCP_")}
    env["DOCMCP_PROJECT_ROOT"] = str(project)
    log = project / "build.log"
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen([str(DOCBUILD), "build", NAME], stdout=out, stderr=out, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    summary = log.read_text()
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"build {label} failed:\n{summary[-3000:]}")
    found = re.search(r"seconds: (.*) \(total", summary)
    chunks = re.search(r"chunks \d+", summary)
    steps = re.findall(r"\[materialize\] (\w.*: [\d.]+ s)", summary)
    print(
        f"\n{label}: {seconds:.0f} s wall, peak {usage.ru_maxrss / 1024:.0f} MB; "
        f"{chunks.group(0) if chunks else '?'}"
    )
    print(f"  seconds: {found.group(1) if found else '?'}")
    if found:
        stages = {k: float(v) for k, v in re.findall(r"(\w+) ([\d.]+)", found.group(1))}
        rest = sum(v for k, v in stages.items() if k != "embed")
        print(f"  every stage but embed: {rest:.0f} s ({rest / 60:.1f} min)")
    if steps:
        print(f"  materialize steps: {'; '.join(s.strip() for s in steps)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", action="append", default=[], help="a built server database")
    parser.add_argument("--chunks", type=int, default=1_000_000, help="sections to write")
    parser.add_argument("--keep", type=Path, help="keep the project in this folder")
    args = parser.parse_args()
    if not args.pool:
        parser.error("give at least one --pool database (a built server's .db)")
    project = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="bench-build-"))
    project.mkdir(parents=True, exist_ok=True)
    (project / "servers").mkdir(exist_ok=True)
    try:
        pool = read_pool([Path(p) for p in args.pool])
        source = project / "sources"
        start = time.perf_counter()
        pages = write_sources(pool, args.chunks, source)
        print(
            f"{pages} pages, {args.chunks} sections written in {time.perf_counter() - start:.0f} s"
        )
        server = scaffold_project(project, source, start_endpoint(pool))
        run_build(project, "1. cold (vectors from the synthetic endpoint)")
        for step in ("documents.pickle", "chunks.pickle"):
            (server / "build" / "cache" / step).unlink()
        run_build(project, "2. cold but for the vectors (from the embedding cache)")
        run_build(project, "3. nothing changed")
    finally:
        if not args.keep:
            shutil.rmtree(project, ignore_errors=True)


if __name__ == "__main__":
    main()
