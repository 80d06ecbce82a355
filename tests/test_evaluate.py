"""The eval harness: metric definitions, query-set loaders, and a smoke eval on a SciFact subset."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, corpus
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.evaluate import (
    KINDS,
    Target,
    answers,
    evaluate,
    load_beir,
    load_jsonl,
    ndcg,
    open_engine,
    ranked_documents,
    score_query,
    score_sections,
    section_ranks,
)
from docbuild.services.scaffold import scaffold
from docserve.search import SearchResult

RESULT = dict(
    chunk_id="c",
    document_id="d",
    path="p",
    title="t",
    section_hierarchy=["t"],
    url=None,
    section_url=None,
    content="x",
    score=1.0,
    page=None,
    chunk_index=0,
    retrievers={},
)


def test_metrics_follow_their_definitions():
    relevant = {"a": 1.0, "b": 1.0}
    ranked = ["x", "a", "y", "b"]
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg(ranked, relevant) == pytest.approx(expected)
    scores = score_query(ranked, relevant)
    assert scores["mrr_10"] == 0.5 and scores["hit_1"] == 0.0 and scores["hit_3"] == 1.0
    assert scores["recall_10"] == 1.0
    assert score_query(["x"] * 3, relevant)["ndcg_10"] == 0.0
    assert ndcg(["b", "a"], {"a": 2.0, "b": 1.0}) < ndcg(["a", "b"], {"a": 2.0, "b": 1.0}) == 1.0


def test_jsonl_judgements_by_path_or_page(tmp_path: Path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": "1",
                "query": "q1",
                "kind": "howto",
                "relevant": [{"path": "a.md", "heading": "H", "page": None}],
            }
        )
        + "\n"
        + json.dumps(
            {
                "id": "2",
                "query": "q2",
                "kind": "keyword",
                "relevant": [{"path": "m.pdf", "heading": None, "page": 3}],
            }
        )
        + "\n"
    )
    first, second = load_jsonl(path)
    assert (first.by, first.relevant, first.kind) == ("path", {"a.md": 1.0}, "howto")
    assert (second.by, second.relevant) == ("page", {"m.pdf#page=3": 1.0})


def test_a_path_without_extension_matches_the_page_in_any_format(tmp_path: Path):
    path = tmp_path / "q.jsonl"
    record = {
        "id": "1",
        "query": "q",
        "kind": "keyword",
        "relevant": [{"path": "library/os.path", "page": None}],
    }
    path.write_text(json.dumps(record) + "\n")
    (judged,) = load_jsonl(path)
    assert judged.by == "stem"
    found = [
        SearchResult(**{**RESULT, "path": p})
        for p in ("library/os.rst", "library/os.path.html", "library/os.path.rst")
    ]
    ranked = ranked_documents(found, judged.by)
    assert ranked == ["library/os", "library/os.path"]  # both formats of os.path are one page
    assert score_query(ranked, judged.relevant)["mrr_10"] == 0.5


QUESTION_SETS = sorted((REPO / "tests" / "eval").rglob("*.jsonl"))


def test_every_question_of_every_set_has_a_kind():
    assert len(QUESTION_SETS) >= 12  # six development sets and six held-out ones
    ids: set[str] = set()
    for path in QUESTION_SETS:
        judged = load_jsonl(path)  # raises on a question without a known kind
        assert len(judged) >= 12, path
        assert not ids & {j.query_id for j in judged}, path
        ids |= {j.query_id for j in judged}
        expected = {"paraphrase"} if path.parent.name == "heldout" else set(KINDS)
        assert {j.kind for j in judged} == expected, path
    assert len(ids) == sum(len(p.read_text().splitlines()) for p in QUESTION_SETS)


def test_a_question_without_a_kind_is_refused(tmp_path: Path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"id": "x-1", "query": "q", "type": "howto", "relevant": [{"path": "a.md"}]})
        + "\n"
    )
    with pytest.raises(
        ValueError,
        match=re.escape("q.jsonl:1 (x-1): 'kind' must be one of keyword, howto, paraphrase"),
    ):
        load_jsonl(path)


def passage(
    path: str, headings: list[str], content: str = "x", page: int | None = None
) -> SearchResult:
    return SearchResult(
        **{**RESULT, "path": path, "section_hierarchy": headings, "content": content, "page": page}
    )


def test_a_passage_answers_from_the_section_that_holds_the_answer():
    reflogs = Target("user-manual", "Reflogs", evidence="the reflog keeps a record")
    in_section = passage("user-manual.html", ["Git User Manual", "3.2. Reflogs", "Examples"])
    assert answers(in_section, reflogs, "stem")  # a subsection, numbered as the HTML numbers it
    other = passage("user-manual.adoc", ["Git User Manual", "Branches"])
    assert not answers(other, reflogs, "stem")
    quoted = passage(
        "user-manual.adoc",
        ["Git User Manual", "Branches"],
        "So THE reflog\n keeps a `record` of it",
    )
    assert answers(quoted, reflogs, "stem")  # the answer's own words, wherever the passage sits
    assert not answers(
        passage("git-reflog.adoc", ["git-reflog(1)"], "the reflog keeps a record"), reflogs, "stem"
    )
    chapter = Target("user-manual", "Submodules")
    assert answers(
        passage("user-manual.html", ["Git User Manual", "Chapter 8. Submodules"]), chapter, "stem"
    )
    opening = Target("csv.md", None)
    assert answers(passage("csv.md", ["csv"]), opening, "path")
    assert not answers(passage("csv.md", ["csv", "Dialects"]), opening, "path")
    code = Target("always-inline.mdx", '`@always_inline("nodebug")`')
    assert answers(
        passage("always-inline.mdx", ["@always_inline", '@always_inline("nodebug")']), code, "path"
    )
    page = Target("manual.pdf", None, 34)
    assert answers(passage("manual.pdf", ["Bash"], page=34), page, "page")
    assert not answers(passage("manual.pdf", ["Bash"], page=35), page, "page")


def test_section_level_ranks_the_passages_as_returned(tmp_path: Path):
    path = tmp_path / "q.jsonl"
    record = {
        "id": "1",
        "query": "q",
        "kind": "paraphrase",
        "relevant": [{"path": "a.md", "heading": "Right"}],
    }
    path.write_text(json.dumps(record) + "\n")
    (query,) = load_jsonl(path)
    results = [
        passage("a.md", ["A", "Wrong"]),
        passage("b.md", ["B"]),
        passage("a.md", ["A", "Right"]),
    ]
    hits = section_ranks(results, query)
    assert hits == [False, False, True]
    scores = score_sections(hits)
    assert scores["section_mrr_10"] == pytest.approx(1 / 3)
    assert (scores["section_hit_1"], scores["section_hit_3"]) == (0.0, 1.0)
    # at document level the page is found first: the section level is the stricter one
    assert score_query(ranked_documents(results, query.by), query.relevant)["hit_1"] == 1.0


@pytest.fixture(scope="module")
def scifact_subset(tmp_path_factory, embedder):
    """A few hundred SciFact documents: those judged for the first test queries, plus others."""
    folder = corpus("scifact")
    judged = load_beir(folder, "test")[:40]
    wanted = {doc for j in judged for doc in j.relevant}
    lines = (folder / "corpus.jsonl").read_text().splitlines()
    chosen = [line for line in lines if json.loads(line)["_id"] in wanted]
    chosen += [line for line in lines[:400] if json.loads(line)["_id"] not in wanted][
        : 300 - len(chosen)
    ]
    root = tmp_path_factory.mktemp("scifact")
    (root / "servers").mkdir()
    (root / "corpus").mkdir()
    (root / "corpus" / "corpus.jsonl").write_text("\n".join(chosen) + "\n")
    scaffold("scifact-smoke", str(root / "corpus"), "jsonl", root=root)
    config_file = root / "servers" / "scifact-smoke" / "config" / "processing_config.yaml"
    config_file.write_text(config_file.read_text().replace("  beir: null", f"  beir: {folder}"))
    Build(load_processing_config("scifact-smoke", root), embedder).run()
    return root / "servers" / "scifact-smoke", judged


@pytest.mark.slow
def test_smoke_eval_on_a_scifact_subset(scifact_subset):
    server, judged = scifact_subset
    scores = {
        s.mode: s
        for s in evaluate(open_engine(server, 200), judged, ["keyword", "vector", "hybrid"])
    }
    for s in scores.values():
        assert s.queries == 40 and 0.0 <= s.ndcg_10 <= 1.0 and s.recall_10 <= s.recall_100
    # on a small subset every retriever should find most judged abstracts
    assert scores["hybrid"].ndcg_10 > 0.5 and scores["hybrid"].hit[10] > 0.7
    assert scores["hybrid"].ndcg_10 >= min(scores["keyword"].ndcg_10, scores["vector"].ndcg_10)


def test_eval_command_prints_a_table_and_writes_json(scifact_subset, tmp_path: Path):
    server, _ = scifact_subset
    out = tmp_path / "scores.json"
    result = subprocess.run(
        [
            str(REPO / "tools" / "eval_mcp.sh"),
            "scifact-smoke",
            "--beir",
            str(corpus("scifact")),
            "--modes",
            "keyword",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(server.parents[1])},
    )
    assert result.returncode == 0, result.stderr
    assert "| mode | queries | nDCG@10 |" in result.stdout and "\n| keyword | " in result.stdout
    data = json.loads(out.read_text())
    assert data[0]["mode"] == "keyword" and data[0]["queries"] > 0


def test_the_build_stores_its_eval_report(scifact_subset):
    server, _ = scifact_subset
    from docserve.duck import connect

    con = connect(server / "runtime" / "scifact_smoke.db", read_only=True, extensions=())
    report = json.loads(
        con.execute("SELECT value FROM build_info WHERE key = 'eval'").fetchone()[0]
    )
    assert report["count"] == len(load_beir(corpus("scifact"), "test"))
    assert {s["mode"] for s in report["scores"]} == {"keyword", "vector", "hybrid"}
    assert (server / "eval" / "report.md").read_text().startswith("| mode | queries | nDCG@10")
    assert json.loads((server / "eval" / "report.json").read_text()) == report["scores"]
    assert "## Measured quality" in (server / "README.md").read_text()
