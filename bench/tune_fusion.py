"""Choose fusion defaults on evidence: candidate depth, RRF k, retriever and field weights.

Run: .venv/bin/python bench/tune_fusion.py SERVER=QUERIES [SERVER=QUERIES ...]

SERVER is a built server folder; QUERIES a JSONL query set or a BEIR folder. Each retriever runs
once per query (and per field-weight setting), then every fusion setting is scored from those
candidate lists. Prints nDCG@10 and Hit@5 per set and their mean, best settings first.
"""

from __future__ import annotations

import itertools
import statistics
import sys
from pathlib import Path

from docbuild.evaluate import load_beir, load_jsonl, ndcg, open_engine, page_key

RRF_K = (10, 30, 60, 100)
WEIGHTS = ((1.0, 1.0), (1.0, 0.7), (0.7, 1.0), (1.0, 0.5))  # (vector, keyword)
DEPTHS = (20, 50, 100)
FIELD_WEIGHTS = (
    {"title": 1.0, "headings": 1.0, "content": 1.0, "code_terms": 1.0},
    {"title": 2.0, "headings": 2.0, "content": 1.0, "code_terms": 1.0},
    {"title": 2.0, "headings": 2.0, "content": 1.0, "code_terms": 0.5},
)


def fuse(vec: list[int], kw: list[int], k: int, wv: float, wk: float, depth: int) -> list[int]:
    scores: dict[int, float] = {}
    for weight, rows in ((wv, vec[:depth]), (wk, kw[:depth])):
        for rank, row in enumerate(rows, start=1):
            scores[row] = scores.get(row, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda row: (-scores[row], row))


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
            engine.store = type(engine.store)(engine.store.path, "", field_weights)
            meta = engine.store.con.execute(
                "SELECT chunk_id, path, page, document_id FROM chunks"
            ).fetchall()
            by_id = {m[0]: m for m in meta}
            keys = {}
            for row, chunk_id in enumerate(engine.store.chunk_ids):
                _, path, page, doc = by_id[chunk_id]
                keys[row] = {"page": page_key(path, page), "path": path, "document": doc}
            lists = []
            for q in judged:
                vec = [
                    r
                    for r, _ in engine.vector_candidates(engine.embedder.embed(q.text), max(DEPTHS))
                ]
                kw = [r for r, _ in engine.keyword_candidates(q.text, max(DEPTHS))]
                lists.append((q, vec, kw))
            for k, (wv, wk), depth in itertools.product(RRF_K, WEIGHTS, DEPTHS):
                nd, hit = [], []
                for q, vec, kw in lists:
                    ranked = list(
                        dict.fromkeys(keys[row][q.by] for row in fuse(vec, kw, k, wv, wk, depth))
                    )
                    nd.append(ndcg(ranked, q.relevant))
                    hit.append(float(any(d in q.relevant for d in ranked[:5])))
                setting = (fw_index, k, wv, wk, depth)
                results.setdefault(setting, {})[folder.name] = (
                    statistics.fmean(nd),
                    statistics.fmean(hit),
                )
        print(f"scored {folder.name}: {len(judged)} queries", file=sys.stderr)
    names = [Path(s).name for s, _ in pairs]
    rows = sorted(
        results.items(), key=lambda item: -statistics.fmean(v[0] for v in item[1].values())
    )
    print(
        "| fields | rrf k | w vector | w keyword | depth | "
        + " | ".join(f"{n} nDCG@10 / Hit@5" for n in names)
        + " | mean nDCG@10 |"
    )
    print("|" + "---|" * (6 + len(names)))
    for (fw, k, wv, wk, depth), per in rows[:15] + [
        r for r in rows if r[0] == (0, 60, 1.0, 1.0, 50)
    ]:
        cells = " | ".join(f"{per[n][0]:.3f} / {per[n][1]:.3f}" for n in names)
        mean = statistics.fmean(v[0] for v in per.values())
        print(f"| {fw} | {k} | {wv} | {wk} | {depth} | {cells} | {mean:.4f} |")
    print("\nfields: " + "; ".join(f"{i} = {w}" for i, w in enumerate(FIELD_WEIGHTS)))


if __name__ == "__main__":
    main()
