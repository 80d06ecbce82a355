"""Hybrid search: exact vector search and BM25, fused (convex combination or RRF), optionally reranked.

Every answer says which retrievers produced it and carries notes when it was degraded (no
embedder: keyword only; no full-text index: vector only; reranker failed: fused order).
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

from .catalog import FilterError
from .codeterms import looks_like_code
from .config import SearchSettings
from .context import merge_chunks
from .query_embedder import EmbedderUnavailable, QueryEmbedder
from .rerank import Reranker, RerankError
from .store import ChunkStore
from .tokens import TokenCounter

Mode = Literal["hybrid", "vector", "keyword"]
Key = TypeVar("Key", int, tuple[int, int])
MODES: tuple[str, ...] = ("hybrid", "vector", "keyword")
MODEL_MATCH_COSINE = 0.99
MAX_NEIGHBORS = 5
WORDED_LIKE_THE_DOCS = 0.5  # share of the query's terms one of the best keyword passages holds
COVERAGE_DEPTH = 3  # keyword passages looked at for that
FLAT_AT = 5  # a weak answer: the best vector score is close to this rank's
NEAREST_SECTIONS = 5  # other sections a weak answer names
NEAREST_BATCHES = (15, 60)  # fused candidates after the results looked through for them


def min_max(candidates: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Scores mapped to [0, 1] over the list (best 1, worst 0; all 1 when they are equal)."""
    if not candidates:
        return []
    scores = [score for _, score in candidates]
    low, span = min(scores), max(scores) - min(scores)
    return [(row, (score - low) / span if span else 1.0) for row, score in candidates]


class SearchInputError(ValueError):
    """The request itself is unusable (empty query, unknown mode, bad ``top_k``)."""


@dataclass
class SearchResult:
    """One chunk in an answer."""

    chunk_id: str
    document_id: str
    path: str
    title: str
    section_hierarchy: list[str]
    url: str | None
    section_url: str | None
    content: str
    score: float
    page: int | None
    chunk_index: int
    retrievers: dict[str, int]  # retriever -> rank (1-based) in its own candidate list
    chunk_range: list[int] | None = None  # first and last chunk_index merged in (neighbours)
    tokens: int | None = None  # wordpieces of content (when a token budget was asked for)
    version: str | None = None  # the documentation version (None on a server without versions)
    library: str | None = None  # the library it is from (a hub's answers only)


@dataclass
class SectionRef:
    """A section an answer points to without quoting it."""

    path: str
    title: str
    section_hierarchy: list[str]
    page: int | None = None
    version: str | None = None
    library: str | None = None  # a hub's answers only


def other_sections(
    shown: list[SearchResult], after: list[SearchResult], limit: int = NEAREST_SECTIONS
) -> list[SectionRef]:
    """The first ``limit`` sections of ``after`` (best first) that no result in ``shown`` is from."""
    key = lambda r: (r.library, r.path, tuple(r.section_hierarchy), r.page, r.version)  # noqa: E731
    seen = {key(result) for result in shown}
    found = []
    for result in after:
        if key(result) in seen:
            continue
        seen.add(key(result))
        found.append(
            SectionRef(
                result.path,
                result.title,
                result.section_hierarchy,
                result.page,
                result.version,
                result.library,
            )
        )
        if len(found) == limit:
            break
    return found


@dataclass
class SearchResponse:
    """An answer: results best first, and how it was produced."""

    query: str
    mode: str
    results: list[SearchResult]
    retrievers: list[str]
    degraded: bool = False
    notes: list[str] = field(default_factory=list)
    took_ms: float = 0.0
    version: str | None = None  # the version searched; None: every version (or none labelled)
    filters: dict[str, str] = field(default_factory=dict)  # path and section, when given
    weak: bool = False  # no passage stands out: the best vector scores are flat
    nearest_sections: list[SectionRef] = field(
        default_factory=list
    )  # when weak: where else to look

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return asdict(self)


