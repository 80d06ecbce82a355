"""Keyword search for code documentation: identifiers findable whole and by their words, versions
findable, prose still stemmed, and field weights that let a heading count more than body text."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import build_pages
from docserve.codeterms import code_terms, split_identifier
from docserve.config import EmbedderSettings, SearchSettings
from docserve.query_embedder import QueryEmbedder
from docserve.search import SearchEngine
from docserve.store import ChunkStore

PAGES = {
    "distance.md": "# Distances\n\nCall `array_cosine_distance(a, b)` on two arrays of floats.\n",
    "inline.md": "# Inlining\n\nMark a function with `@always_inline` to inline it at every call site.\n",
    "pointers.md": "# Pointers\n\nAllocate with `UnsafePointer[Int].alloc(4)` and free it afterwards.\n",
    "release.md": "# Releases\n\nVersion 1.2.3 fixed the parser. Earlier notes mention 2 and 3 and 1 separately.\n",
    "other.md": "# Numbers\n\nThe list holds 1, 2 and 3 items in version four.\n",
    "running.md": "# Jobs\n\nThe runner runs every job quickly.\n",
    "heading.md": "# Guide\n\n## Caching\n\nThis section explains the behaviour in detail for readers.\n",
    "body.md": "# Notes\n\n## Misc\n\nSome readers mention caching once in passing here today.\n",
}


def test_identifier_splitting():
    assert split_identifier("array_cosine_distance") == ["array", "cosine", "distance"]
    assert split_identifier("UnsafePointer") == ["Unsafe", "Pointer"]
    assert split_identifier("getHTTPResponse") == ["get", "HTTP", "Response"]
    assert code_terms("see os.path.join and 1.2.3") == "os path join os_path_join 1 2 3 1_2_3"
    assert code_terms("plain prose only") == ""
    # identifiers end at non-ASCII letters
    assert code_terms("café_au_lait x__y__") == "au lait x y"
    assert code_terms("ABcD and xyzAbc") == "Bc D xyz Abc"
    assert code_terms("std::vector<int> a:b") == "std vector std_vector a b a_b"


@pytest.fixture(scope="module")
def database(tmp_path_factory, embedder) -> Path:
    config, _ = build_pages(tmp_path_factory.mktemp("keyword"), "kw-docs", PAGES, embedder)
    return config.database_path


def keyword(database: Path, query: str, weights: dict[str, float] | None = None) -> list[str]:
    settings = SearchSettings(**({"field_weights": weights} if weights else {}))
    store = ChunkStore(database, "build it", settings)
    engine = SearchEngine(store, QueryEmbedder(EmbedderSettings(provider="none")), settings)
    return [r.path for r in engine.search(query, 10, "keyword").results]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("array_cosine_distance", "distance.md"),
        ("cosine distance", "distance.md"),
        ("@always_inline", "inline.md"),
        ("always inline", "inline.md"),
        ("UnsafePointer[Int]", "pointers.md"),
        ("unsafe pointer", "pointers.md"),
        ("1.2.3", "release.md"),
        ("running", "running.md"),  # stemming: run/runs/runner
    ],
)
def test_code_identifiers_and_prose_are_findable(database: Path, query: str, expected: str):
    assert keyword(database, query)[0] == expected


def test_version_number_beats_scattered_digits(database: Path):
    ranked = keyword(database, "1.2.3")
    assert ranked.index("release.md") < ranked.index("other.md")


def test_heading_weight_lifts_a_heading_match(database: Path):
    flat = keyword(database, "caching", {"title": 1, "headings": 1, "content": 1, "code_terms": 1})
    assert set(flat[:2]) == {"heading.md", "body.md"}
    lifted = keyword(
        database, "caching", {"title": 2, "headings": 3, "content": 1, "code_terms": 1}
    )
    assert lifted[0] == "heading.md"
    lowered = keyword(
        database, "caching", {"title": 1, "headings": 0, "content": 1, "code_terms": 1}
    )
    assert lowered[0] == "body.md"


def engine_over(database: Path, **settings: object) -> SearchEngine:
    searching = SearchSettings(**settings)  # type: ignore[arg-type]
    store = ChunkStore(database, "build it", searching)
    return SearchEngine(store, QueryEmbedder(EmbedderSettings(provider="none")), searching)


def weights_for(engine: SearchEngine, query: str) -> dict[str, float]:
    terms = engine.store.query_terms(query)
    return engine.fusion_weights(query, terms, engine.keyword_candidates(query, 10))


@pytest.mark.parametrize(
    ("query", "keyword_weight"),
    [
        # in the asker's words: no passage holds half of them, so vectors lead
        ("why do readers of a release lose their job", 0.3),
        # named as code: the keyword search's strength
        ("what does array_cosine_distance return", 1.0),
        ("is `@always_inline` safe", 1.0),
        ("the --quick flag", 1.0),
        # in the docs' own words: a top keyword passage holds most of them
        ("how does the runner run every job", 1.0),
    ],
)
def test_a_question_in_plain_words_leans_on_vectors(
    database: Path, query: str, keyword_weight: float
):
    assert weights_for(engine_over(database), query) == {
        "vector": 1.0,
        "keyword": keyword_weight,
    }


def test_prose_keyword_weight_none_keeps_the_configured_weights(database: Path):
    engine = engine_over(database, prose_keyword_weight=None, keyword_weight=0.8)
    query = "why do readers of a release lose their job"
    assert weights_for(engine, query) == {"vector": 1.0, "keyword": 0.8}
    covered = engine.store.keywords.coverage(
        engine.store.query_terms("runner runs job"), [0, 1], 10
    )
    assert 0.0 <= covered <= 1.0
