"""Token counts: the word memo gives the tokenizer's own counts, and the chunk step gives the
same chunks whether it runs in the build's process or in worker processes."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from conftest import build_pages
from docbuild.util import workers
from docserve.tokens import TokenCounter
from tokenizers import Tokenizer, models, pre_tokenizers

TRICKY = [
    "",
    "   ",
    "Plain words, punctuation; and CamelCase identifiers_with_underscores.",
    "Ünïcödé àccents and 日本語のテキスト mixed with English",
    "a\x0cb form feed and a\x1fb unit separator join words",  # Python splits, BERT deletes
    "zero\u200bwidth and soft\u00adhyphen and nbsp\u00a0and ideographic\u3000space",
    "x" * 150 + " a word longer than the tokenizer's per-word limit",
    "emoji 🙂🙂 and math ∑∫ and a tab\tand\r\nline ends",
]


def test_word_memo_counts_equal_the_tokenizer(counter):
    """Every text counts as tokenizing it whole does, first from new words, then remembered."""
    assert counter.words is not None  # MiniLM's WordPiece tokenizer: counted by words
    whole = counter._tokenize(TRICKY)
    assert counter(TRICKY) == whole
    assert counter(TRICKY) == whole  # now from the memo
    assert whole[4] != sum(counter._tokenize(TRICKY[4].split()))  # the joining case is real


def test_tokenizer_that_joins_across_spaces_is_counted_whole(tmp_path: Path):
    """A byte-level tokenizer (spaces belong to tokens) is not counted by words."""
    vocab = {chr(c): c - 32 for c in range(32, 127)} | {"Ġ": 95, "Ġa": 96, "ab": 97}
    tokenizer = Tokenizer(models.BPE(vocab, [("Ġ", "a"), ("a", "b")]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    bpe = TokenCounter(tmp_path)
    assert bpe.words is None
    texts = ["ab ab  ab", "a b"]
    assert bpe(texts) == [len(e) for e in tokenizer.encode_batch(texts)]


def chunk_rows(database: Path) -> list[tuple]:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute(
            "SELECT chunk_id, section_hierarchy, content, token_count FROM chunks ORDER BY chunk_row"
        ).fetchall()


def test_chunk_step_in_worker_processes_gives_the_same_chunks(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch
):
    """A build whose chunk step runs in worker processes (as a large one does) writes the
    same chunks and hygiene figures as one that chunks in the build's own process."""
    pages = {
        f"page{i}.md": f"# Page {i}\n\n## Setup {i}\n\n"
        + " ".join(f"Step {j} of page {i} sets option_{j} to {i * j}." for j in range(60))
        + f"\n\n```python\nrun(page={i})\n```\n"
        for i in range(12)
    }
    (tmp_path / "here").mkdir()
    (tmp_path / "spread").mkdir()
    monkeypatch.setattr(workers, "PARALLEL_FROM", 10**9)
    here, here_report = build_pages(tmp_path / "here", "here-docs", pages, embedder)
    monkeypatch.setattr(workers, "PARALLEL_FROM", 1)
    monkeypatch.setattr(workers, "worker_count", lambda: 2)
    spread, spread_report = build_pages(tmp_path / "spread", "spread-docs", pages, embedder)
    assert here_report.hygiene == spread_report.hygiene
    assert here_report.chunks == spread_report.chunks > 24
    assert chunk_rows(here.database_path) == chunk_rows(spread.database_path)
