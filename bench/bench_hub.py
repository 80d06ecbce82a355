"""Searching a hub: each library's questions asked of that library alone, and of every library.

Run: .venv/bin/python bench/bench_hub.py --project ROOT mojo=tests/eval/mojo-manual.jsonl hugo=tests/eval/hugo-docs.jsonl ...

ROOT's ``servers/`` holds the built servers named. All of them form one hub (one process, one
shared encoder). For each question set it prints section Hit@5 per question kind when the
question names its library (``library=NAME``: what the library's own server answers) and when it
searches them all (the cross-library fusion), then the totals, and how often a miss across all
had another library's passage first. ``--raw-keyword`` adds the variant that fuses raw BM25
scores across libraries instead of scores min-max normalized within each library.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from docbuild.services.evaluate import KINDS, load_jsonl, section_ranks
from docserve import hub as hub_module
from docserve.hub import Hub, open_library
from docserve.query_embedder import EmbedderPool
from docserve.search import Candidates

SHOWN = 5


def raw_keyword_lists(
    found: list[tuple[int, Candidates]],
) -> dict[str, list[tuple[tuple[int, int], float]]]:
    """``hub.merged_lists`` with BM25 scores as they are (not normalized per library)."""
    merged: dict[str, list[tuple[tuple[int, int], float]]] = {}
    for index, candidates in found:
        for name, rows in candidates.lists.items():
            merged.setdefault(name, []).extend(((index, row), score) for row, score in rows)
    depth = max((len(rows) for _, c in found for rows in c.lists.values()), default=0)
    return {
        name: sorted(rows, key=lambda item: (-item[1], item[0]))[:depth]
        for name, rows in merged.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("sets", nargs="+", metavar="NAME=QUESTIONS")
    parser.add_argument("--raw-keyword", action="store_true")
    args = parser.parse_args()
    sets = dict(item.split("=", 1) for item in args.sets)
    embedders = EmbedderPool()
    servers = args.project / "servers"
    hub = Hub([open_library(name, servers / name, embedders) for name in sets])
    print(f"hub of {len(sets)}: {', '.join(sets)}; encoders loaded: ", end="")
    hub.search("warm up")
    print(len(embedders.embedders))
    variants = {"alone": None, "all": hub_module.merged_lists}
    if args.raw_keyword:
        variants["all, raw BM25"] = raw_keyword_lists
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    other_first: dict[str, int] = defaultdict(int)
    for name, questions_file in sets.items():
        questions = load_jsonl(Path(questions_file))
        for variant, merge in variants.items():
            if merge is not None:
                hub_module.merged_lists = merge
            hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for question in questions:
                scope = name if variant == "alone" else None
                response = hub.search(question.text, scope, top_k=SHOWN)
                hit = any(section_ranks(response.results, question, SHOWN))
                if not hit and response.results and response.results[0].library != name:
                    other_first[variant] += 1
                for key in (question.kind, "all"):
                    hits[key][0] += hit
                    hits[key][1] += 1
                    totals[(variant, key)][0] += hit
                    totals[(variant, key)][1] += 1
            cells = " ".join(
                f"{k} {hits[k][0] / hits[k][1]:.3f}" for k in (*KINDS, "all") if hits[k][1]
            )
            print(f"  {name:<14} {variant:<14} {cells}", flush=True)
    print(f"section Hit@{SHOWN}, every set:")
    for variant in variants:
        cells = " ".join(
            f"{k} {totals[(variant, k)][0]}/{totals[(variant, k)][1]} = "
            f"{totals[(variant, k)][0] / totals[(variant, k)][1]:.3f}"
            for k in (*KINDS, "all")
            if totals[(variant, k)][1]
        )
        print(f"  {variant:<14} {cells}; misses led by another library: {other_first[variant]}")


if __name__ == "__main__":
    sys.exit(main())
