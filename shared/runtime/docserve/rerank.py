"""Optional reranking of fused candidates: an HTTP endpoint or an in-process cross-encoder.

HTTP speaks the two common shapes: TEI (``POST {query, texts}`` → ``[{index, score}]``) and
Cohere (``POST {model, query, documents}`` → ``{results: [{index, relevance_score}]}``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

import numpy as np

from .config import RerankSettings


class RerankError(RuntimeError):
    """The reranker could not score; search falls back to the fused order."""


class Reranker(Protocol):
    """Scores passages against a query (higher is better)."""

    candidates: int

    def score(self, query: str, passages: list[str]) -> list[float]: ...


class HttpReranker:
    """A TEI- or Cohere-shaped rerank endpoint."""

    def __init__(self, settings: RerankSettings) -> None:
        import httpx

        if not settings.url:
            raise ValueError("rerank.url is required for the http reranker")
        self.settings = settings
        self.candidates = settings.candidates
        token = os.environ.get(settings.api_key_env or "", "")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(timeout=settings.timeout, headers=headers)

    def score(self, query: str, passages: list[str]) -> list[float]:
        """Scores in passage order."""
        import httpx

        cohere = self.settings.style == "cohere"
        body: dict[str, object] = (
            {"query": query, "documents": passages, "top_n": len(passages)}
            if cohere
            else {"query": query, "texts": passages, "truncate": True}
        )
        if self.settings.model:
            body["model"] = self.settings.model
        try:
            response = self.client.post(self.settings.url or "", json=body)
            response.raise_for_status()
            data = response.json()
            items = data["results"] if cohere else data
            scores = [0.0] * len(passages)
            seen = set()
            for item in items:
                index = int(item["index"])
                scores[index] = float(item["relevance_score"] if cohere else item["score"])
                seen.add(index)
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise RerankError(f"rerank endpoint {self.settings.url} failed: {exc}") from None
        if len(seen) != len(passages):
            raise RerankError(
                f"rerank endpoint {self.settings.url} scored {len(seen)} of {len(passages)} passages"
            )
        return scores


class CrossEncoderReranker:
    """A local cross-encoder folder run in process."""

    def __init__(self, settings: RerankSettings) -> None:
        from .crossencoder import CrossEncoder

        if not settings.model_path:
            raise ValueError("rerank.model_path is required for the cross-encoder reranker")
        self.model = CrossEncoder(Path(settings.model_path))
        self.candidates = settings.candidates

    def score(self, query: str, passages: list[str]) -> list[float]:
        """Scores in passage order."""
        try:
            return [float(x) for x in np.asarray(self.model.score(query, passages))]
        except Exception as exc:  # an inference failure must not fail the search
            raise RerankError(f"cross-encoder failed: {exc}") from None


def make_reranker(settings: RerankSettings) -> Reranker | None:
    """The configured reranker, or None when reranking is off."""
    if settings.provider in ("none", "", None):
        return None
    if settings.provider == "http":
        return HttpReranker(settings)
    if settings.provider == "cross-encoder":
        return CrossEncoderReranker(settings)
    raise ValueError(
        f"unknown rerank provider {settings.provider!r}: use none, http or cross-encoder"
    )
