"""Benchmark: cold builds of the HTML, reStructuredText and AsciiDoc corpora, with hygiene and
retrieval quality.

Run: .venv/bin/python bench/bench_formats.py [--only NAME ...] [--json FILE]

Scaffolds each test corpus (``CORPORA``, see docs/testing.md) with the README's tool in a throw-away project,
builds it cold with the pipeline that ``tools/build_mcp.sh`` runs, evaluates it with
``tools/eval_mcp.sh``, and prints per corpus: files, skipped files and why,
chunks, unbalanced fences (goal 0), breadcrumb share (goal 100%), share of chunks with page
furniture (goal 0), seconds per stage, parsing + chunking as a share of the cold build (goal
< 15%), and Hit@5 / MRR@10 per search mode on its question set in ``tests/eval/`` (goal Hit@5
>= 0.9; the two builds of the same pages within 3 points of each other).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from docbuild.build_report import format_summary
from docbuild.config import load_processing_config
from docbuild.pipeline import Build

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"

BUILDS = {  # server name: (corpus folder, format, question set, url_base, url_suffix)
    "python-html": (
        "python-docs-3.11/html",
        "html",
        "python-docs-3.11",
        "https://docs.python.org/3.11",
        "",
    ),
    "python-rst": (
        "python-docs-3.11/rst",
        "rst",
        "python-docs-3.11",
        "https://docs.python.org/3.11",
        ".html",
    ),
    "git-asciidoc": (
        "git-docs/asciidoc",
        "asciidoc",
        "git-docs",
        "https://git-scm.com/docs",
        ".html",
    ),
    "git-html": ("git-docs/html", "html", "git-docs", "https://git-scm.com/docs", ""),
}


def tool(root: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``tools/NAME`` as a maintainer would, against the throw-away project ``root``."""
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    result = subprocess.run(
        [str(REPO / "tools" / name), *args], env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"{name} {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return result


def build(root: Path, name: str) -> dict[str, object]:
    """Scaffold and cold-build one corpus; returns its figures."""
    folder, fmt, questions, url_base, suffix = BUILDS[name]
    source = CORPORA / folder
    scaffold = ["--source", str(source), "--format", fmt, "--url-base", url_base]
    tool(
        root, "scaffold_new_mcp.sh", name, *scaffold, *(["--url-suffix", suffix] if suffix else [])
    )
    start = time.perf_counter()
    report = Build(load_processing_config(name, root)).run()
    wall = time.perf_counter() - start
    print(format_summary(report), flush=True)
    hygiene = report.hygiene
    assert hygiene is not None
    parse_chunk = report.seconds["parse"] + report.seconds["chunk"]
    figures: dict[str, object] = {
        "corpus": folder,
        "format": fmt,
        "files": report.files,
        "skipped": len(report.skipped),
        "skipped_reasons": Counter(p.reason.split(" (")[0] for p in report.skipped).most_common(),
        "best_effort": len(report.problems) - len(report.skipped),
        "documents": report.documents,
        "chunks": report.chunks,
        "unbalanced_fences": hygiene.unbalanced_fences,
        "breadcrumb_share": hygiene.hierarchy_share,
        "furniture_share": hygiene.furniture_share,
        "furniture_chunks": hygiene.with_furniture,
        "seconds": {k: round(v, 1) for k, v in report.seconds.items()},
        "cold_build_s": round(wall, 1),
        "parse_chunk_share": parse_chunk / wall,
    }
    answer = tool(
        root,
        "eval_mcp.sh",
        name,
        "--queries",
        str(REPO / "tests" / "eval" / f"{questions}.jsonl"),
        "--json",
        str(root / f"{name}-eval.json"),
    )
    print(answer.stdout, flush=True)
    scores = json.loads((root / f"{name}-eval.json").read_text())
    figures["eval"] = scores
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(BUILDS), default=list(BUILDS))
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-formats-"))
    (root / "servers").mkdir()
    results = {name: build(root, name) for name in args.only}
    print(
        f"\n{'build':<14} {'files':>5} {'skip':>4} {'chunks':>6} {'fences':>6} "
        f"{'crumbs':>7} {'furn.':>6} {'parse+chunk':>11} {'cold s':>7}"
    )
    for name, r in results.items():
        print(
            f"{name:<14} {r['files']:>5} {r['skipped']:>4} {r['chunks']:>6} "
            f"{r['unbalanced_fences']:>6} {r['breadcrumb_share']:>7.1%} {r['furniture_share']:>6.1%} "
            f"{r['parse_chunk_share']:>11.1%} {r['cold_build_s']:>7.1f}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
