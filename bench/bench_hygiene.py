"""What a corpus's chunks hold besides their content: site generators' markup and page furniture
outside code, unbalanced fences, and breadcrumbs. Parses and chunks the corpus as a build does
(no embedding), or reads the chunks of a built database.

    .venv/bin/python bench/bench_hygiene.py CORPORA/hugo-docs/docs --format md
    .venv/bin/python bench/bench_hygiene.py servers/NAME/runtime/NAME.db [--show KIND]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from docbuild.chunker import Chunker, fence_balanced
from docbuild.config import ChunkingConfig, ProcessingConfig, SourceConfig
from docbuild.formats import FORMATS
from docbuild.readers import read_file
from docbuild.stages.discover import discover_sources
from docbuild.util.hygiene import furniture
from docserve.encoder import default_model_dir
from docserve.tokens import TokenCounter

MARKUP = {"shortcode", "Liquid tag", "link reference definition", "glossary link"}
"""The kinds of site generators' markup (issue: at most 0.5% of chunks)."""


def chunks_of_corpus(folder: Path, fmt: str) -> list[tuple[str, str, list[str]]]:
    """(path, content, breadcrumb) of every chunk a build would make of ``folder``."""
    config = ProcessingConfig("bench", Path("."), SourceConfig(folder), format=fmt)
    files, _ = discover_sources(config)
    chunker = Chunker(TokenCounter(default_model_dir()), ChunkingConfig())
    rows: list[tuple[str, str, list[str]]] = []
    for file in files:
        documents, _ = read_file(file.path, file.relative, config)
        for document in documents:
            rows += [
                (c.path, c.content, c.section_hierarchy) for c in chunker.chunk_document(document)
            ]
    return rows


def chunks_of_database(path: Path) -> list[tuple[str, str, list[str]]]:
    """(path, content, breadcrumb) of every chunk of a built database."""
    from docserve.duck import connect

    with connect(path, read_only=True) as con:
        return [
            tuple(r)
            for r in con.sql("SELECT path, content, section_hierarchy FROM chunks").fetchall()
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a corpus folder, or a built .db file")
    parser.add_argument("--format", default="auto", choices=FORMATS)
    parser.add_argument("--show", metavar="KIND", help="print the chunks holding this kind")
    args = parser.parse_args()
    rows = (
        chunks_of_database(args.source)
        if args.source.suffix == ".db"
        else chunks_of_corpus(args.source, args.format)
    )
    kinds: Counter[str] = Counter()
    with_markup = with_anything = 0
    for path, content, _ in rows:
        found = set(furniture(content))
        kinds.update(found)
        with_markup += bool(found & MARKUP)
        with_anything += bool(found)
        if args.show in found:
            print(f"----- {path}\n{content}\n")
    total = len(rows) or 1
    print(f"chunks: {len(rows)}")
    print(
        f"with site generators' markup outside code: {with_markup} ({100 * with_markup / total:.2f}%)"
    )
    print(f"with any furniture or raw markup: {with_anything} ({100 * with_anything / total:.2f}%)")
    print(f"unbalanced fences: {sum(not fence_balanced(c) for _, c, _ in rows)}")
    print(f"with a breadcrumb: {100 * sum(bool(h) for *_, h in rows) / total:.1f}%")
    print("by kind:", dict(kinds.most_common()) or "none")


if __name__ == "__main__":
    main()
