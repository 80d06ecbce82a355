"""Retrieval quality on every question set, at section and document level, per question kind,
for several search settings in the same run.

Run: .venv/bin/python bench/bench_retrieval.py [--root DIR] [--only SET ...]
         [--variant NAME=KEY:VALUE,KEY:VALUE ...] [--modes ...] [--json FILE]

Each set's test corpus (``CORPORA``, see docs/testing.md) is scaffolded and built with the README's tools into the
project ``--root`` (kept between runs: a set already built is reused, and a rebuild embeds only
what changed). Every question set of ``tests/eval/`` is scored on its build, the development
questions and the held-out ones (``tests/eval/heldout/``) apart. A variant sets ``search.*`` keys
of the server (``fusion:rrf``, ``vector_weight:1.5``); ``base`` is the server's configuration.
Prints, per set, variant, split and mode: section-level Hit@5 per question kind and overall,
section MRR@10, and document-level Hit@5 (nDCG@10 for SciFact), then the paraphrase figures of
every set side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from docbuild.services.evaluate import (
    KINDS,
    Judged,
    ModeScores,
    evaluate,
    load_beir,
    load_jsonl,
    open_engine,
)

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"
QUESTIONS = REPO / "tests" / "eval"
SETS = {  # server: (source, format, url base, url suffix, question file or "beir:FOLDER")
    "mojo": ("mojo-manual-2025-11/docs", "auto", None, "", "mojo-manual.jsonl"),
    "hugo": ("hugo-docs/docs", "md", None, "", "hugo-docs.jsonl"),
    "pdfs": ("pdfs", "pdf", None, "", "pdfs.jsonl"),
    "docs": ("", "md", None, "", "docs-mcp-docs.jsonl"),  # this repository's docs/
    "python-html": (
        "python-docs-3.11/html",
        "html",
        "https://docs.python.org/3.11",
        "",
        "python-docs-3.11.jsonl",
    ),
    "python-rst": (
        "python-docs-3.11/rst",
        "rst",
        "https://docs.python.org/3.11",
        ".html",
        "python-docs-3.11.jsonl",
    ),
    "git-asciidoc": (
        "git-docs/asciidoc",
        "asciidoc",
        "https://git-scm.com/docs",
        ".html",
        "git-docs.jsonl",
    ),
    "git-html": ("git-docs/html", "html", "https://git-scm.com/docs", "", "git-docs.jsonl"),
    "scifact": ("scifact/corpus.jsonl", "jsonl", None, "", "beir:scifact"),
}
MODES = ("keyword", "vector", "hybrid")


def tool(root: Path, name: str, *args: str) -> None:
    """Run ``tools/NAME`` against the project ``root``, as a maintainer would."""
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    done = subprocess.run(
        [str(REPO / "tools" / name), *args], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{name} {' '.join(args)} failed:\n{done.stderr[-3000:]}")


def build(root: Path, name: str) -> Path:
    """Scaffold (once) and build the set's server; returns its folder."""
    folder, fmt, url_base, suffix, _ = SETS[name]
    server = root / "servers" / name
    if not server.is_dir():
        source = REPO / "docs" if name == "docs" else CORPORA / folder
        options = ["--source", str(source), "--format", fmt]
        options += ["--url-base", url_base] if url_base else []
        options += ["--url-suffix", suffix] if suffix else []
        tool(root, "scaffold_new_mcp.sh", name, *options)
    print(f"building {name} ...", file=sys.stderr, flush=True)
    tool(root, "build_mcp.sh", name)
    return server


def question_sets(name: str) -> dict[str, list[Judged]]:
    """The set's questions by split: ``dev`` and, when there are any, ``held-out``."""
    questions = SETS[name][4]
    if questions.startswith("beir:"):
        return {"dev": load_beir(CORPORA / questions.removeprefix("beir:"))}
    splits = {"dev": load_jsonl(QUESTIONS / questions)}
    if (QUESTIONS / "heldout" / questions).is_file():
        splits["held-out"] = load_jsonl(QUESTIONS / "heldout" / questions)
    return splits


