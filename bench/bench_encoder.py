"""Benchmark docserve.encoder.SentenceEncoder (all-MiniLM-L6-v2 on ONNX Runtime).

    .venv/bin/python bench/bench_encoder.py [--chunks 500] [--corpus DIR]

Prints: import+load time and peak RSS (fresh interpreters), throughput in chunks/s on
~250-wordpiece chunks of real prose and peak RSS for batch sizes 16/32/64 (ascending, so
each peak is that batch size's), and the latency of one short query.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from docserve.encoder import SentenceEncoder
from tokenizers import Tokenizer

DEFAULT_CORPUS = (
    Path(__file__).resolve().parents[2] / "shared" / "corpora" / "mojo-manual-2025-11" / "docs"
)
LOAD_SNIPPET = """
import time
t = time.perf_counter()
from tokenizers import Tokenizer

from docserve.encoder import SentenceEncoder
e = SentenceEncoder()
loaded = time.perf_counter() - t
import resource
print(loaded, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_chunks(encoder: SentenceEncoder, corpus: Path, n: int, size: int = 248) -> list[str]:
    """Cut the corpus's Markdown files into consecutive spans of ``size`` wordpieces."""
    texts = [
        re.sub(r"\A---\n.*?\n---\n", "", path.read_text(), flags=re.DOTALL)
        for path in sorted(corpus.rglob("*.md*"))
    ]
    tokenizer = Tokenizer.from_file(str(encoder.model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    chunks = []
    for text, encoding in zip(texts, tokenizer.encode_batch(texts), strict=True):
        offsets = encoding.offsets[1:-1]  # without [CLS]/[SEP]
        for start in range(0, len(offsets) - size + 1, size):
            chunks.append(text[offsets[start][0] : offsets[start + size - 1][1]])
    if len(chunks) < n:
        sys.exit(f"{corpus} yields only {len(chunks)} chunks of {size} wordpieces")
    return chunks[:n]


def load_times(runs: int) -> tuple[list[float], float]:
    """Import+load seconds in fresh interpreters, and their largest peak RSS in MiB."""
    seconds, rss = [], 0.0
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", LOAD_SNIPPET], check=True, capture_output=True, text=True
        ).stdout.split()
        seconds.append(float(out[0]))
        rss = max(rss, int(out[1]) / 1024)
    return seconds, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--load-runs", type=int, default=7)
    args = parser.parse_args()

    seconds, load_rss = load_times(args.load_runs)
    print(
        f"import+load: median {statistics.median(seconds):.3f} s, min {min(seconds):.3f} s "
        f"({args.load_runs} fresh interpreters); peak RSS after load {load_rss:.0f} MiB"
    )

    encoder = SentenceEncoder()
    print(f"cpu_count {os.cpu_count()}, model {encoder.model_id}, dim {encoder.dimension}")
    t = time.perf_counter()
    sha = encoder.weights_sha256
    print(f"weights_sha256 {sha[:12]}… in {time.perf_counter() - t:.3f} s")

    chunks = make_chunks(encoder, args.corpus, args.chunks)
    counts = [min(c, encoder.max_seq_length) for c in encoder.count_tokens(chunks)]
    print(
        f"{len(chunks)} chunks, wordpieces per chunk: mean {statistics.mean(counts):.0f}, "
        f"min {min(counts)}, max {max(counts)}"
    )
    encoder.embed(chunks[:16], batch_size=16)  # warm-up
    for batch_size in (16, 32, 64):
        t = time.perf_counter()
        encoder.embed(chunks, batch_size=batch_size)
        elapsed = time.perf_counter() - t
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"batch {batch_size:>2}: {len(chunks) / elapsed:6.1f} chunks/s "
            f"({sum(counts) / elapsed:,.0f} tokens/s, {elapsed:.2f} s; peak RSS so far {peak:.0f} MiB)"
        )

    query = ["how do I define a struct with a custom initializer?"]
    latencies = []
    for _ in range(50):
        t = time.perf_counter()
        encoder.embed(query)
        latencies.append(time.perf_counter() - t)
    print(
        f"short query latency: median {statistics.median(latencies) * 1000:.2f} ms, "
        f"p90 {statistics.quantiles(latencies, n=10)[-1] * 1000:.2f} ms (50 runs)"
    )


if __name__ == "__main__":
    main()
