"""Measure retrieval quality of a built server at document and at section level.

Query sets: BEIR (``queries.jsonl`` + ``qrels/<split>.tsv``) or a JSONL of
``{id, query, kind, relevant: [{path, heading, page, evidence}]}`` (see ``tests/eval/README.md``).

Document level (nDCG@10, Recall@10/100, MRR@10, Hit@k): chunk results are aggregated to documents
(a document ranks where its best chunk ranks); a judgement that names a PDF page is scored at
page level (``path#page=N``), otherwise per document (``path``, or the BEIR document id). A path
written without its extension (``library/csv``) matches that page in any format
(``library/csv.rst``, ``library/csv.html``), so one query set serves builds of both.

Section level (Hit@k, MRR@10), the headline: the passages as a client gets them, in order; a
passage answers when it comes from a relevant page and from the section that answers there: the
section's heading is in the passage's breadcrumb (no heading: the page's untitled opening), or
the answer's own words (``evidence``) are in the passage. For PDFs the section is the page.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
import unicodedata
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from docserve.config import load_settings
from docserve.folder import ServerFolder
from docserve.query_embedder import Encoder, QueryEmbedder
from docserve.rerank import make_reranker
from docserve.search import SearchEngine, SearchResult, SectionRef, other_sections
from docserve.store import ChunkStore

from docbuild.formats import EXTENSIONS

HIT_AT = (1, 3, 5, 10)
HISTORY_FILE = "history.jsonl"  # in servers/NAME/eval/: one line per eval run
SHOWN = 5  # passages a client gets by default (the weak-answer figures assume this top_k)
DEPTH = 100
KINDS = ("keyword", "howto", "paraphrase")
NUMBERING = re.compile(
    r"^(?:(?:chapter|appendix|part)\s+\w+\.?\s+|(?:\d+\.)+\d*\s+|\d+\s+(?=\D))", re.I
)


@dataclass(frozen=True)
class Target:
    """Where an answer is: a page (``path``, maybe without extension), the heading of the section
    that answers (None: the page's untitled opening), the PDF page, and the answer's own words."""

    path: str
    heading: str | None = None
    page: int | None = None
    evidence: str | None = None


@dataclass
class Judged:
    """One evaluation query and its relevant documents (key → graded relevance)."""

    query_id: str
    text: str
    relevant: dict[str, float]
    kind: str = ""
    by: str = "document"  # "document" (BEIR id), "path", "stem" (path without extension), "page"
    targets: list[Target] = field(default_factory=list)  # for section level; none for BEIR


@dataclass
class KindScores:
    """One question kind's figures in one mode."""

    queries: int
    hit_5: float
    mrr_10: float
    section_hit_5: float | None
    section_mrr_10: float | None


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
    section_hit: dict[int, float] | None = None  # None: the set has no sections (BEIR)
    section_mrr_10: float | None = None
    per_kind: dict[str, KindScores] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)  # ids answered by no passage of the top 5
    weak: int = 0  # answers in which no passage stood out (they name the nearest other sections)
    weak_missed: int = 0  # of those, answers whose first 5 passages miss the section
    weak_named: int = 0  # of those, answers that name the section among the nearest others


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
    """Queries written as ``{id, query, kind, relevant: [{path, heading, page, evidence}]}``;
    a record without a known ``kind`` or without ``relevant`` entries is a ValueError naming it."""
    judged = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        name = f"{path.name}:{number} ({record.get('id', 'no id')})"
        if record.get("kind") not in KINDS:
            raise ValueError(f"{name}: 'kind' must be one of {', '.join(KINDS)}")
        entries = record.get("relevant") or []
        if not entries or not all(e.get("path") for e in entries):
            raise ValueError(f"{name}: 'relevant' needs at least one entry, each with a path")
        targets = [
            Target(e["path"], e.get("heading"), e.get("page"), e.get("evidence")) for e in entries
        ]
        by_page = any(t.page for t in targets)
        by_stem = not by_page and all(strip_extension(t.path) == t.path for t in targets)
        keys = {page_key(t.path, t.page) if by_page else t.path: 1.0 for t in targets}
        by = "page" if by_page else "stem" if by_stem else "path"
        judged.append(Judged(str(record["id"]), record["query"], keys, record["kind"], by, targets))
    return judged


def strip_extension(path: str) -> str:
    """``path`` without a source format's extension (``library/os.path.rst`` → ``library/os.path``)."""
    suffix = PurePosixPath(path).suffix.lower()
    return path[: -len(suffix)] if suffix in EXTENSIONS else path


def page_key(path: str, page: int | None) -> str:
    """The key of a PDF page (or of a whole document when ``page`` is None)."""
    return f"{path}#page={page}" if page else path


def heading_key(heading: str) -> str:
    """A heading as compared between a question set and a breadcrumb: without inline markup,
    section numbers (``3.2. Reflogs``, ``Chapter 8. Submodules``), pilcrows and case."""
    text = unicodedata.normalize("NFKC", heading).replace("¶", " ")
    text = re.sub(r"[`*]", "", text)
    text = NUMBERING.sub("", " ".join(text.split()))
    return text.casefold().strip()


