"""Measure retrieval quality of a built server: nDCG@10, Recall@10/100, MRR@10, Hit@k per mode.

Query sets: BEIR (``queries.jsonl`` + ``qrels/<split>.tsv``) or a JSONL of
``{id, query, relevant: [{path, heading, page}]}``. Chunk results are aggregated to documents
(a document ranks where its best chunk ranks); a judgement that names a PDF page is scored at
page level (``path#page=N``), otherwise at document level (``path``, or the BEIR document id).
A path written without its extension (``library/csv``) matches that page in any format
(``library/csv.rst``, ``library/csv.html``), so one query set serves builds of both.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from docserve.config import load_settings
from docserve.query_embedder import Encoder, QueryEmbedder
from docserve.rerank import make_reranker
from docserve.search import SearchEngine, SearchResult
from docserve.store import ChunkStore

from docbuild.processors import EXTENSIONS

HIT_AT = (1, 3, 5, 10)
DEPTH = 100


@dataclass
class Judged:
    """One evaluation query and its relevant documents (key → graded relevance)."""

    query_id: str
    text: str
    relevant: dict[str, float]
    kind: str = ""
    by: str = "document"  # "document" (BEIR id), "path", "stem" (path without extension), "page"


@dataclass
class ModeScores:
    """Averages over the query set for one search mode."""

    mode: str
    queries: int
    ndcg_10: float
    recall_10: float
    recall_100: float
    mrr_10: float
    hit: dict[int, float]
    latency_ms_p50: float
    latency_ms_mean: float
    per_kind_hit_5: dict[str, float] = field(default_factory=dict)


def load_beir(folder: Path, split: str = "test") -> list[Judged]:
    """Queries with judgements in ``qrels/<split>.tsv`` (others are left out)."""
    texts = {}
    for line in (folder / "queries.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            texts[str(record["_id"])] = record["text"]
    relevant: dict[str, dict[str, float]] = {}
    for number, line in enumerate((folder / "qrels" / f"{split}.tsv").read_text().splitlines()):
        parts = line.split("\t")
        if number == 0 and not parts[-1].strip().lstrip("-").isdigit():
            continue  # header
        query_id, doc_id, score = parts[0], parts[1], float(parts[2])
        if score > 0:
            relevant.setdefault(query_id, {})[doc_id] = score
    return [Judged(q, texts[q], rel) for q, rel in relevant.items() if q in texts]


def load_jsonl(path: Path) -> list[Judged]:
    """Queries written as ``{id, query, relevant: [{path, heading, page}]}``."""
    judged = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        entries = record["relevant"]
        by_page = any(e.get("page") for e in entries)
        by_stem = not by_page and all(strip_extension(e["path"]) == e["path"] for e in entries)
        keys = {page_key(e["path"], e.get("page")) if by_page else e["path"]: 1.0 for e in entries}
        by = "page" if by_page else "stem" if by_stem else "path"
        judged.append(Judged(str(record["id"]), record["query"], keys, record.get("type", ""), by))
    return judged


def strip_extension(path: str) -> str:
    """``path`` without a source format's extension (``library/os.path.rst`` → ``library/os.path``)."""
    suffix = PurePosixPath(path).suffix.lower()
    return path[: -len(suffix)] if suffix in EXTENSIONS else path


def page_key(path: str, page: int | None) -> str:
    """The key of a PDF page (or of a whole document when ``page`` is None)."""
    return f"{path}#page={page}" if page else path


def result_key(result: SearchResult, by: str) -> str:
    """The key a result counts under for a judgement of kind ``by``."""
    if by == "page":
        return page_key(result.path, result.page)
    if by == "stem":
        return strip_extension(result.path)
    return result.path if by == "path" else result.document_id


def ranked_documents(results: list[SearchResult], by: str) -> list[str]:
    """Document keys in order of their best chunk."""
    seen: dict[str, None] = {}
    for result in results:
        seen.setdefault(result_key(result, by), None)
    return list(seen)


