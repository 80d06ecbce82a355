"""Neighbour expansion without repeated overlap, and token budgets counted with the model's tokenizer."""

from __future__ import annotations

import pytest
from conftest import build_pages
from docserve.config import EmbedderSettings, SearchSettings
from docserve.context import merge_chunks, merge_overlapping
from docserve.encoder import default_model_dir
from docserve.query_embedder import QueryEmbedder
from docserve.search import SearchEngine, SearchInputError
from docserve.store import ChunkStore
from docserve.tokens import TokenCounter

SENTENCES = [
    f"Step {i} of the migration moves table number {i} into the archive schema." for i in range(60)
]


def test_merge_drops_the_repeated_overlap():
    assert (
        merge_overlapping("one two. three four.", "three four. five six.")
        == "one two. three four. five six."
    )
    assert merge_overlapping("alpha.", "beta.") == "alpha.\n\nbeta."
    assert merge_chunks(["a b c", "b c d", "c d e"]) == "a b c d e"


@pytest.fixture(scope="module")
def engine(tmp_path_factory, embedder) -> SearchEngine:
    pages = {
        "migration.md": "# Migration\n\n" + " ".join(SENTENCES) + "\n",
        "other.md": "# Other\n\nUnrelated text about gardening and tomatoes.\n",
    }
    config, _ = build_pages(tmp_path_factory.mktemp("context"), "ctx-docs", pages, embedder)
    store = ChunkStore(config.database_path, "build it")
    counter = TokenCounter(default_model_dir())
    return SearchEngine(
        store, QueryEmbedder(EmbedderSettings(provider="none")), SearchSettings(), None, counter
    )


def test_neighbours_are_merged_once_in_order(engine: SearchEngine):
    hit = engine.search("Step 30 of the migration moves table number 30", 1, "keyword").results[0]
    assert hit.chunk_range is None
    wide = engine.search(
        "Step 30 of the migration moves table number 30", 1, "keyword", neighbors=1
    ).results[0]
    low, high = wide.chunk_range
    assert low == hit.chunk_index - 1 and high == hit.chunk_index + 1
    assert hit.content in wide.content
    for sentence in SENTENCES:
        assert wide.content.count(sentence) <= 1  # overlap between chunks not repeated
    steps = [int(part.split()[0]) for part in wide.content.split("Step ")[1:]]
    assert steps == sorted(steps) and steps == list(range(steps[0], steps[-1] + 1))


def test_hits_inside_an_earlier_window_are_not_repeated(engine: SearchEngine):
    results = engine.search("migration archive schema table", 5, "keyword", neighbors=2).results
    ranges = [
        set(range(r.chunk_range[0], r.chunk_range[1] + 1))
        for r in results
        if r.document_id == "migration.md"
    ]
    for i, a in enumerate(ranges):
        for b in ranges[i + 1 :]:
            assert not (a & b)


def test_token_budget_keeps_best_results_within_it(engine: SearchEngine):
    counter = engine.token_counter
    full = engine.search("migration archive schema table", 5, "keyword").results
    budget = counter.count(full[0].content) + counter.count(full[1].content) + 5
    answer = engine.search("migration archive schema table", 5, "keyword", max_tokens=budget)
    assert [r.chunk_id for r in answer.results] == [r.chunk_id for r in full[:2]]
    assert sum(r.tokens for r in answer.results) <= budget
    assert any("token budget" in note for note in answer.notes)
    tiny = engine.search("migration archive schema table", 5, "keyword", max_tokens=10)
    assert len(tiny.results) == 1 and tiny.results[0].tokens <= 10
    assert full[0].content.startswith(tiny.results[0].content)
    with pytest.raises(SearchInputError):
        engine.search("migration", 5, "keyword", max_tokens=0)
    with pytest.raises(SearchInputError):
        engine.search("migration", 5, "keyword", neighbors=9)


def test_token_counter_matches_the_model(counter):
    text = "array_cosine_distance compares UnsafePointer[Int] values."
    assert TokenCounter(default_model_dir()).count(text) == counter([text])[0]