def plain(text: str) -> str:
    """Text as compared for evidence: case-folded, markup quotes dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).replace("`", "").replace("*", "")
    return " ".join(text.split()).casefold()


def result_key(result: SearchResult, by: str) -> str:
    """The key a result counts under for a judgement of kind ``by``."""
    if by == "page":
        return page_key(result.path, result.page)
    if by == "stem":
        return strip_extension(result.path)
    return result.path if by == "path" else result.document_id


def same_page(path: str, target: Target, by: str) -> bool:
    """Whether ``path`` is ``target``'s page (by stem when the set is judged by stem)."""
    return (strip_extension(path) if by == "stem" else path) == target.path


def is_section(section: SearchResult | SectionRef, target: Target, by: str) -> bool:
    """Whether a passage's or a named section's page and breadcrumb are ``target``'s section."""
    if not same_page(section.path, target, by):
        return False
    if by == "page":
        return section.page == target.page
    headings = section.section_hierarchy
    if target.heading is None:
        return len(headings) <= 1  # the page title alone: the untitled opening
    return heading_key(target.heading) in {heading_key(h) for h in headings}


def answers(result: SearchResult, target: Target, by: str) -> bool:
    """Whether the passage comes from ``target``'s page and the section that answers there."""
    quoted = (
        by != "page"
        and bool(target.evidence)
        and same_page(result.path, target, by)
        and plain(target.evidence or "") in plain(result.content)
    )
    return quoted or is_section(result, target, by)


def section_ranks(results: list[SearchResult], query: Judged, k: int = 10) -> list[bool]:
    """For each of the first ``k`` passages, whether it answers ``query`` at section level."""
    return [any(answers(r, t, query.by) for t in query.targets) for r in results[:k]]


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
    """All document-level metrics for one query."""
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


def score_sections(hits: list[bool]) -> dict[str, float]:
    """Section-level Hit@k and MRR@10 of one query from its passages' hits (first 10)."""
    first = hits.index(True) + 1 if True in hits else None
    scores = {"section_mrr_10": 1.0 / first if first else 0.0}
    scores.update({f"section_hit_{k}": float(bool(first and first <= k)) for k in HIT_AT})
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
    embedder = QueryEmbedder(
        settings.embedding, ServerFolder(server_root, server_root.name).model, encoder
    )
    reranker = make_reranker(settings.rerank) if rerank else None
    return SearchEngine(store, embedder, settings.search, reranker)


def evaluate(engine: SearchEngine, judged: list[Judged], modes: list[str]) -> list[ModeScores]:
    """Run every query in every mode (adding ``hybrid+rerank`` when a reranker is configured);
    returns averages per mode, per question kind too."""
    table = []
    reranker = engine.reranker
    if reranker is not None and "hybrid+rerank" not in modes:
        modes = [*modes, "hybrid+rerank"]
    for mode in modes:
        engine.reranker = reranker if mode == "hybrid+rerank" else None
        rows, times = [], []
        search_mode = "hybrid" if mode == "hybrid+rerank" else mode
        for query in judged:
            start = time.perf_counter()
            response = engine.search(query.text, DEPTH * 3, search_mode)
            times.append((time.perf_counter() - start) * 1000)
            metrics = score_query(ranked_documents(response.results, query.by), query.relevant)
            if query.targets:
                metrics |= score_sections(section_ranks(response.results, query))
                metrics |= weak_answer(response.weak, response.results, query)
            rows.append(metrics)
        table.append(mode_scores(mode, judged, rows, times))
    engine.reranker = reranker
    return table


def weak_answer(weak: bool, results: list[SearchResult], query: Judged) -> dict[str, float]:
    """For an answer of the first ``SHOWN`` of ``results`` in which no passage stood out: whether
    it missed the section, and whether the nearest other sections it names hold it."""
    if not weak:
        return {}
    shown = results[:SHOWN]
    missed = not any(section_ranks(shown, query, SHOWN))
    named = missed and any(
        is_section(section, target, query.by)
        for section in other_sections(shown, results[SHOWN:])
        for target in query.targets
    )
    return {"weak": 1.0, "weak_missed": float(missed), "weak_named": float(named)}


