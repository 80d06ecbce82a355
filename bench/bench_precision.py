"""Benchmark the int8 encoder against fp32: build speed, retrieval quality, cold start, size.

Run: .venv/bin/python bench/bench_precision.py [--only SET ...] [--json FILE]

For each question set, scaffolds its corpus twice with the README's tool (``--precision fp32``
and ``--precision int8``) in one throw-away project, builds both cold (each server has its own
embedding cache, so every chunk is embedded; the model is quantized first, on its own clock),
and scores both with ``tools/eval_mcp.sh`` in every search mode. Prints per set and precision:
chunks, the embed stage's seconds and chunks/s, and nDCG@10 / Hit@5 per mode. For the Mojo
manual it also starts each server over stdio as a client does: cold start to the first answer,
resident memory after 20 queries, and the size of its ``runtime/`` folder (what a user copies).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench_formats import BUILDS, CORPORA, REPO, tool
from bench_server import cold_start, script_command
from docbuild.build_report import format_summary
from docbuild.config import load_processing_config
from docbuild.embedding.quantize import int8_encoder
from docbuild.pipeline import Build
from docserve.encoder import default_model_dir

QUESTIONS = REPO / "tests" / "eval"
SETS = {  # set: (corpus, format, eval arguments, url_base, url_suffix)
    "mojo": ("mojo-manual-2025-11/docs", "auto", ["--queries", "mojo-manual.jsonl"], None, ""),
    "scifact": ("scifact/corpus.jsonl", "jsonl", ["--beir", "scifact"], None, ""),
    "hugo": ("hugo-docs/docs", "md", ["--queries", "hugo-docs.jsonl"], None, ""),
    "pdfs": ("pdfs", "pdf", ["--queries", "pdfs.jsonl"], None, ""),
    **{
        name: (folder, fmt, ["--queries", f"{questions}.jsonl"], url_base, suffix)
        for name, (folder, fmt, questions, url_base, suffix) in BUILDS.items()
    },
}
PRECISIONS = ("fp32", "int8")


def build(root: Path, name: str, precision: str) -> dict[str, object]:
    """Scaffold, build cold and evaluate one set at one precision; returns its figures."""
    folder, fmt, eval_args, url_base, suffix = SETS[name]
    server = f"{name}-{precision}"
    options = ["--source", str(CORPORA / folder), "--format", fmt, "--precision", precision]
    options += ["--url-base", url_base] if url_base else []
    options += ["--url-suffix", suffix] if suffix else []
    tool(root, "scaffold_new_mcp.sh", server, *options)
    start = time.perf_counter()
    report = Build(load_processing_config(server, root)).run()
    wall = time.perf_counter() - start
    print(format_summary(report), flush=True)
    flag, target = eval_args
    target = str(CORPORA / target if flag == "--beir" else QUESTIONS / target)
    scores_file = root / f"{server}-eval.json"
    print(tool(root, "eval_mcp.sh", server, flag, target, "--json", str(scores_file)).stdout)
    embed = report.seconds["embed"]
    return {
        "chunks": report.chunks,
        "embedded": report.embedded,
        "embed_s": round(embed, 1),
        "chunks_per_s": round(report.embedded / embed, 1) if embed else None,
        "build_s": round(wall, 1),
        "eval": json.loads(scores_file.read_text()),
        "server": str(root / "servers" / server),
    }


def serving(server: Path) -> dict[str, object]:
    """Cold start to the first answer over stdio, memory after 20 queries, runtime folder size."""
    script = next((server / "runtime").glob("*_server.py"))
    start, rss = cold_start(script_command(script))
    size = sum(p.stat().st_size for p in (server / "runtime").rglob("*") if p.is_file())
    return {"cold_start": start, "rss_mb": round(rss), "runtime_mb": round(size / 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(SETS), default=list(SETS))
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-precision-"))
    (root / "servers").mkdir()
    start = time.perf_counter()
    encoder = int8_encoder(default_model_dir())
    print(f"int8 encoder {encoder.name}: {time.perf_counter() - start:.1f} s (quantized or cached)")
    results: dict[str, dict[str, dict[str, object]]] = {}
    for name in args.only:
        results[name] = {p: build(root, name, p) for p in PRECISIONS}
        if name == "mojo":
            for p in PRECISIONS:
                results[name][p].update(serving(Path(str(results[name][p]["server"]))))
    print(f"\n{'set':<13} {'prec.':<5} {'chunks':>6} {'embed s':>8} {'chunks/s':>8}  quality")
    for name, by_precision in results.items():
        for p, r in by_precision.items():
            quality = "  ".join(
                f"{m['mode']} nDCG@10 {m['ndcg_10']:.4f} Hit@5 {m['hit']['5']:.3f}"
                for m in r["eval"]
            )
            print(
                f"{name:<13} {p:<5} {r['chunks']:>6} {r['embed_s']:>8} {r['chunks_per_s']!s:>8}  "
                f"{quality}"
            )
        fp32, int8 = by_precision["fp32"], by_precision["int8"]
        if fp32["chunks_per_s"] and int8["chunks_per_s"]:
            print(f"{'':<13} int8 embeds {int8['chunks_per_s'] / fp32['chunks_per_s']:.2f}x")
        for p in PRECISIONS:
            if "cold_start" in by_precision[p]:
                r = by_precision[p]
                print(
                    f"{name:<13} {p:<5} cold start {r['cold_start']}; {r['rss_mb']} MB after 20 "
                    f"queries; runtime/ {r['runtime_mb']} MB"
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
