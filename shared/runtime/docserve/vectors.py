"""Vector search over the embeddings held in memory (float32): exact, or partitioned when large.

Exact: every vector scored by one matrix-vector product, perfect recall. Partitioned (large
databases, decided by the build): the vectors are grouped by the partition (spherical k-means
cluster) they belong to, each partition one contiguous block; a query scores the centroids, then
every vector of its ``probes`` nearest partitions, exactly, block by block (no copy). A filter
that keeps few rows is scored exactly over just those rows; one that keeps many probes
proportionally more partitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import duckdb
import numpy as np

from .arrays import read_array

SUBSET_SHARE = 4  # exact search: a filter keeping under 1/4 of the rows scores just those


@dataclass
class VectorIndex:
    """Vectors in partition order; ``order[i]`` is the table row of ``vectors[i]``."""

    vectors: np.ndarray  # (N, D) float32
    order: np.ndarray | None = None  # int32 rows; None: vectors are in row order
    centroids: np.ndarray | None = None  # (K, D) float32; None: exact search
    starts: np.ndarray | None = None  # int64 (K + 1): partition p is vectors[starts[p]:starts[p+1]]
    probes: int = 32
    _position: np.ndarray | None = field(default=None, repr=False)

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def describe(self) -> str:
        """``exact`` or ``N partitions, P probed``, for stats."""
        if self.centroids is None:
            return "exact"
        return f"{len(self.centroids)} partitions, {self.probes} probed per query"

    def search(
        self, vector: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Top ``k`` rows by cosine similarity among the rows ``mask`` keeps."""
        if self.centroids is None:
            return self._exact(vector, k, mask)
        kept = len(self) if mask is None else int(np.count_nonzero(mask))
        per_partition = len(self) / len(self.centroids)
        probes = min(len(self.centroids), math.ceil(self.probes * len(self) / max(kept, 1)))
        if kept <= probes * per_partition:  # fewer rows than the probes would score
            rows = np.flatnonzero(mask) if mask is not None else np.arange(len(self))
            return self._top(self.vectors[self.position[rows]] @ vector, rows, k)
        nearest = np.argpartition(-(self.centroids @ vector), probes - 1)[:probes]
        assert self.starts is not None and self.order is not None
        blocks = [(self.starts[p], self.starts[p + 1]) for p in nearest.tolist()]
        rows = np.concatenate([self.order[lo:hi] for lo, hi in blocks])
        scores = np.concatenate([self.vectors[lo:hi] @ vector for lo, hi in blocks])
        if mask is not None:
            keep = mask[rows]
            rows, scores = rows[keep], scores[keep]
        return self._top(scores, rows, k)

    def _exact(
        self, vector: np.ndarray, k: int, mask: np.ndarray | None
    ) -> list[tuple[int, float]]:
        rows = None if mask is None else np.flatnonzero(mask)
        if rows is not None and len(rows) * SUBSET_SHARE < len(mask):
            scores = self.vectors[rows] @ vector  # a small subset: score only its rows
        else:  # copying most of the matrix would cost more than scoring all of it
            scores = self.vectors @ vector
            if rows is not None:
                scores = scores[rows]
        return self._top(scores, rows, k)

    @staticmethod
    def _top(scores: np.ndarray, rows: np.ndarray | None, k: int) -> list[tuple[int, float]]:
        k = min(k, len(scores))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        ids = top if rows is None else rows[top]
        return [(int(row), float(score)) for row, score in zip(ids, scores[top], strict=True)]

    @property
    def position(self) -> np.ndarray:
        """Where each row's vector is in ``vectors``."""
        if self._position is None:
            position = np.empty(len(self), dtype=np.int64)
            position[self.order if self.order is not None else slice(None)] = np.arange(len(self))
            self._position = position
        return self._position

    def arrays(self) -> dict[str, np.ndarray]:
        """The index as arrays to store in the database."""
        arrays = {"vectors": self.vectors}
        if self.centroids is not None:
            assert self.order is not None and self.starts is not None
            arrays |= {
                "vector_order": self.order,
                "vector_centroids": self.centroids,
                "vector_starts": self.starts,
            }
        return arrays

    @classmethod
    def read(cls, con: duckdb.DuckDBPyConnection, partitioned: bool, probes: int) -> VectorIndex:
        """The index stored in the database."""
        vectors = read_array(con, "vectors")
        if not partitioned:
            return cls(vectors)
        return cls(
            vectors,
            order=read_array(con, "vector_order"),
            centroids=read_array(con, "vector_centroids"),
            starts=read_array(con, "vector_starts"),
            probes=probes,
        )
