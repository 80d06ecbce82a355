"""Benchmark: cold build of the Mojo manual vs the bare model, and an unchanged rebuild.

Run: .venv/bin/python bench/bench_build.py [--corpus PATH]

Prints end-to-end chunks/s of a cold build (empty cache, model load included) beside the bare
embedding model's chunks/s on the same distinct chunk texts in the same run (the mean of one run
before and one after the build, so neither gets the warmer machine), their ratio (goal >= 0.9), and
the wall time through the CLI of an unchanged rebuild (goal <= 5 s), of a rebuild after editing
one file (goal <= 10% of the cold build) and of a rollback to the first build (goal <= 10 s).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docbuild.build_report import format_summary
from docbuild.chunker import Chunker
from docbuild.config import load_processing_config
from docbuild.embedding.local import LocalEmbedder
from docbuild.pipeline import Build
from docbuild.readers import read_file
from docbuild.services.scaffold import scaffold
from docbuild.services.sync import sync_source
from docbuild.stages.discover import discover
from docserve.encoder import default_model_dir
from docserve.tokens import TokenCounter

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpora" / "mojo-manual-2025-11" / "docs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-build-"))
    (root / "servers").mkdir()
    scaffold("bench-docs", str(args.corpus), "mdx", "https://docs.example.org", root=root)
    config = load_processing_config("bench-docs", root)

    def bare_model() -> float:
        """Seconds for the bare model to embed the same chunk texts, the same way."""
        files, _ = discover(config.source.path, fmt="mdx")
        docs = [d for f in files for d in read_file(f.path, f.relative)[0]]
        texts = sorted(
            {
                c.embedding_text
                for c in Chunker(
                    TokenCounter(default_model_dir()), config.chunking
                ).chunk_documents(docs)
            },
            key=len,
        )
        model = LocalEmbedder()
        start = time.perf_counter()
        for i in range(0, len(texts), 256):
            model.embed_batch(texts[i : i + 256])
        return len(texts), time.perf_counter() - start

    sync_source(config)
    _, bare_before = bare_model()
    start = time.perf_counter()
    report = Build(config).run()
    cold = time.perf_counter() - start
    print(format_summary(report))
    n_texts, bare_after = bare_model()
    bare = (bare_before + bare_after) / 2

    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}

    def timed_build(*extra: str) -> float:
        """Wall time of one whole CLI run of ``tools/build_mcp.sh bench-docs``."""
        start = time.perf_counter()
        subprocess.run(
            [str(REPO / "tools" / "build_mcp.sh"), "bench-docs", *extra],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return time.perf_counter() - start

    rebuild = timed_build()
    edited = sorted(config.source.path.rglob("*.mdx"))[0]
    edited.write_text(
        edited.read_text() + "\n\n## Benchmark note\n\nOne new paragraph added by the benchmark.\n"
    )
    one_edit = timed_build()
    rollback = timed_build("--from-snapshot", str(report.snapshot.snapshot_id))

    e2e_rate = report.chunks / cold
    bare_rate = n_texts / bare
    print()
    print(
        f"corpus: {args.corpus.name} ({report.files} files, {report.chunks} chunks); cpus: {os.cpu_count()}"
    )
    print(f"cold build, end to end:   {cold:7.1f} s  {e2e_rate:6.1f} chunks/s")
    print(
        f"bare model, same chunks:  {bare:7.1f} s  {bare_rate:6.1f} chunks/s  (mean of a run before and after: {bare_before:.1f} s, {bare_after:.1f} s)"
    )
    print(f"ratio end-to-end / bare:  {e2e_rate / bare_rate:7.2f}  (goal >= 0.9)")
    print(f"unchanged rebuild (CLI):  {rebuild:7.1f} s  (goal <= 5 s)")
    print(
        f"one-file edit (CLI):      {one_edit:7.1f} s  ({one_edit / cold:.1%} of the cold build; goal <= 10%)"
    )
    print(f"rollback (CLI):           {rollback:7.1f} s  (goal <= 10 s)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