def mode_scores(
    mode: str, judged: list[Judged], rows: list[dict[str, float]], times: list[float]
) -> ModeScores:
    """Averages of one mode's per-query metrics, overall and per kind."""
    mean = lambda key, of=rows: statistics.fmean(r[key] for r in of)  # noqa: E731
    sections = all("section_mrr_10" in r for r in rows)
    kinds: dict[str, list[dict[str, float]]] = {}
    for query, metrics in zip(judged, rows, strict=True):
        if query.kind:
            kinds.setdefault(query.kind, []).append(metrics)
    per_kind = {
        kind: KindScores(
            queries=len(of),
            hit_5=mean("hit_5", of),
            mrr_10=mean("mrr_10", of),
            section_hit_5=mean("section_hit_5", of) if sections else None,
            section_mrr_10=mean("section_mrr_10", of) if sections else None,
        )
        for kind, of in sorted(kinds.items(), key=lambda item: KINDS.index(item[0]))
    }
    hit_key = "section_hit_5" if sections else "hit_5"
    return ModeScores(
        mode=mode,
        queries=len(rows),
        ndcg_10=mean("ndcg_10"),
        recall_10=mean("recall_10"),
        recall_100=mean("recall_100"),
        mrr_10=mean("mrr_10"),
        hit={k: mean(f"hit_{k}") for k in HIT_AT},
        latency_ms_p50=statistics.median(times),
        latency_ms_mean=statistics.fmean(times),
        section_hit={k: mean(f"section_hit_{k}") for k in HIT_AT} if sections else None,
        section_mrr_10=mean("section_mrr_10") if sections else None,
        per_kind=per_kind,
        misses=[q.query_id for q, r in zip(judged, rows, strict=True) if not r[hit_key]],
        weak=round(sum(r.get("weak", 0.0) for r in rows)),
        weak_missed=round(sum(r.get("weak_missed", 0.0) for r in rows)),
        weak_named=round(sum(r.get("weak_named", 0.0) for r in rows)),
    )


def markdown_table(scores: list[ModeScores]) -> str:
    """The scores as Markdown: section level per kind first (when the set has sections), then
    document level."""
    lines = []
    kinds = [k for k in KINDS if any(k in s.per_kind for s in scores)]
    if any(s.section_hit for s in scores):
        lines += [
            "Section level (the passages as returned; the section that answers):",
            "",
            "| mode | queries | Hit@1 | Hit@3 | Hit@5 | Hit@10 | MRR@10 | "
            + " | ".join(f"{k} Hit@5 / MRR@10" for k in kinds)
            + " |",
            "|" + "---|" * (7 + len(kinds)),
        ]
        for s in scores:
            assert s.section_hit is not None and s.section_mrr_10 is not None
            by_kind = " | ".join(kind_cell(s, k, section=True) for k in kinds)
            hits = " | ".join(f"{s.section_hit[k]:.3f}" for k in HIT_AT)
            lines.append(
                f"| {s.mode} | {s.queries} | {hits} | {s.section_mrr_10:.3f} | {by_kind} |"
            )
        lines += (
            [""]
            + [weak_line(s) for s in scores if s.weak]
            + [
                "",
                "Document level (pages ranked by their best passage):",
                "",
            ]
        )
    head = "| mode | queries | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | " + " | ".join(
        f"Hit@{k}" for k in HIT_AT
    )
    head += " | p50 ms |"
    lines += [head, "|" + "---|" * (7 + len(HIT_AT))]
    for s in scores:
        hits = " | ".join(f"{s.hit[k]:.3f}" for k in HIT_AT)
        lines.append(
            f"| {s.mode} | {s.queries} | {s.ndcg_10:.3f} | {s.recall_10:.3f} | {s.recall_100:.3f} | "
            f"{s.mrr_10:.3f} | {hits} | {s.latency_ms_p50:.1f} |"
        )
    if kinds:
        lines += [
            "",
            "| mode | " + " | ".join(f"{k} Hit@5 / MRR@10" for k in kinds) + " |",
            "|" + "---|" * (1 + len(kinds)),
        ]
        for s in scores:
            lines.append(
                f"| {s.mode} | " + " | ".join(kind_cell(s, k, section=False) for k in kinds) + " |"
            )
    return "\n".join(lines)


def weak_line(scores: ModeScores) -> str:
    """How the answers in which no passage stood out fared, and what their named sections add."""
    return (
        f"- {scores.mode}: no passage stood out in {scores.weak} of {scores.queries} answers; "
        f"{scores.weak_missed} of those missed the section in their first {SHOWN} passages, and "
        f"{scores.weak_named} of these name it among the nearest other sections"
    )


def kind_cell(scores: ModeScores, kind: str, section: bool) -> str:
    """``Hit@5 / MRR@10 (n)`` of one kind, at section or document level."""
    of = scores.per_kind.get(kind)
    if of is None:
        return "-"
    hit, mrr = (of.section_hit_5, of.section_mrr_10) if section else (of.hit_5, of.mrr_10)
    return f"{hit:.3f} / {mrr:.3f} ({of.queries})"


def as_json(scores: list[ModeScores]) -> list[dict[str, Any]]:
    """The scores as plain data."""
    return [asdict(s) for s in scores]


def record_run(
    folder: Path, queries: str, count: int, scores: list[ModeScores], snapshot_id: object
) -> Path:
    """Append one eval run (its question set, the build it scored, every mode's scores) to
    ``folder/history.jsonl``, the record the quality page charts; returns that file."""
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "snapshot_id": snapshot_id,
        "queries": queries,
        "count": count,
        "scores": as_json(scores),
    }
    history = folder / HISTORY_FILE
    with history.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
    return history


def load_runs(folder: Path) -> list[dict[str, Any]]:
    """The eval runs recorded in ``folder/history.jsonl``, oldest first (unreadable lines are
    left out)."""
    try:
        lines = (folder / HISTORY_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    runs = []
    for line in lines:
        try:
            run = json.loads(line)
        except ValueError:
            continue
        if isinstance(run, dict) and isinstance(run.get("scores"), list):
            runs.append(run)
    return runs
