"""Choose fusion defaults on evidence: fusion, candidate depth, RRF k, retriever and field weights.

Run: .venv/bin/python bench/tune_fusion.py SERVER=QUERIES [SERVER=QUERIES ...]

SERVER is a built server folder; QUERIES a JSONL query set or a BEIR folder. Each retriever runs
once per query (and per field-weight setting), then every fusion setting is scored from those
candidate lists with the engine's own fusion. Prints nDCG@10 and Hit@5 per set and their mean,
best settings first.
"""

from __future__ import annotations

import itertools
import statistics
import sys
from pathlib import Path

from docbuild.services.evaluate import load_beir, load_jsonl, ndcg, open_engine, page_key
from docserve import search

FUSIONS = (("convex", 0), ("rrf", 10), ("rrf", 30), ("rrf", 60))  # (fusion, rrf k)
WEIGHTS = ((1.0, 1.0), (1.0, 0.7), (0.7, 1.0), (1.0, 0.5), (0.5, 1.0))  # (vector, keyword)
DEPTHS = (50, 100, 200)
FIELD_WEIGHTS = (
    {"title": 1.0, "headings": 1.0, "content": 1.0, "code_terms": 1.0},
    {"title": 2.0, "headings": 2.0, "content": 1.0, "code_terms": 1.0},
    {"title": 2.0, "headings": 2.0, "content": 1.0, "code_terms": 0.5},
)
REFERENCE = ((1, "rrf", 10, 1.0, 1.0, 100), (0, "rrf", 60, 1.0, 1.0, 100))  # always printed


def fuse(engine: search.SearchEngine, vec: list, kw: list, setting: tuple) -> list[int]:
    """The rows in fused order under ``setting`` = (fusion, rrf k, w vector, w keyword, depth)."""
    fusion, k, wv, wk, depth = setting
    engine.settings.fusion, engine.settings.rrf_k = fusion, k
    engine.settings.vector_weight, engine.settings.keyword_weight = wv, wk
    return [
        row
        for row, _, _ in search.fuse(
            {"vector": vec[:depth], "keyword": kw[:depth]}, None, engine.settings
        )
    ]


def main() -> None:
    pairs = [arg.split("=", 1) for arg in sys.argv[1:]]
    if not pairs:
        sys.exit(__doc__)
    results: dict[tuple, dict[str, tuple[float, float]]] = {}
    for server, queries in pairs:
        folder, qpath = Path(server), Path(queries)
        judged = load_beir(qpath) if qpath.is_dir() else load_jsonl(qpath)
        for fw_index, field_weights in enumerate(FIELD_WEIGHTS):
            engine = open_engine(folder, candidates=max(DEPTHS))
            engine.settings.field_weights = field_weights
            engine.store = type(engine.store)(engine.store.path, "", engine.settings)
            meta = engine.store.con.execute(
                "SELECT chunk_row, path, page, document_id FROM chunks"
            ).fetchall()
            keys = {
                row: {"page": page_key(path, page), "path": path, "document": doc}
                for row, path, page, doc in meta
            }
            lists = []
            for q in judged:
                vec = engine.vector_candidates(engine.embedder.embed(q.text), max(DEPTHS))
                kw = engine.keyword_candidates(q.text, max(DEPTHS))
                lists.append((q, vec, kw))
            for (fusion, k), (wv, wk), depth in itertools.product(FUSIONS, WEIGHTS, DEPTHS):
                setting = (fusion, k, wv, wk, depth)
                nd, hit = [], []
                for q, vec, kw in lists:
                    rows = fuse(engine, vec, kw, setting)
                    ranked = list(dict.fromkeys(keys[row][q.by] for row in rows))
                    nd.append(ndcg(ranked, q.relevant))
                    hit.append(float(any(d in q.relevant for d in ranked[:5])))
                results.setdefault((fw_index, *setting), {})[folder.name] = (
                    statistics.fmean(nd),
                    statistics.fmean(hit),
                )
        print(f"scored {folder.name}: {len(judged)} queries", file=sys.stderr)
    names = [Path(s).name for s, _ in pairs]
    rows = sorted(
        results.items(), key=lambda item: -statistics.fmean(v[0] for v in item[1].values())
    )
    print(
        "| fields | fusion | rrf k | w vector | w keyword | depth | "
        + " | ".join(f"{n} nDCG@10 / Hit@5" for n in names)
        + " | mean nDCG@10 |"
    )
    print("|" + "---|" * (7 + len(names)))
    reference = [r for r in rows if r[0] in REFERENCE]
    for (fw, fusion, k, wv, wk, depth), per in rows[:15] + reference:
        cells = " | ".join(f"{per[n][0]:.3f} / {per[n][1]:.3f}" for n in names)
        mean = statistics.fmean(v[0] for v in per.values())
        k_cell = k if fusion == "rrf" else "-"
        print(f"| {fw} | {fusion} | {k_cell} | {wv} | {wk} | {depth} | {cells} | {mean:.4f} |")
    print("\nfields: " + "; ".join(f"{i} = {w}" for i, w in enumerate(FIELD_WEIGHTS)))


if __name__ == "__main__":
    main()
