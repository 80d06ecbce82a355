"""BM25 over impact-ordered postings: each term's documents sorted by their score for that term.

A posting's impact is its term's full BM25 contribution to the chunk (idf, field-weighted term
frequency, length normalization), computed once from DuckDB's full-text index tables with the
same formula and parameters as ``match_bm25``. A query sums the impacts of its terms' postings.
Because each term's postings are sorted best first, a very common term contributes only its
``cap`` best postings: the rest carry the smallest scores of a term whose idf is already low, and
skipping them bounds the work of a query at any corpus size.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from .arrays import array_strings, read_array, strings_array

ARRAYS = ("keyword_terms", "keyword_starts", "keyword_rows", "keyword_impacts")


@dataclass(frozen=True)
class Bm25Params:
    """What a posting's impact depends on besides the data."""

    k1: float
    b: float
    field_weights: tuple[tuple[str, float], ...]  # sorted (field, weight) pairs

    @classmethod
    def of(cls, k1: float, b: float, field_weights: dict[str, float]) -> Bm25Params:
        return cls(
            float(k1), float(b), tuple(sorted((k, float(v)) for k, v in field_weights.items()))
        )

    def to_dict(self) -> dict[str, object]:
        return {"k1": self.k1, "b": self.b, "field_weights": dict(self.field_weights)}


@dataclass
class KeywordIndex:
    """Postings by term: rows ``rows[starts[t]:starts[t+1]]``, best impact first."""

    term_ids: dict[str, int]
    starts: np.ndarray  # int64, one more than the terms
    rows: np.ndarray  # int32
    impacts: np.ndarray  # float32
    size: int  # rows in the table

    def _parts(self, terms: list[str], cap: int) -> list[tuple[int, int]]:
        """Each known term's postings (its ``cap`` best) as a slice of the arrays."""
        return [
            (self.starts[t], min(self.starts[t + 1], self.starts[t] + cap))
            for t in dict.fromkeys(self.term_ids.get(term) for term in terms)
            if t is not None
        ]

    def coverage(self, terms: list[str], rows: list[int], cap: int) -> float:
        """The largest share of the known query terms that one of ``rows`` holds (0 when no
        term is known): how well the query's own words describe the best keyword passages."""
        parts = self._parts(terms, cap)
        if not parts or not rows:
            return 0.0
        held = np.zeros(len(rows), dtype=np.int64)
        for lo, hi in parts:
            postings = self.rows[lo:hi]
            held += [bool((postings == row).any()) for row in rows]
        return float(held.max()) / len(parts)

    def search(
        self, terms: list[str], k: int, mask: np.ndarray | None, cap: int
    ) -> list[tuple[int, float]]:
        """Top ``k`` rows by BM25 among those ``mask`` keeps, only rows matching a term."""
        parts = self._parts(terms, cap)
        if not parts:
            return []
        rows = np.concatenate([self.rows[lo:hi] for lo, hi in parts])
        impacts = np.concatenate([self.impacts[lo:hi] for lo, hi in parts])
        if mask is not None:
            keep = mask[rows]
            rows, impacts = rows[keep], impacts[keep]
        scores = np.bincount(rows, weights=impacts, minlength=self.size)
        matched = np.flatnonzero(scores > 0)
        if not len(matched):
            return []
        k = min(k, len(matched))
        top = matched[np.argpartition(-scores[matched], k - 1)[:k]]
        top = top[np.lexsort((top, -scores[top]))]
        return [(int(row), float(scores[row])) for row in top]

    def arrays(self) -> dict[str, np.ndarray]:
        """The index as arrays to store in the database."""
        terms = sorted(self.term_ids, key=self.term_ids.__getitem__)
        return {
            "keyword_terms": strings_array(terms),
            "keyword_starts": self.starts,
            "keyword_rows": self.rows,
            "keyword_impacts": self.impacts,
        }

    @classmethod
    def read(cls, con: duckdb.DuckDBPyConnection, size: int) -> KeywordIndex:
        """The index stored in the database."""
        terms = array_strings(read_array(con, "keyword_terms"))
        return cls(
            term_ids={term: i for i, term in enumerate(terms)},
            starts=read_array(con, "keyword_starts"),
            rows=read_array(con, "keyword_rows"),
            impacts=read_array(con, "keyword_impacts"),
            size=size,
        )


def build_keyword_index(con: duckdb.DuckDBPyConnection, params: Bm25Params) -> KeywordIndex:
    """The index, from the full-text index tables of ``con``'s ``chunks`` (``fts_main_chunks``)."""
    fields = dict(params.field_weights)
    weights = [
        (fieldid, fields.get(name, 1.0))
        for fieldid, name in con.execute(
            "SELECT fieldid, field FROM fts_main_chunks.fields"
        ).fetchall()
    ]
    size = con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    postings = con.execute(
        """
        WITH weights AS (SELECT unnest(?) AS fieldid, unnest(?) AS weight),
        tf AS (
            SELECT t.termid, t.docid, sum(w.weight) AS tf FROM fts_main_chunks.terms t
            JOIN weights w USING (fieldid) GROUP BY ALL
        ),
        documents AS (
            SELECT d.docid, c.rowid AS row, d.len FROM fts_main_chunks.docs d
            JOIN chunks c ON c.chunk_id = d.name
        ),
        scored AS (
            SELECT tf.termid, documents.row::INTEGER AS row,
                (ln((? - dict.df + 0.5) / (dict.df + 0.5) + 1.0) * tf.tf * (? + 1.0)
                 / (tf.tf + ? * (1.0 - ? + ? * documents.len / stats.avgdl)))::FLOAT AS impact
            FROM tf JOIN documents USING (docid) JOIN fts_main_chunks.dict dict USING (termid),
                fts_main_chunks.stats stats
        )
        SELECT termid, row, impact FROM scored ORDER BY termid, impact DESC, row
        """,
        [
            [f for f, _ in weights],
            [w for _, w in weights],
            float(size),
            params.k1,
            params.k1,
            params.b,
            params.b,
        ],
    ).fetchnumpy()
    terms = con.execute(
        "SELECT termid, term FROM fts_main_chunks.dict ORDER BY termid"
    ).fetchnumpy()
    termids = np.asarray(postings["termid"])
    dense = np.searchsorted(terms["termid"], termids)  # term ids as positions 0..T-1
    counts = np.bincount(dense, minlength=len(terms["termid"]))
    return KeywordIndex(
        term_ids={term: i for i, term in enumerate(terms["term"].tolist())},
        starts=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        rows=np.asarray(postings["row"], dtype=np.int32),
        impacts=np.asarray(postings["impact"], dtype=np.float32),
        size=size,
    )
