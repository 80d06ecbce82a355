"""DuckDB's full-text index on ``chunks``: the ``fts`` extension's own schema, filled in parallel.

``PRAGMA create_fts_index`` fills its tables with correlated UPDATEs that run on one core and grow
faster than the table (about a minute at 100,000 chunks, well over 20 minutes at a million). Here
the extension creates the index over an empty copy of the table, so its schema, stopwords and the
``tokenize`` and ``match_bm25`` macros are exactly its own, and the index tables are then filled
with the same contents by set-based statements that DuckDB runs on every core.
"""

from __future__ import annotations

import duckdb

SCHEMA = "fts_main_chunks"


def create_full_text_index(
    con: duckdb.DuckDBPyConnection, fields: tuple[str, ...], options: str, stemmer: str
) -> None:
    """Index ``fields`` of ``chunks`` (``options``: the PRAGMA's keyword arguments as SQL)."""
    names = ", ".join(f"'{field}'" for field in fields)
    con.execute("ALTER TABLE chunks RENAME TO chunks_filled")
    con.execute("CREATE TABLE chunks AS FROM chunks_filled LIMIT 0")
    con.execute(f"PRAGMA create_fts_index('chunks', 'chunk_id', {names}, {options})")
    con.execute("DROP TABLE chunks")
    con.execute("ALTER TABLE chunks_filled RENAME TO chunks")
    tokenized = " UNION ALL ".join(
        f"SELECT rowid AS docid, {fieldid} AS fieldid, unnest({SCHEMA}.tokenize({field})) AS w "
        "FROM chunks"
        for fieldid, field in con.execute(
            f"SELECT fieldid, field FROM {SCHEMA}.fields ORDER BY fieldid"
        ).fetchall()
    )
    con.execute(
        f"CREATE TEMP TABLE fts_words AS SELECT * FROM ({tokenized}) WHERE w IS NOT NULL AND len(w) > 0"
    )
    # each distinct word is stemmed once (a hundredth of the tokens), stopwords dropped with it
    con.execute(
        f"CREATE TEMP TABLE fts_stems AS SELECT w, stem(w, ?) AS term FROM (SELECT DISTINCT w "
        f"FROM fts_words) WHERE w NOT IN (SELECT sw FROM {SCHEMA}.stopwords)",
        [stemmer],
    )
    con.execute(
        "CREATE TEMP TABLE fts_tokens AS SELECT docid, fieldid, term FROM fts_words "
        "JOIN fts_stems USING (w)"
    )
    con.execute("DROP TABLE fts_words")
    con.execute("DROP TABLE fts_stems")
    for table in ("docs", "terms", "dict", "stats"):
        con.execute(f"DELETE FROM {SCHEMA}.{table}")
    con.execute(
        f"INSERT INTO {SCHEMA}.dict (termid, term, df) SELECT row_number() OVER (ORDER BY term) - 1, "
        "term, count(DISTINCT docid) FROM fts_tokens GROUP BY term"
    )
    con.execute(
        f"INSERT INTO {SCHEMA}.terms (docid, fieldid, termid) SELECT docid, fieldid, termid "
        f"FROM fts_tokens JOIN {SCHEMA}.dict USING (term)"
    )
    con.execute(
        f"INSERT INTO {SCHEMA}.docs (docid, name, len) SELECT c.rowid, c.chunk_id, "
        "coalesce(n.len, 0) FROM chunks c LEFT JOIN (SELECT docid, count(*) AS len FROM fts_tokens "
        "GROUP BY docid) n ON n.docid = c.rowid"
    )
    con.execute(
        f"INSERT INTO {SCHEMA}.stats SELECT count(docid), sum(len) / count(len) FROM {SCHEMA}.docs"
    )
    con.execute("DROP TABLE fts_tokens")
