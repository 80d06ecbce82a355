"""Discovery, JSONL and PDF readers, configuration loading."""

import json
import os
from pathlib import Path

import pytest
from conftest import corpus
from docbuild.config import ConfigError, JsonlConfig
from docbuild.documents import SkipFile
from docbuild.readers import reader_for
from docbuild.readers.jsonl import JsonlReader
from docbuild.readers.pdf import PdfReader
from docbuild.stages.discover import discover
from docserve.settings import apply_env_overrides, substitute
from pdfmaker import write_pdf


def test_discover_globs_dedupes_and_limits(tmp_path: Path):
    (tmp_path / "a.md").write_text("# A")
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    (tmp_path / "sub" / "b.mdx").write_text("# B")
    (tmp_path / "sub" / "deep" / "c.md").write_text("# C")
    (tmp_path / "big.md").write_text("x" * 2000)
    (tmp_path / ".hidden.md").write_text("# H")
    (tmp_path / "notes.txt").write_text("no")
    os.symlink(tmp_path / "a.md", tmp_path / "sub" / "link.md")
    files, problems = discover(tmp_path, fmt="mdx", max_file_bytes=1000, max_depth=2)
    assert [f.relative for f in files] == ["a.md", "sub/b.mdx"]  # link.md is a.md again
    reasons = {p.path: p.reason for p in problems}
    assert "larger than max_file_bytes" in reasons["big.md"]
    assert "deeper than max_depth" in reasons["sub/deep/c.md"]
    single, _ = discover(tmp_path / "a.md")
    assert [f.relative for f in single] == ["a.md"]
    with pytest.raises(FileNotFoundError):
        discover(tmp_path / "missing")


def test_jsonl_reads_beir_records_and_reports_bad_lines(tmp_path: Path):
    lines = [
        {"_id": "d1", "title": "First", "text": "Alpha text."},
        {"id": "d2", "title": "", "text": "Second text.", "url": "https://x/d2"},
        "not json",
        {"title": "no id", "text": "x"},
        {"_id": "d1", "text": "duplicate"},
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    docs, problems = JsonlReader().read(path, "corpus.jsonl")
    assert [d.document_id for d in docs] == ["d1", "d2"]
    assert docs[0].title == "First" and docs[1].title == "d2" and docs[1].url == "https://x/d2"
    assert docs[0].sections[0].text == "Alpha text."
    assert len(problems) == 1 and "3 record(s) skipped" in problems[0].reason
    custom = tmp_path / "custom.jsonl"
    custom.write_text(json.dumps({"key": "k1", "heading": "H", "body": "B"}) + "\n")
    fields = JsonlConfig(id_fields=["key"], title_field="heading", text_field="body")
    docs, _ = JsonlReader(fields=fields).read(custom, "custom.jsonl")
    assert docs[0].document_id == "k1" and docs[0].title == "H" and docs[0].sections[0].text == "B"


def test_pdf_pages_keep_numbers_and_bad_pdfs_are_refused(tmp_path: Path):
    good = write_pdf(
        tmp_path / "g.pdf", [["First page about parsing."], ["Second page about vectors."]], "Guide"
    )
    docs, _ = PdfReader().read(good, "g.pdf")
    assert docs[0].title == "Guide"
    assert [(s.page, s.text) for s in docs[0].sections] == [
        (1, "First page about parsing."),
        (2, "Second page about vectors."),
    ]
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(good))
    writer.encrypt("secret")
    writer.write(tmp_path / "enc.pdf")
    with pytest.raises(SkipFile, match="encrypted"):
        PdfReader().read(tmp_path / "enc.pdf", "enc.pdf")
    (tmp_path / "corrupt.pdf").write_bytes(b"%PDF-1.4\ngarbage")
    with pytest.raises(SkipFile, match="not a readable PDF"):
        PdfReader().read(tmp_path / "corrupt.pdf", "corrupt.pdf")
    blank = write_pdf(tmp_path / "blank.pdf", [[], []])
    with pytest.raises(SkipFile, match="no extractable text"):
        PdfReader().read(blank, "blank.pdf")


def test_real_pdf_outline_gives_headings_and_pages():
    path = corpus("pdfs", "bash-reference-manual.pdf")
    docs, _ = PdfReader().read(path, path.name)
    sections = docs[0].sections
    assert len(sections) > 100
    assert all(s.page for s in sections)
    assert (
        sum(len(s.hierarchy) > 2 or not s.hierarchy[-1].startswith("Page") for s in sections) > 100
    )


def test_reader_factory_by_extension(tmp_path: Path):
    assert reader_for(Path("a.MDX")).format == "mdx"
    assert reader_for(Path("a.markdown")).format == "md"
    with pytest.raises(ValueError, match="no reader"):
        reader_for(Path("a.txt"))


def test_variables_and_environment_overrides(monkeypatch):
    assert substitute({"a": ["${X}/y"]}, {"X": "root"}) == {"a": ["root/y"]}
    with pytest.raises(ConfigError, match="UNKNOWN_THING"):
        substitute("${UNKNOWN_THING}", {})
    data = apply_env_overrides(
        {"embedding": {"provider": "local"}},
        {"DOCMCP_EMBEDDING__PROVIDER": "openai", "DOCMCP_EMBEDDING__OPENAI__TIMEOUT": "5"},
    )
    assert data == {"embedding": {"provider": "openai", "openai": {"timeout": 5}}}
