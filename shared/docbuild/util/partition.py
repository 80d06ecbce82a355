"""Group the embeddings into partitions (spherical k-means) for the runtime's partitioned search."""

from __future__ import annotations

import numpy as np
from docserve.vectors import VectorIndex

SAMPLE_PER_PARTITION = 64
ITERATIONS = 8
BLOCK = 65_536


def partition_count(rows: int) -> int:
    """Partitions for ``rows`` vectors: about the square root, so a partition holds as many."""
    return max(1, round(rows**0.5))


def nearest(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each vector's nearest centroid (largest dot product), in blocks to bound memory."""
    return np.concatenate(
        [
            np.argmax(vectors[i : i + BLOCK] @ centroids.T, axis=1)
            for i in range(0, len(vectors), BLOCK)
        ]
    ).astype(np.int32)


def partitioned_index(vectors: np.ndarray, probes: int, seed: int = 0) -> VectorIndex:
    """A :class:`VectorIndex` over ``vectors`` (unit float32 rows, in table row order) with the
    vectors grouped by partition."""
    count = partition_count(len(vectors))
    rng = np.random.default_rng(seed)
    sample = vectors[
        np.sort(
            rng.choice(len(vectors), min(len(vectors), count * SAMPLE_PER_PARTITION), replace=False)
        )
    ]
    centroids = sample[rng.choice(len(sample), count, replace=False)].copy()
    for _ in range(ITERATIONS):
        labels = nearest(sample, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, labels, sample)
        empty = np.bincount(labels, minlength=count) == 0
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()), replace=False)]
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    labels = nearest(vectors, centroids)
    order = np.argsort(labels, kind="stable").astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=count))]).astype(np.int64)
    return VectorIndex(
        vectors[order],
        order=order,
        centroids=centroids.astype(np.float32),
        starts=starts,
        probes=probes,
    )
