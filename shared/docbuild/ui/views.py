"""What the search playground and the chunk browser show, as plain data over a server's engine.

The playground runs one question through keyword, vector and hybrid search with the server's
own settings and filters, and gives each result its rank in every retriever, its score there,
and the text the MCP ``search`` tool would send a model. The browser lays out one document's
sections and chunks in order, with token counts and the text each chunk repeats from the one
before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from docserve.answers import AnswerError, Answers
from docserve.catalog import FilterError
from docserve.context import overlap_length
from docserve.reading import HeadingSpan, sections_of
from docserve.render import Counter, breadcrumb
from docserve.search import MODES, SearchEngine, SearchInputError, SearchResult

MAX_QUERY_CHARS = 2000
PREVIEW_CHARS = 600


class BadRequest(ValueError):
    """A query the playground cannot run; the message says why."""


@dataclass
class Hit:
    """One result of one mode, with what each retriever made of it."""

    rank: int
    path: str
    document_id: str | None  # set when the path holds several documents (JSONL records)
    version: str | None
    crumbs: str
    chunk_index: int
    page: int | None
    preview: str
    ranks: dict[str, int]  # retriever -> rank among its candidates
    vector_score: float | None  # cosine with the query
    keyword_score: float | None  # BM25 (None: not among the keyword candidates)
    score: float  # what the mode ranked by


@dataclass
class Column:
    """One mode's answer."""

    mode: str
    hits: list[Hit]
    took_ms: float
    notes: list[str] = field(default_factory=list)


@dataclass
class Playground:
    """Every mode's answer to one question, and the tool text a model would read."""

    query: str
    columns: list[Column]
    tool_text: str
    tool_ms: float
    no_vector: bool  # the query could not be embedded: every mode searched by keyword


def run_playground(
    engine: SearchEngine,
    cap: int,
    counter: Counter,
    query: str,
    mode: str | None = None,
    path: str | None = None,
    section: str | None = None,
    version: str | None = None,
    top_k: int = 10,
) -> Playground:
    """Search ``query`` in every mode (or one), with the filters; raises :class:`BadRequest`."""
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(
            f"the question is {len(query)} characters; keep it under {MAX_QUERY_CHARS}"
        )
    if mode and mode not in MODES:
        raise BadRequest(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    filters = {"path": path or None, "section": section or None, "version": version or None}
    try:
        resolved = engine.store.catalog.resolve_version(filters["version"])
        mask = engine.store.catalog.mask(resolved, filters["path"], filters["section"])
    except FilterError as exc:
        raise BadRequest(str(exc)) from None
    notes: list[str] = []
    vector = engine.query_vector(query, notes)
    keyword = dict(engine.keyword_candidates(query, engine.settings.candidates, mask))
    columns = []
    for each in [mode] if mode else list(MODES):
        try:
            response = engine.search(query, top_k, each, **filters)
        except SearchInputError as exc:
            raise BadRequest(str(exc)) from None
        hits = [
            _hit(engine, n, result, vector, keyword) for n, result in enumerate(response.results, 1)
        ]
        columns.append(Column(each, hits, response.took_ms, response.notes))
    answers = Answers(engine, counter, cap)
    try:
        answer = answers.search(query, mode=mode or "hybrid", **filters)
    except AnswerError as exc:
        raise BadRequest(str(exc)) from None
    return Playground(query, columns, answer.text, answer.data["took_ms"], vector is None)


def _hit(
    engine: SearchEngine,
    rank: int,
    result: SearchResult,
    vector: np.ndarray | None,
    keyword: dict[int, float],
) -> Hit:
    row = engine.store.row_of(result.chunk_id)
    cosine = None
    if vector is not None and row is not None:
        index = engine.store.vectors
        cosine = float(index.vectors[index.position[row]] @ vector)
    preview = (
        result.content
        if len(result.content) <= PREVIEW_CHARS
        else result.content[:PREVIEW_CHARS] + " …"
    )
    return Hit(
        rank=rank,
        path=result.path,
        document_id=record_id(result.document_id, result.path, result.version),
        version=result.version,
        crumbs=breadcrumb(result.title, result.section_hierarchy),
        chunk_index=result.chunk_index,
        page=result.page,
        preview=preview,
        ranks=dict(result.retrievers),
        vector_score=cosine,
        keyword_score=keyword.get(row) if row is not None else None,
        score=result.score,
    )


@dataclass
class ChunkView:
    """One chunk as the browser shows it."""

    index: int
    crumbs: str
    tokens: int | None
    page: int | None
    repeated: str  # its opening that the previous chunk already ended with
    fresh: str  # the rest
    has_code: bool


@dataclass
class DocumentView:
    """A document's outline and chunks, and its source text when it is a readable file."""

    path: str
    title: str
    version: str | None
    url: str | None
    sections: list[HeadingSpan]
    chunks: list[ChunkView]
    source: str | None
    source_note: str


def record_id(document_id: str, path: str, version: str | None) -> str | None:
    """``document_id`` when it is not the file's own (a JSONL record's), else None."""
    return None if document_id in (path, f"{version}/{path}") else document_id


def document_view(
    engine: SearchEngine,
    path: str,
    version: str | None,
    source: Path | None,
    document_id: str | None = None,
) -> DocumentView:
    """The document at ``path`` (one record, ``document_id``, of a file holding several; raises
    FilterError when there is none); ``source`` is its file (None when it cannot be shown)."""
    catalog = engine.store.catalog
    doc = catalog.document(path, catalog.resolve_version(version), document_id)
    rows = engine.store.document_rows(doc.document_id)
    chunks, previous = [], ""
    for row in rows:
        content = row["content"] or ""
        size = overlap_length(previous, content) if previous else 0
        chunks.append(
            ChunkView(
                index=row["chunk_index"],
                crumbs=breadcrumb(row["title"] or "", row["section_hierarchy"]),
                tokens=row.get("token_count"),
                page=row["page"],
                repeated=content[:size],
                fresh=content[size:],
                has_code=bool(row.get("has_code")),
            )
        )
        previous = content
    text, note = _source_text(source, doc.path)
    return DocumentView(
        doc.path, doc.title, doc.version, doc.url, sections_of(rows), chunks, text, note
    )


SOURCE_LIMIT = 2_000_000  # bytes of source shown beside the chunks


def _source_text(source: Path | None, path: str) -> tuple[str | None, str]:
    """The source file's text and a note, or None and why it is not shown."""
    if source is None:
        return None, "the source file is not in the server's source folder"
    if path.lower().endswith(".pdf"):
        return None, "a PDF: each chunk shows the page it came from"
    try:
        data = source.read_bytes()[:SOURCE_LIMIT]
    except OSError as exc:
        return None, f"the source file cannot be read ({exc.strerror})"
    return data.decode("utf-8", errors="replace"), str(source.name)
