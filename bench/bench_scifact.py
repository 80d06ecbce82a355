"""SciFact benchmark: build a server from BEIR SciFact and score the 300 test queries.

Run: .venv/bin/python bench/bench_scifact.py [--corpus CORPORA/scifact] [--project DIR]

Builds (about 8,000 chunks to embed: minutes; a rebuild in the same --project reuses the
embedding cache), then prints nDCG@10, Recall@10/100, MRR@10 and Hit@k for keyword, vector and
hybrid search with the default server settings.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from docbuild.build_report import format_summary
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.evaluate import evaluate, load_beir, markdown_table, open_engine
from docbuild.services.scaffold import scaffold

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpora" / "scifact"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument(
        "--project", type=Path, help="project folder to build in (kept; default: a temp folder)"
    )
    args = parser.parse_args()
    root = args.project or Path(tempfile.mkdtemp(prefix="bench-scifact-"))
    (root / "servers").mkdir(parents=True, exist_ok=True)
    if not (root / "servers" / "scifact").exists():
        scaffold("scifact", str(args.corpus / "corpus.jsonl"), "jsonl", root=root)
    config = load_processing_config("scifact", root)
    print(format_summary(Build(config).run()))
    judged = load_beir(args.corpus, "test")
    print(f"\nSciFact test: {len(judged)} queries\n")
    print(
        markdown_table(
            evaluate(open_engine(config.server_root), judged, ["keyword", "vector", "hybrid"])
        )
    )


if __name__ == "__main__":
    main()