def ndcg(ranked: list[str], relevant: dict[str, float], k: int = 10) -> float:
    """nDCG@k with linear gains (as trec_eval and BEIR compute it)."""
    dcg = sum(relevant.get(doc, 0.0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    best = sum(gain / math.log2(i + 2) for i, gain in enumerate(ideal))
    return dcg / best if best else 0.0


def score_query(ranked: list[str], relevant: dict[str, float]) -> dict[str, float]:
    """All metrics for one query."""
    hits = [i for i, doc in enumerate(ranked) if doc in relevant]
    first = hits[0] + 1 if hits else None
    found = lambda k: len({d for d in ranked[:k] if d in relevant})  # noqa: E731
    scores = {
        "ndcg_10": ndcg(ranked, relevant),
        "recall_10": found(10) / len(relevant),
        "recall_100": found(100) / len(relevant),
        "mrr_10": 1.0 / first if first and first <= 10 else 0.0,
    }
    scores.update({f"hit_{k}": float(bool(first and first <= k)) for k in HIT_AT})
    return scores


def open_engine(
    server_root: Path,
    candidates: int | None = None,
    rerank: bool = True,
    database: Path | None = None,
) -> SearchEngine:
    """A search engine over a built server, as its runtime would configure it (``database``
    overrides the configured file, e.g. a build's temporary file)."""
    settings = load_settings(server_root.name, server_root)
    if database is not None:
        settings.database = database
    settings.search.max_top_k = max(settings.search.max_top_k, DEPTH * 3)
    if candidates:
        settings.search.candidates = candidates
    store = ChunkStore(settings.database, f"tools/build_mcp.sh {server_root.name}", settings.search)
    encoder = Encoder.of_build(settings.embedding, store.info, settings.database.parent)
    embedder = QueryEmbedder(settings.embedding, server_root / "runtime" / "model", encoder)
    reranker = make_reranker(settings.rerank) if rerank else None
    return SearchEngine(store, embedder, settings.search, reranker)


def evaluate(engine: SearchEngine, judged: list[Judged], modes: list[str]) -> list[ModeScores]:
    """Run every query in every mode (adding ``hybrid+rerank`` when a reranker is configured);
    returns averages per mode."""
    table = []
    reranker = engine.reranker
    if reranker is not None and "hybrid+rerank" not in modes:
        modes = [*modes, "hybrid+rerank"]
    for mode in modes:
        engine.reranker = reranker if mode == "hybrid+rerank" else None
        rows, times, kinds = [], [], {}
        search_mode = "hybrid" if mode == "hybrid+rerank" else mode
        for query in judged:
            start = time.perf_counter()
            response = engine.search(query.text, DEPTH * 3, search_mode)
            times.append((time.perf_counter() - start) * 1000)
            metrics = score_query(ranked_documents(response.results, query.by), query.relevant)
            rows.append(metrics)
            if query.kind:
                kinds.setdefault(query.kind, []).append(metrics["hit_5"])
        mean = {key: statistics.fmean(r[key] for r in rows) for key in rows[0]}
        table.append(
            ModeScores(
                mode=mode,
                queries=len(rows),
                ndcg_10=mean["ndcg_10"],
                recall_10=mean["recall_10"],
                recall_100=mean["recall_100"],
                mrr_10=mean["mrr_10"],
                hit={k: mean[f"hit_{k}"] for k in HIT_AT},
                latency_ms_p50=statistics.median(times),
                latency_ms_mean=statistics.fmean(times),
                per_kind_hit_5={kind: statistics.fmean(v) for kind, v in sorted(kinds.items())},
            )
        )
    engine.reranker = reranker
    return table


def markdown_table(scores: list[ModeScores]) -> str:
    """The scores as a Markdown table."""
    head = "| mode | queries | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | " + " | ".join(
        f"Hit@{k}" for k in HIT_AT
    )
    head += " | p50 ms |"
    lines = [head, "|" + "---|" * (7 + len(HIT_AT))]
    for s in scores:
        hits = " | ".join(f"{s.hit[k]:.3f}" for k in HIT_AT)
        lines.append(
            f"| {s.mode} | {s.queries} | {s.ndcg_10:.3f} | {s.recall_10:.3f} | {s.recall_100:.3f} | "
            f"{s.mrr_10:.3f} | {hits} | {s.latency_ms_p50:.1f} |"
        )
    kinds = sorted({k for s in scores for k in s.per_kind_hit_5})
    if kinds:
        lines += [
            "",
            "| mode | " + " | ".join(f"Hit@5 {k}" for k in kinds) + " |",
            "|" + "---|" * (1 + len(kinds)),
        ]
        for s in scores:
            lines.append(
                f"| {s.mode} | "
                + " | ".join(f"{s.per_kind_hit_5.get(k, 0):.3f}" for k in kinds)
                + " |"
            )
    return "\n".join(lines)


def as_json(scores: list[ModeScores]) -> list[dict[str, Any]]:
    """The scores as plain data."""
    return [asdict(s) for s in scores]
