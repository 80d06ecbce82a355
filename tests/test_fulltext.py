"""The build's own fill of DuckDB's full-text index tables equals what the ``fts`` extension's
``PRAGMA create_fts_index`` writes, on real documentation text (the project's own docs)."""

from __future__ import annotations

from pathlib import Path

from docbuild.stages.materialize import FTS_FIELDS, FTS_OPTIONS, _sql_options
from docbuild.util.fulltext import SCHEMA, create_full_text_index
from docserve.codeterms import code_terms
from docserve.duck import connect

ROOT = Path(__file__).resolve().parents[1]
EXTRA = [  # what real pages hold besides plain prose: accents, escapes, stopwords only, nothing
    ("Café crème", "Naïve façade: `\\n` and \\t escapes, C:\\path\\to\\file", ""),
    ("The", "the and of a an", ""),
    ("", "", ""),
]


def chunks(con) -> None:
    """A ``chunks`` table of paragraphs from the repository's own Markdown documents."""
    rows = []
    for path in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        title = path.stem
        for number, paragraph in enumerate(path.read_text().split("\n\n")):
            rows.append((title, f"{title} > part {number % 7}", paragraph))
    rows += EXTRA
    con.execute(
        "CREATE TABLE chunks (chunk_id VARCHAR, title VARCHAR, headings VARCHAR, content VARCHAR, "
        "code_terms VARCHAR)"
    )
    con.executemany(
        "INSERT INTO chunks VALUES (?, ?, ?, ?, ?)",
        [(f"c{i}", t, h, c, code_terms(f"{h} {c}")) for i, (t, h, c) in enumerate(rows)],
    )


def index_tables(con) -> dict[str, list[tuple]]:
    """The index's contents, with each term by its text (term ids are the builder's choice)."""
    queries = {
        "dict": f"SELECT term, df FROM {SCHEMA}.dict",
        "terms": f"SELECT docid, fieldid, term FROM {SCHEMA}.terms JOIN {SCHEMA}.dict USING (termid)",
        **{table: f"FROM {SCHEMA}.{table}" for table in ("docs", "stats", "fields")},
    }
    return {table: sorted(con.execute(sql).fetchall()) for table, sql in queries.items()}


def test_the_parallel_fill_equals_the_extensions_own_index(tmp_path: Path):
    options, stemmer = _sql_options(FTS_OPTIONS), str(FTS_OPTIONS["stemmer"])
    own = connect(tmp_path / "own.db", extensions=("fts",))
    chunks(own)
    names = ", ".join(f"'{field}'" for field in FTS_FIELDS)
    own.execute(f"PRAGMA create_fts_index('chunks', 'chunk_id', {names}, {options})")
    ours = connect(tmp_path / "ours.db", extensions=("fts",))
    chunks(ours)
    create_full_text_index(ours, FTS_FIELDS, options, stemmer)
    expected, found = index_tables(own), index_tables(ours)
    assert len(expected["docs"]) > 300 and len(expected["dict"]) > 1500  # real text, not a toy
    assert found == expected
    # and the extension's own BM25 macro scores with them as with its own
    query = "SELECT chunk_id, round(fts_main_chunks.match_bm25(chunk_id, ?), 6) AS s FROM chunks"
    for words in ("embedding cache vectors", "café", "build_mcp.sh"):
        assert ours.execute(query, [words]).fetchall() == own.execute(query, [words]).fetchall()
    # nothing of the build's working tables is left behind
    temp = ours.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    assert temp == []