def fuse(
    lists: dict[str, list[tuple[Key, float]]],
    weights: dict[str, float] | None,
    settings: SearchSettings,
) -> list[tuple[Key, float, dict[str, int]]]:
    """Fuse the retrievers' candidate lists (``settings.fusion``) with ``weights`` (default: the
    configured ones). Candidates are any sortable keys: rows of one database, or (library, row).

    ``convex``: sum of weight * min-max normalized score, a candidate missing from a list scoring 0
    there; ``rrf``: sum of weight / (rrf_k + rank). One retriever keeps its own scores.
    """
    weights = weights or {"vector": settings.vector_weight, "keyword": settings.keyword_weight}
    ranks: dict[Key, dict[str, int]] = {}
    for name, candidates in lists.items():
        for rank, (key, _) in enumerate(candidates, start=1):
            ranks.setdefault(key, {})[name] = rank
    if len(lists) == 1:  # one retriever: keep its own score, more telling than a fused one
        only = next(iter(lists.values()))
        return [(key, score, ranks[key]) for key, score in only]
    scores: dict[Key, float] = dict.fromkeys(ranks, 0.0)
    for name, candidates in lists.items():
        if settings.fusion == "rrf":
            for rank, (key, _) in enumerate(candidates, start=1):
                scores[key] += weights[name] / (settings.rrf_k + rank)
        else:
            for key, normalized in min_max(candidates):
                scores[key] += weights[name] * normalized
    ordered = sorted(scores, key=lambda key: (-scores[key], key))
    return [(key, scores[key], ranks[key]) for key in ordered]


def within_budget(
    counter: TokenCounter | None, results: list[SearchResult], budget: int, notes: list[str]
) -> list[SearchResult]:
    """The best results whose content fits ``budget`` tokens (the first is cut if it alone is
    over), counted with ``counter``."""
    if counter is None:
        raise SearchInputError(
            "max_tokens needs the model's tokenizer, which this server could not load"
        )
    kept: list[SearchResult] = []
    used = 0
    for result in results:
        tokens = counter.count(result.content)
        if used + tokens > budget:
            if not kept:
                result.content = counter.truncate(result.content, budget)
                result.tokens = counter.count(result.content)
                kept.append(result)
                used += result.tokens
                notes.append(f"the best result was cut to fit max_tokens={budget}")
            break
        result.tokens = tokens
        kept.append(result)
        used += tokens
    notes.append(f"token budget {budget}: {len(kept)} of {len(results)} results, {used} tokens")
    return kept


@dataclass
class Candidates:
    """One request's candidates from each retriever, before fusion, and what the answer will say
    about them."""

    query: str  # as searched (whitespace collapsed, maybe cut)
    mode: str
    top_k: int
    lists: dict[str, list[tuple[int, float]]]  # retriever -> (row, score), best first
    weights: dict[str, float] | None  # fusion weights for this query (None: the configured)
    notes: list[str]
    version: str | None
    filters: dict[str, str]
    weak: bool  # no passage stands out (see SearchEngine.is_weak)

    @property
    def degraded_retrievers(self) -> bool:
        """Whether a retriever the mode asks for did not answer."""
        requested = {"hybrid": {"vector", "keyword"}, "vector": {"vector"}}.get(
            self.mode, {"keyword"}
        )
        return not requested <= set(self.lists)

    def response(
        self,
        results: list[SearchResult],
        nearest: list[SectionRef],
        reranked: bool,
        started: float,
    ) -> SearchResponse:
        """The answer with these ``results``, timed from ``started`` (``time.perf_counter``)."""
        return SearchResponse(
            self.query,
            self.mode,
            results,
            sorted(self.lists),
            self.degraded_retrievers or not reranked,
            self.notes,
            round((time.perf_counter() - started) * 1000, 2),
            self.version,
            self.filters,
            self.weak,
            nearest,
        )


