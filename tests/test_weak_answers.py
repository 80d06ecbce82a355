"""A weak answer says so: when no passage stands out from the rest, the answer ends with the other
sections nearest the question, and the eval harness measures how often they hold the answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import build_pages
from docbuild.services.evaluate import Judged, Target, open_engine, weak_answer
from docserve.answers import Answers
from docserve.render import CharCounter
from docserve.search import SearchEngine, SearchResult

TOPICS = {
    "pointers.md": ("Pointers", ["Allocating", "Freeing", "Aliasing"]),
    "caching.md": ("Caching", ["Cache keys", "Invalidation", "Sizing the cache"]),
    "logging.md": ("Logging", ["Log levels", "Log files", "Rotating logs"]),
    "testing.md": ("Testing", ["Unit tests", "Fixtures", "Test coverage"]),
    "deploy.md": ("Deploying", ["Containers", "Rollbacks", "Health checks"]),
    "themes.md": ("Themes", ["Colours", "Fonts", "Dark mode"]),
}
BODIES = {
    "Allocating": "Allocate memory for four integers with `alloc(4)`; the pointer owns it.",
    "Freeing": "Free the memory with `free()` once no pointer refers to it any more.",
    "Aliasing": "Two pointers to the same memory alias; writes through one show through the other.",
    "Cache keys": "Each cached value is stored under a key made from the request's arguments.",
    "Invalidation": "A cached value is dropped when the file it was computed from changes.",
    "Sizing the cache": "The cache keeps at most 1000 entries and evicts the least recently used.",
    "Log levels": "Messages below the configured level (debug, info, warning) are not written.",
    "Log files": "Each process writes its messages to its own file in the logs folder.",
    "Rotating logs": "A log file is closed and renamed once it grows past ten megabytes.",
    "Unit tests": "A unit test checks one function with fixed inputs and expected outputs.",
    "Fixtures": "A fixture prepares data once and hands it to every test that asks for it.",
    "Test coverage": "Coverage reports which lines of the program the tests executed.",
    "Containers": "The service ships as a container image built from the Dockerfile.",
    "Rollbacks": "A failed release is rolled back by redeploying the previous image tag.",
    "Health checks": "The orchestrator calls /health every ten seconds and restarts on failure.",
    "Colours": "The palette sets the accent colour used for links and buttons.",
    "Fonts": "Headings use a serif font and body text a sans-serif one.",
    "Dark mode": "Dark mode swaps the palette for light text on a dark background.",
}
PAGES = {
    path: f"# {title}\n\n"
    + "\n\n".join(f"## {heading}\n\n{BODIES[heading]}" for heading in headings)
    + "\n"
    for path, (title, headings) in TOPICS.items()
}
SPECIFIC = "how do I free the memory a pointer refers to"
VAGUE = "tell me something"


@pytest.fixture(scope="module")
def server(tmp_path_factory, embedder) -> Path:
    root = tmp_path_factory.mktemp("weak")
    build_pages(root, "weak-docs", PAGES, embedder)
    return root / "servers" / "weak-docs"


@pytest.fixture(scope="module")
def engine(server: Path) -> SearchEngine:
    return open_engine(server)


def test_a_question_the_docs_answer_clearly_is_not_weak(engine: SearchEngine):
    response = engine.search(SPECIFIC, top_k=3)
    assert response.results[0].section_hierarchy[-1] == "Freeing"
    assert not response.weak and response.nearest_sections == []
    text = Answers(engine, CharCounter(), 4000).search(SPECIFIC, top_k=3).text
    assert "No passage stands out" not in text


def test_a_weak_answer_ends_with_the_nearest_other_sections(engine: SearchEngine):
    answer = Answers(engine, CharCounter(), 4000).search(VAGUE, top_k=3)
    assert answer.data["weak"]
    shown = {(r["path"], tuple(r["section_hierarchy"])) for r in answer.data["results"]}
    named = [(s["path"], tuple(s["section_hierarchy"])) for s in answer.data["nearest_sections"]]
    assert len(named) == 5 and len(set(named)) == 5
    assert not shown & set(named)  # other sections than the passages shown
    footer = answer.text.rsplit("\n\n", 1)[1]
    assert footer.startswith("No passage stands out for this question.")
    for path, hierarchy in named:  # what the model reads: where each is, to call get_document
        assert f"- {path}: {' › '.join(hierarchy)}" in footer


def test_weak_answers_can_be_turned_off(engine: SearchEngine):
    engine.settings.weak_margin = None
    try:
        response = engine.search(VAGUE, top_k=3)
    finally:
        engine.settings.weak_margin = 0.05
    assert not response.weak and response.nearest_sections == []


def test_keyword_answers_are_never_called_weak(engine: SearchEngine):
    assert not engine.search(VAGUE, top_k=3, mode="keyword").weak


def passage(path: str, headings: list[str]) -> SearchResult:
    return SearchResult("c", "d", path, headings[0], headings, None, None, "text", 1.0, None, 0, {})


def test_the_harness_counts_weak_answers_and_the_sections_they_name():
    question = Judged(
        "q", "?", {"caching.md": 1.0}, "paraphrase", "path", [Target("caching.md", "Invalidation")]
    )
    others = [passage("logging.md", ["Logging", h]) for h in ("Log levels", "Log files")]
    ranked = [*others * 3, passage("caching.md", ["Caching", "Invalidation"])]
    assert weak_answer(False, ranked, question) == {}
    assert weak_answer(True, ranked, question) == {
        "weak": 1.0,
        "weak_missed": 1.0,
        "weak_named": 1.0,
    }
    found = [passage("caching.md", ["Caching", "Invalidation"]), *others]
    assert weak_answer(True, found, question) == {
        "weak": 1.0,
        "weak_missed": 0.0,
        "weak_named": 0.0,
    }
    elsewhere = [*others * 3, passage("caching.md", ["Caching", "Cache keys"])]
    assert weak_answer(True, elsewhere, question)["weak_named"] == 0.0