def parse_variant(text: str) -> tuple[str, dict[str, object]]:
    """``NAME=KEY:VALUE,...`` → (name, search settings to set)."""
    name, _, pairs = text.partition("=")
    settings: dict[str, object] = {}
    for pair in filter(None, pairs.split(",")):
        key, _, value = pair.partition(":")
        settings[key] = json.loads(value) if value[:1] in "0123456789-[{tfn" else value
    return name, settings


def score(
    server: Path,
    splits: dict[str, list[Judged]],
    variants: dict[str, dict[str, object]],
    modes: list[str],
) -> dict[str, dict[str, list[ModeScores]]]:
    """Scores by variant and split."""
    engine = open_engine(server)
    base = asdict(engine.settings)
    try:
        out: dict[str, dict[str, list[ModeScores]]] = {}
        for variant, overrides in variants.items():
            for key, value in {**base, **overrides}.items():
                if not hasattr(engine.settings, key):
                    raise SystemExit(f"variant {variant}: no search setting {key!r}")
                setattr(engine.settings, key, value)
            out[variant] = {
                split: evaluate(engine, judged, modes) for split, judged in splits.items()
            }
        return out
    finally:
        engine.store.close()


def line(name: str, variant: str, split: str, s: ModeScores) -> str:
    """One row of the per-set table."""
    if s.section_hit is None:  # BEIR: document level only
        return f"| {name} | {variant} | {split} | {s.mode} | {s.queries} | - | - | - | - | - | nDCG@10 {s.ndcg_10:.3f} |"
    kinds = " | ".join(
        f"{s.per_kind[k].section_hit_5:.3f} ({s.per_kind[k].queries})" if k in s.per_kind else "-"
        for k in KINDS
    )
    return (
        f"| {name} | {variant} | {split} | {s.mode} | {s.queries} | {kinds} | "
        f"{s.section_hit[5]:.3f} | {s.section_mrr_10:.3f} | {s.hit[5]:.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=REPO / "bench" / ".retrieval",
        help="project root for the builds (kept)",
    )
    parser.add_argument("--only", nargs="*", choices=list(SETS), default=list(SETS))
    parser.add_argument(
        "--variant", action="append", default=[], help="NAME=KEY:VALUE,... (search settings)"
    )
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--no-build", action="store_true", help="score the servers as they are")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    (args.root / "servers").mkdir(parents=True, exist_ok=True)
    variants = dict(parse_variant(v) for v in args.variant) or {"base": {}}
    modes = [m for m in args.modes.split(",") if m]
    results: dict[str, object] = {}
    weak: dict[tuple[str, str, str], list[int]] = {}  # (variant, split, mode) -> counts
    print(
        "| set | variant | split | mode | queries | "
        + " | ".join(f"{k} sec. Hit@5" for k in KINDS)
        + " | sec. Hit@5 | sec. MRR@10 | doc Hit@5 |"
    )
    print("|" + "---|" * 11)
    for name in args.only:
        server = args.root / "servers" / name if args.no_build else build(args.root, name)
        scores = score(server, question_sets(name), variants, modes)
        results[name] = {
            v: {sp: [asdict(m) for m in ms] for sp, ms in by.items()} for v, by in scores.items()
        }
        for variant, by_split in scores.items():
            for split, rows in by_split.items():
                for s in rows:
                    print(line(name, variant, split, s), flush=True)
                    counts = weak.setdefault((variant, split, s.mode), [0, 0, 0, 0])
                    for i, n in enumerate((s.queries, s.weak, s.weak_missed, s.weak_named)):
                        counts[i] += n
    print("\nAnswers in which no passage stood out (they end with the nearest other sections):")
    for (variant, split, mode), (queries, flat, missed, named) in weak.items():
        if flat:
            print(
                f"- {variant} {split} {mode}: {flat} of {queries} answers; {missed} of them miss "
                f"the section in their first 5 passages, {named} of these name it"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