class SearchEngine:
    """Searches one :class:`ChunkStore` with a query embedder and an optional reranker."""

    def __init__(
        self,
        store: ChunkStore,
        embedder: QueryEmbedder,
        settings: SearchSettings,
        reranker: Reranker | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.reranker = reranker
        self.token_counter = token_counter
        self.model_checked = False
        self.model_mismatch: str | None = None

    # -- retrievers ---------------------------------------------------------------------------

    def vector_candidates(
        self, vector: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` rows by cosine similarity, among the rows ``mask`` keeps."""
        return self.store.vectors.search(vector, k, mask)

    def keyword_candidates(
        self, query: str, k: int, mask: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` rows by BM25 among the rows ``mask`` keeps; only rows that match at least
        one query term."""
        if self.store.keywords is None:
            return []
        return self._keyword_search(self.store.query_terms(query), k, mask)

    def _keyword_search(
        self, terms: list[str], k: int, mask: np.ndarray | None
    ) -> list[tuple[int, float]]:
        assert self.store.keywords is not None
        return self.store.keywords.search(terms, k, mask, self.settings.keyword_postings_cap)

    def fusion_weights(
        self, query: str, terms: list[str], keyword: list[tuple[int, float]]
    ) -> dict[str, float]:
        """The retrievers' weights for this query. A question in plain words, one that names no
        code and whose terms no top keyword passage mostly holds, describes a situation in the
        asker's words: keyword matches on those words are weak evidence, so it leans on vectors
        (``prose_keyword_weight``)."""
        weights = {"vector": self.settings.vector_weight, "keyword": self.settings.keyword_weight}
        prose = self.settings.prose_keyword_weight
        if prose is None or looks_like_code(query) or self.store.keywords is None:
            return weights
        best = [row for row, _ in keyword[:COVERAGE_DEPTH]]
        cap = self.settings.keyword_postings_cap
        if self.store.keywords.coverage(terms, best, cap) >= WORDED_LIKE_THE_DOCS:
            return weights
        return {**weights, "keyword": prose}

    def is_weak(self, vector: list[tuple[int, float]]) -> bool:
        """Whether no passage stands out: the best vector score is within ``weak_margin`` of the
        ``FLAT_AT``-th (many passages about equally near the question, none clearly about it)."""
        margin = self.settings.weak_margin
        if margin is None or len(vector) < FLAT_AT:
            return False
        return vector[0][1] - vector[FLAT_AT - 1][1] < margin

    def nearest_sections(self, shown: list[SearchResult], after: list[int]) -> list[SectionRef]:
        """The first sections of the ranked rows ``after`` that no result in ``shown`` is from
        (read in two batches: the first usually names enough)."""
        catalog, refs, start = self.store.catalog, [], 0
        for end in NEAREST_BATCHES:
            batch = after[start:end]
            found = self.store.sections_at(batch)
            for row in batch:
                doc = catalog.documents[int(catalog.doc_of_row[row])]
                hierarchy, page = found[row]
                refs.append(SectionRef(doc.path, doc.title, hierarchy, page, doc.version))
            nearest = other_sections(shown, refs)
            if len(nearest) == NEAREST_SECTIONS or end >= len(after):
                return nearest
            start = end
        return nearest

    # -- the vector path's health -------------------------------------------------------------

    def query_vector(self, query: str, notes: list[str]) -> np.ndarray | None:
        """The query's vector, or None (with a note) when vector search cannot run now."""
        if self.model_mismatch:
            notes.append(self.model_mismatch)
            return None
        try:
            if not self.model_checked:
                self.check_model()
                if self.model_mismatch:
                    notes.append(self.model_mismatch)
                    return None
            return self.embedder.embed(query)
        except EmbedderUnavailable as exc:
            notes.append(f"vector search unavailable ({exc}); answered by keyword search only")
            return None

    def check_model(self) -> None:
        """Compare the embedder with the model the database was built with (a probe vector)."""
        info = self.store.info
        probe_text, probe = info.probe_text, info.probe_vector
        if not probe_text or not probe:
            self.model_checked = True
            return
        vector = self.embedder.embed(probe_text)
        if vector.shape[0] != len(probe):
            cosine = -1.0
        else:
            cosine = float(np.dot(vector, np.asarray(probe, dtype=np.float32)))
        if cosine < MODEL_MATCH_COSINE:
            self.model_mismatch = (
                f"the query embedder ({self.embedder.description}) does not match the model this database "
                f"was built with ({info.model_id}, {info.dimension}-d; probe cosine {cosine:.3f}); "
                "vector search is off, answered by keyword search only"
            )
            print(self.model_mismatch, file=sys.stderr)
        # only now: a concurrent search that sees model_checked must also see model_mismatch
        self.model_checked = True

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        top_k: int | None = None,
        mode: str = "hybrid",
        neighbors: int = 0,
        max_tokens: int | None = None,
        path: str | None = None,
        section: str | None = None,
        version: str | None = None,
    ) -> SearchResponse:
        """Search; raises :class:`SearchInputError` for an unusable request.

        ``path`` (a glob or folder prefix), ``section`` (words of the title or headings) and
        ``version`` (a label, ``"all"``, or None for the default) narrow the rows before ranking.
        ``neighbors`` merges that many chunks before and after each hit (same document) into its
        content; ``max_tokens`` keeps the best results until their content reaches the budget.
        """
        started = time.perf_counter()
        found = self.candidates(query, top_k, mode, neighbors, max_tokens, path, section, version)
        fused = fuse(found.lists, found.weights, self.settings)
        reranked = True
        if self.reranker is not None and fused:
            fused, reranked = self._rerank(found.query, fused, found.notes)
        top_k = found.top_k
        results = self.results_at(fused[:top_k])
        nearest = (
            self.nearest_sections(results, [row for row, _, _ in fused[top_k:]])
            if found.weak
            else []
        )
        if neighbors:
            results = self.expand(results, [row for row, _, _ in fused[:top_k]], neighbors)
        if max_tokens is not None:
            results = within_budget(self.token_counter, results, max_tokens, found.notes)
        return found.response(results, nearest, reranked, started)

    def candidates(
        self,
        query: str,
        top_k: int | None = None,
        mode: str = "hybrid",
        neighbors: int = 0,
        max_tokens: int | None = None,
        path: str | None = None,
        section: str | None = None,
        version: str | None = None,
    ) -> Candidates:
        """Each retriever's candidates for a request, with the fusion weights for it (the
        arguments are :meth:`search`'s, checked here)."""
        notes: list[str] = []
        query, top_k = self._validate(query, top_k, mode, notes)
        try:
            version = self.store.catalog.resolve_version(version)
            mask = self.store.catalog.mask(version, path, section)
        except FilterError as exc:
            raise SearchInputError(str(exc)) from None
        if not 0 <= neighbors <= MAX_NEIGHBORS:
            raise SearchInputError(
                f"neighbors must be between 0 and {MAX_NEIGHBORS} (got {neighbors})"
            )
        if max_tokens is not None and max_tokens < 1:
            raise SearchInputError(f"max_tokens must be at least 1 (got {max_tokens})")
        if max_tokens is not None and self.token_counter is None:
            raise SearchInputError(
                "max_tokens needs the model's tokenizer, which this server could not load"
            )
        depth = max(self.settings.candidates, top_k)
        if self.reranker is not None:
            depth = max(depth, self.reranker.candidates)
        lists: dict[str, list[tuple[int, float]]] = {}
        terms: list[str] = []
        want_keyword = mode in ("hybrid", "keyword")
        if mode in ("hybrid", "vector"):
            vector = self.query_vector(query, notes)
            if vector is not None:
                lists["vector"] = self.vector_candidates(vector, depth, mask)
            elif mode == "vector":
                want_keyword = True
        if want_keyword:
            if self.store.keywords is not None:
                terms = self.store.query_terms(query)
                lists["keyword"] = self._keyword_search(terms, depth, mask)
            else:
                notes.append("the database has no full-text index; answered by vector search only")
                if mode == "keyword" and (vector := self.query_vector(query, notes)) is not None:
                    lists["vector"] = self.vector_candidates(vector, depth, mask)
        weights = None
        if len(lists) == 2:
            weights = self.fusion_weights(query, terms, lists["keyword"])
        filters = {k: v for k, v in (("path", path), ("section", section)) if v}
        weak = "vector" in lists and self.is_weak(lists["vector"])
        return Candidates(query, mode, top_k, lists, weights, notes, version, filters, weak)

    def _validate(
        self, query: str, top_k: int | None, mode: str, notes: list[str]
    ) -> tuple[str, int]:
        if not isinstance(query, str) or not query.strip():
            raise SearchInputError("query is empty: pass the words or question to search for")
        if mode not in MODES:
            raise SearchInputError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
        top_k = self.settings.top_k if top_k is None else top_k
        if top_k < 1:
            raise SearchInputError(f"top_k must be at least 1 (got {top_k})")
        if top_k > self.settings.max_top_k:
            notes.append(f"top_k {top_k} capped at {self.settings.max_top_k}")
            top_k = self.settings.max_top_k
        query = " ".join(query.split())
        if len(query) > self.settings.max_query_chars:
            notes.append(f"query cut to its first {self.settings.max_query_chars} characters")
            query = query[: self.settings.max_query_chars]
        return query, top_k

    def _rerank(
        self, query: str, fused: list[tuple[int, float, dict[str, int]]], notes: list[str]
    ) -> tuple[list[tuple[int, float, dict[str, int]]], bool]:
        """Rerank the head of the fused list; on failure keep the fused order (returns ok flag)."""
        assert self.reranker is not None
        head = fused[: self.reranker.candidates]
        rows = self.store.rows_at([row for row, _, _ in head])
        texts = [rows[row]["content"] for row, _, _ in head]
        try:
            scores = self.reranker.score(query, texts)
        except RerankError as exc:
            notes.append(f"reranker failed ({exc}); results are in fused order")
            print(f"reranker failed: {exc}", file=sys.stderr)
            return fused, False
        order = sorted(range(len(head)), key=lambda i: -scores[i])
        reranked = [
            (head[i][0], float(scores[i]), {**head[i][2], "rerank": n})
            for n, i in enumerate(order, 1)
        ]
        return reranked + fused[len(head) :], True

    def expand(self, results: list[SearchResult], rows: list[int], n: int) -> list[SearchResult]:
        """Merge up to ``n`` neighbours on each side into each hit, never repeating a chunk that an
        earlier (better) hit already carries; a hit inside an earlier window is dropped."""
        covered: dict[str, set[int]] = {}
        expanded = []
        for result, row in zip(results, rows, strict=True):
            seen = covered.setdefault(result.document_id, set())
            if result.chunk_index in seen:
                continue
            window = [
                near for near in self.store.neighbours(row, n, n) if near["chunk_index"] not in seen
            ]
            position = next(
                i for i, row in enumerate(window) if row["chunk_index"] == result.chunk_index
            )
            low = high = position
            while low > 0 and window[low - 1]["chunk_index"] == window[low]["chunk_index"] - 1:
                low -= 1
            while (
                high < len(window) - 1
                and window[high + 1]["chunk_index"] == window[high]["chunk_index"] + 1
            ):
                high += 1
            window = window[low : high + 1]
            result.content = merge_chunks([row["content"] for row in window])
            result.chunk_range = [window[0]["chunk_index"], window[-1]["chunk_index"]]
            seen.update(row["chunk_index"] for row in window)
            expanded.append(result)
        return expanded

    def results_at(self, fused: list[tuple[int, float, dict[str, int]]]) -> list[SearchResult]:
        """The results for fused rows, in their order."""
        rows = self.store.rows_at([row for row, _, _ in fused])
        results = []
        for row, score, ranks in fused:
            data = rows[row]
            results.append(
                SearchResult(
                    chunk_id=data["chunk_id"],
                    document_id=data["document_id"],
                    path=data["path"],
                    title=data["title"],
                    section_hierarchy=list(data["section_hierarchy"] or []),
                    url=data["url"],
                    section_url=data["section_url"],
                    content=data["content"],
                    score=round(score, 6),
                    page=data["page"],
                    chunk_index=data["chunk_index"],
                    retrievers=ranks,
                    version=data["version"],
                )
            )
        return results
