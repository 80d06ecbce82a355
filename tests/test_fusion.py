"""Fusion of the vector and keyword candidate lists: convex combination (default) and RRF."""

from __future__ import annotations

from pathlib import Path

import pytest
from docserve.config import SearchSettings, load_settings
from docserve.search import fuse, min_max
from docserve.settings import SettingsError

# Row 2 is a close second in both lists; rows 1 and 3 each top one list and are far last in the other.
LISTS = {
    "vector": [(1, 0.90), (2, 0.89), (3, 0.20)],
    "keyword": [(3, 12.0), (2, 11.9), (1, 1.0)],
}


def fused(**settings: object) -> list[tuple[int, float, dict[str, int]]]:
    return fuse(LISTS, None, SearchSettings(**settings))  # type: ignore[arg-type]


def test_min_max_maps_best_to_one_and_worst_to_zero():
    assert min_max([(7, 3.0), (8, 2.0), (9, 1.0)]) == [(7, 1.0), (8, 0.5), (9, 0.0)]
    assert min_max([(7, 0.4), (8, 0.4)]) == [(7, 1.0), (8, 1.0)]
    assert min_max([]) == []


def test_convex_fusion_keeps_score_gaps():
    rows = fused(fusion="convex")
    assert rows[0][0] == 2  # near the top of both lists beats top of one
    scores = {row: score for row, score, _ in rows}
    assert scores[2] == pytest.approx((0.89 - 0.20) / 0.70 + (11.9 - 1.0) / 11.0)
    assert scores[1] == pytest.approx(1.0) and scores[3] == pytest.approx(1.0)
    assert rows[0][2] == {"vector": 2, "keyword": 2}


def test_rrf_fusion_sees_only_ranks():
    rows = fused(fusion="rrf", rrf_k=10)
    assert [row for row, _, _ in rows] == [1, 3, 2]  # ranks 1 + 3 beat ranks 2 + 2
    assert rows[-1][1] == pytest.approx(2 / 12)


def test_retriever_weights_apply_to_both_fusions():
    for fusion in ("convex", "rrf"):
        rows = fused(fusion=fusion, vector_weight=1.0, keyword_weight=0.01)
        assert rows[0][0] == 1, fusion


def test_one_retriever_keeps_its_own_scores():
    only = fuse({"keyword": LISTS["keyword"]}, None, SearchSettings())
    assert [(row, score) for row, score, _ in only] == (LISTS["keyword"])


def test_unknown_fusion_is_a_clear_error(tmp_path: Path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "server_config.yaml").write_text("search:\n  fusion: linear\n")
    with pytest.raises(SettingsError, match=r"search\.fusion is 'linear'; use one of convex, rrf"):
        load_settings("x", tmp_path)
