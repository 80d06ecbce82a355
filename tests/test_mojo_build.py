"""End-to-end build of the Mojo manual (the test corpora): chunk hygiene and the database."""

import json
from pathlib import Path

import pytest
from conftest import corpus
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docserve.duck import connect


@pytest.fixture(scope="module")
def mojo_build(tmp_path_factory, embedder):
    docs = corpus("mojo-manual-2025-11", "docs")
    root: Path = tmp_path_factory.mktemp("mojo-project")
    (root / "servers").mkdir()
    scaffold("mojo-manual-mcp", str(docs), "mdx", "https://docs.modular.com/mojo/manual", root=root)
    config = load_processing_config("mojo-manual-mcp", root)
    return config, Build(config, embedder).run()


def test_mojo_chunk_hygiene(mojo_build):
    _, report = mojo_build
    h = report.hygiene
    assert report.files == 45 and report.documents == 45 and not report.skipped
    assert h.unbalanced_fences == 0
    assert h.hierarchy_share >= 0.98
    assert h.over_limit == 0 and h.max_tokens <= 256


def test_mojo_database_has_indexes_and_build_info(mojo_build):
    config, report = mojo_build
    assert config.database_path.name == "mojo_manual_mcp.db"
    con = connect(config.database_path, read_only=True)
    assert con.execute("SELECT count(*) FROM chunks").fetchone()[0] == report.chunks
    indexes = {r[0] for r in con.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}
    assert "chunks_row" in indexes and "chunks_embedding_hnsw" not in indexes
    info = {
        k: json.loads(v) for k, v in con.execute("SELECT key, value FROM build_info").fetchall()
    }
    assert info["snapshot_id"] == report.snapshot.snapshot_id and info["document_count"] == 45
    top = con.execute(
        "SELECT path FROM (SELECT path, fts_main_chunks.match_bm25(chunk_id, 'always_inline decorator') AS s"
        " FROM chunks) WHERE s IS NOT NULL ORDER BY s DESC LIMIT 1"
    ).fetchone()[0]
    assert top == "decorators/always-inline.mdx"
    code = con.execute(
        "SELECT count(*) FROM chunks WHERE has_code AND content LIKE '%```mojo%'"
    ).fetchone()[0]
    assert code > 100
