"""The question sets stay honest: every target exists in its corpus as the build parses it, and
no paraphrase question shares a heading word or a rare term with the section that answers it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, corpus
from docbuild.config import load_processing_config
from docbuild.services.evaluate import load_jsonl
from docbuild.services.question_check import Corpus, check_questions, parsed_corpus
from docbuild.services.scaffold import scaffold

EVAL = REPO / "tests" / "eval"
BUILDS = {  # question set: the builds it is checked against (corpus folder, format)
    "mojo-manual": [("mojo-manual-2025-11/docs", "auto")],
    "hugo-docs": [("hugo-docs/docs", "md")],
    "pdfs": [("pdfs", "pdf")],
    "git-docs": [("git-docs/asciidoc", "asciidoc"), ("git-docs/html", "html")],
    "python-docs-3.11": [("python-docs-3.11/rst", "rst"), ("python-docs-3.11/html", "html")],
    "docs-mcp-docs": [("", "md")],  # this repository's docs/
}


def parsed(project: Path, folder: str, fmt: str) -> Corpus:
    """The corpus parsed by the build's own stages, from a server scaffolded over it."""
    source = REPO / "docs" if not folder else corpus(*folder.split("/"))
    name = fmt if folder else "own-docs"
    scaffold(name, str(source), fmt, root=project)
    return parsed_corpus(load_processing_config(name, project))


@pytest.mark.parametrize(
    ("questions", "folder", "fmt"),
    [(name, folder, fmt) for name, builds in BUILDS.items() for folder, fmt in builds],
)
def test_every_target_exists_and_no_paraphrase_gives_its_answer_away(
    project: Path, questions: str, folder: str, fmt: str
):
    judged = [
        q for path in (EVAL, EVAL / "heldout") for q in load_jsonl(path / f"{questions}.jsonl")
    ]
    findings = check_questions(parsed(project, folder, fmt), judged)
    assert [f"{f.query_id}: {f.problem}" for f in findings] == []


PAGES = {
    "recover.md": "---\ntitle: Recovering work\ndescription: Get back what a reset threw away.\n---\n\n"
    "## Lost commits\n\nThe reflog keeps every position a branch had, for 90 days.\n\n"
    "## Cleaning up\n\nOld entries expire.\n",
    **{
        f"p{n}.md": f"# Page {n}\n\nA branch points at a commit; the branch moves on.\n"
        for n in range(9)
    },
}


@pytest.fixture
def small_corpus(project: Path) -> Corpus:
    source = project / "corpus"
    source.mkdir()
    for name, text in PAGES.items():
        (source / name).write_text(text)
    scaffold("small", str(source), "md", root=project)
    return parsed_corpus(load_processing_config("small", project))


def question(query: str, heading: str | None = "Lost commits", **target: object) -> dict:
    relevant = {"path": "recover.md", "heading": heading, "page": None, **target}
    return {"id": "q-1", "query": query, "kind": "paraphrase", "relevant": [relevant]}


def findings(small_corpus: Corpus, tmp_path: Path, record: dict) -> list[str]:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return [f.problem for f in check_questions(small_corpus, load_jsonl(path))]


def test_the_check_flags_heading_words_and_rare_terms(small_corpus: Corpus, tmp_path: Path):
    clean = "I threw away changes by accident; is there any record of where I was before?"
    assert findings(small_corpus, tmp_path, question(clean)) == []
    assert findings(small_corpus, tmp_path, question("how do I read the reflog")) == [
        "shares 'reflog' (rare term, in 1 sections)"
    ]
    assert findings(small_corpus, tmp_path, question("I lost my changes")) == [
        "shares 'lost' (heading word)"
    ]
    # the page title counts as a heading; the description is part of the page's opening
    assert findings(small_corpus, tmp_path, question("recovering after a mistake", None)) == [
        "shares 'recovering' (heading word)"
    ]
    # "branch" is in most sections: too common to give the answer away
    assert findings(small_corpus, tmp_path, question("where did my branch point")) == []
    # keyword questions may name anything
    keyword = {**question("reflog lost commits"), "kind": "keyword"}
    assert findings(small_corpus, tmp_path, keyword) == []


def test_the_check_finds_missing_targets_and_evidence(small_corpus: Corpus, tmp_path: Path):
    assert findings(small_corpus, tmp_path, question("q", "No such heading")) == [
        "target not found: recover.md › No such heading"
    ]
    assert findings(small_corpus, tmp_path, question("q", evidence="keeps every position")) == []
    assert findings(small_corpus, tmp_path, question("q", evidence="Old entries expire")) == [
        "evidence 'Old entries expire' not in recover.md › Lost commits"
    ]
    # the front matter's description is text of the page's opening
    opening = question("what is this page for", None, evidence="what a reset threw away")
    assert findings(small_corpus, tmp_path, opening) == []
