"""End-to-end builds of corpora the tests write, through the real pipeline and real DuckDB."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from docbuild.build_report import BuildError, format_summary
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docbuild.stages.snapshot import LAKE_ALIAS, lake_location, list_snapshots
from docserve.duck import connect
from pdfmaker import write_pdf

GOOD = {
    "guide.md": "---\ntitle: Vector guide\n---\nIntro.\n\n## Cosine distance\n\n"
    "Use `array_cosine_distance` to compare embeddings.\n\n```sql\nSELECT a < b;\n```\n",
    "mdx/page.mdx": "import X from '@site/x';\n\n# Widgets\n\n<Tabs><TabItem value=\"a\">\n\n"
    "Widgets render a <b>bold</b> label when a < b.\n\n</TabItem></Tabs>\n",
    "broken-front-matter.md": "---\ntitle: [oops\n---\nThe body of a page whose front matter is broken.\n",
    "unclosed.md": "# Unclosed\n\nText before.\n\n```python\nprint('never closed')\n",
}
BAD = {
    "invalid-utf8.md": b"caf\xe9 \xff\xfe",
    "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "empty.md": b"",
    "corrupt.pdf": b"%PDF-1.4\nthis is not a pdf",
}


def write_corpus(root: Path) -> Path:
    src = root / "corpus"
    for name, text in GOOD.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    for name, data in BAD.items():
        (src / name).write_bytes(data)
    write_pdf(
        src / "manual.pdf",
        [["Page one covers installation."], ["Page two covers HNSW indexes."]],
        "Manual",
    )
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(src / "manual.pdf"))
    writer.encrypt("pw")
    writer.write(src / "encrypted.pdf")
    (src / "records.jsonl").write_text(
        json.dumps(
            {"_id": "r1", "title": "Record one", "text": "A JSONL record about rate limits."}
        )
        + "\n"
    )
    return src


@pytest.fixture
def built(project: Path, embedder):
    src = write_corpus(project)
    scaffold("small-docs", str(src), "auto", "https://docs.example.org", root=project)
    config = load_processing_config("small-docs", project)
    report = Build(config, embedder).run()
    return config, report


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_build_indexes_good_files_and_reports_bad_ones(built):
    config, report = built
    skipped = {p.path: p.reason for p in report.skipped}
    assert set(skipped) == {*BAD, "encrypted.pdf"}
    assert "UTF-8" in skipped["invalid-utf8.md"] and "binary" in skipped["binary.md"]
    assert "empty" in skipped["empty.md"] and "encrypted" in skipped["encrypted.pdf"]
    notes = {p.path: p.reason for p in report.problems if not p.skipped}
    assert (
        "front matter" in notes["broken-front-matter.md"] and "never closed" in notes["unclosed.md"]
    )
    assert report.documents == 6 and report.chunks >= 6 and report.embedded == report.chunks
    assert report.hygiene.unbalanced_fences == 0 and report.hygiene.over_limit == 0

    con = connect(config.database_path, read_only=True)
    rows = con.execute("SELECT document_id, path, page, url, section_url FROM chunks").fetchall()
    assert {r[0] for r in rows} == {
        "guide.md",
        "mdx/page.mdx",
        "broken-front-matter.md",
        "unclosed.md",
        "manual.pdf",
        "r1",
    }
    assert {r[2] for r in rows if r[0] == "manual.pdf"} == {1, 2}
    assert (
        "guide.md",
        "guide.md",
        None,
        "https://docs.example.org/guide",
        "https://docs.example.org/guide#cosine-distance",
    ) in rows
    mdx = con.execute("SELECT content FROM chunks WHERE document_id = 'mdx/page.mdx'").fetchone()[0]
    assert "a < b" in mdx and "<b>" not in mdx and "import" not in mdx
    indexes = {r[0] for r in con.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}
    assert "chunks_row" in indexes and "chunks_embedding_hnsw" not in indexes  # HNSW: on request
    index = json.loads(
        con.execute("SELECT value FROM build_info WHERE key = 'search_index'").fetchone()[0]
    )
    assert index["rows"] == len(rows) and index["partitions"] == 0 and index["vectors"] == "float32"
    assert index["bm25"]["field_weights"]["title"] == 2.0 and index["postings"] > index["terms"]
    hits = con.execute(
        "SELECT document_id FROM (SELECT *, fts_main_chunks.match_bm25(chunk_id, 'hnsw indexes') AS s FROM chunks)"
        " WHERE s IS NOT NULL ORDER BY s DESC"
    ).fetchall()
    assert hits[0][0] == "manual.pdf"
    # an unversioned server: no version label on any chunk, no versions in build_info
    assert con.execute("SELECT DISTINCT version FROM chunks").fetchall() == [(None,)]
    info = dict(con.execute("SELECT key, value FROM build_info").fetchall())
    assert json.loads(info["versions"]) == [] and json.loads(info["default_version"]) is None
    assert report.versions == [] and report.snapshot.versions_changed == []
    assert json.loads(info["model_id"]) == "sentence-transformers/all-MiniLM-L6-v2"
    assert json.loads(info["dimension"]) == 384
    assert json.loads(info["snapshot_id"]) == report.snapshot.snapshot_id
    assert json.loads(info["chunk_count"]) == report.chunks
    vector = con.execute("SELECT embedding FROM chunks WHERE document_id = 'r1'").fetchone()[0]
    nearest = con.execute(
        "SELECT document_id FROM chunks ORDER BY array_cosine_distance(embedding, ?::FLOAT[384]) LIMIT 1",
        [vector],
    ).fetchone()[0]
    assert nearest == "r1"


def test_hnsw_index_on_request_serves_sql_nearest_neighbour_queries(built, embedder):
    config, _ = built
    path = config.server_root / "config" / "processing_config.yaml"
    path.write_text(path.read_text() + "\nindex:\n  hnsw: true\n")
    Build(load_processing_config("small-docs", config.server_root.parent.parent), embedder).run()
    con = connect(config.database_path, read_only=True, extensions=("vss",))
    indexes = {r[0] for r in con.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}
    assert "chunks_embedding_hnsw" in indexes
    query = con.execute("SELECT embedding FROM chunks WHERE document_id = 'guide.md'").fetchone()[0]
    sql = (
        "SELECT document_id FROM chunks ORDER BY "
        "array_cosine_distance(embedding, ?::FLOAT[384]) LIMIT 1"
    )
    assert "HNSW" in "".join(str(r) for r in con.execute("EXPLAIN " + sql, [query]).fetchall())
    assert con.execute(sql, [query]).fetchone()[0] == "guide.md"


def test_unchanged_rebuild_embeds_nothing_and_edit_embeds_only_changes(built, embedder):
    config, first = built
    again = Build(config, embedder).run()
    assert again.embedded == 0 and again.cached == first.chunks
    assert (again.snapshot.added, again.snapshot.removed) == (0, 0)
    source = config.source.path / "guide.md"
    source.write_text(source.read_text() + "\n## New section\n\nFresh words about quantisation.\n")
    edited = Build(config, embedder).run()
    assert 1 <= edited.embedded <= 2
    assert edited.snapshot.snapshot_id > again.snapshot.snapshot_id


def test_an_unchanged_rebuild_keeps_the_served_database_and_a_setting_change_rewrites_it(
    built, embedder
):
    config, first = built
    database = config.database_path
    served = (database.stat().st_ino, database.stat().st_mtime_ns, digest(database))
    again = Build(config, embedder).run()
    assert not again.materialized
    assert again.snapshot.snapshot_id == first.snapshot.snapshot_id
    assert (database.stat().st_ino, database.stat().st_mtime_ns, digest(database)) == served
    assert "served database unchanged" in format_summary(again)
    # a search setting the postings are scored with is part of the database: written again
    server_config = config.server_root / "config" / "server_config.yaml"
    text = server_config.read_text()
    assert "{title: 2.0," in text
    server_config.write_text(text.replace("{title: 2.0,", "{title: 3.0,"))
    changed = Build(config, embedder).run()
    assert changed.materialized and database.stat().st_ino != served[0]
    with connect(database, read_only=True, extensions=()) as con:
        index = con.execute("SELECT value FROM build_info WHERE key = 'search_index'").fetchone()
    assert json.loads(index[0])["bm25"]["field_weights"]["title"] == 3.0


def test_an_embedding_cache_from_an_earlier_version_is_kept(built, embedder):
    """Caches written before the append-only layout (a keyed ``embeddings`` table of FLOAT[]
    lists) are moved over on opening: an upgrade re-embeds nothing."""
    import duckdb

    config, first = built
    cache = config.work_dir / "embeddings.duckdb"
    con = duckdb.connect(str(cache))
    rows = con.execute("SELECT model, text_hash, embedding FROM vectors").fetchall()
    con.execute(
        "CREATE TABLE embeddings (model VARCHAR NOT NULL, text_hash VARCHAR NOT NULL,"
        " embedding FLOAT[] NOT NULL, PRIMARY KEY (model, text_hash))"
    )
    con.executemany(
        "INSERT INTO embeddings VALUES (?, ?, ?)",
        [(model, hashed, np.frombuffer(blob, np.float32).tolist()) for model, hashed, blob in rows],
    )
    con.execute("DROP TABLE vectors")
    con.close()
    again = Build(config, embedder).run()
    assert again.embedded == 0 and again.cached == first.chunks
    con = duckdb.connect(str(cache), read_only=True)
    tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert tables == {"vectors"} and con.execute("SELECT count(*) FROM vectors").fetchone()[
        0
    ] == len(rows)
    con.close()


def test_a_lake_from_before_code_terms_serves_and_takes_them_on(built, embedder):
    """A lake written before chunks carried their ``code_terms``: its snapshots materialize with
    the terms computed, and the next build adds the column and fills it for the kept chunks."""
    config, _ = built

    def served_terms() -> dict[str, str]:
        con = connect(config.database_path, read_only=True)
        try:
            return dict(con.execute("SELECT chunk_id, code_terms FROM chunks").fetchall())
        finally:
            con.close()

    fresh = served_terms()
    assert any("cosine" in terms.split() for terms in fresh.values())
    lake = lake_location(config)
    # the build snapshot an earlier version would have written: the same chunks, no code_terms
    info = list_snapshots(lake)[-1]["info"]
    con = connect(extensions=("ducklake",))
    lake.attach(con)
    con.execute("BEGIN")
    con.execute(f"ALTER TABLE {LAKE_ALIAS}.chunks DROP COLUMN code_terms")
    con.execute(
        f"CALL {LAKE_ALIAS}.set_commit_message('docbuild', 'old', extra_info => ?)",
        [json.dumps(info)],
    )
    con.execute("COMMIT")
    old = con.execute(f"FROM {LAKE_ALIAS}.current_snapshot()").fetchone()[0]
    con.close()
    Build(config, embedder).rollback(old)
    assert served_terms() == fresh
    again = Build(config, embedder).run()
    assert again.embedded == 0 and (again.snapshot.added, again.snapshot.removed) == (0, 0)
    assert served_terms() == fresh
    con = connect(extensions=("ducklake",))
    lake.attach(con, read_only=True)
    assert con.execute(
        f"SELECT count(*) FROM {LAKE_ALIAS}.chunks WHERE code_terms IS NULL"
    ).fetchone() == (0,)
    con.close()


def test_failed_build_leaves_previous_database_untouched(built, monkeypatch):
    config, _ = built
    before = digest(config.database_path)
    (config.source.path / "new.md").write_text("# New\n\nA page that needs embedding.\n")
    # a real endpoint that is not there: nothing listens on port 9 of the loopback
    monkeypatch.setenv("DOCMCP_EMBEDDING__PROVIDER", "openai")
    monkeypatch.setenv("DOCMCP_EMBEDDING__OPENAI__BASE_URL", "http://127.0.0.1:9/v1")
    failing = load_processing_config(config.name, config.server_root.parents[1])
    with pytest.raises(BuildError, match=r"embed.*127\.0\.0\.1:9"):
        Build(failing).run()
    assert digest(config.database_path) == before
    assert not [p for p in config.database_path.parent.iterdir() if ".tmp" in p.name]


def test_zero_documents_is_a_clear_error(project: Path, embedder):
    src = project / "empty-corpus"
    src.mkdir()
    (src / "empty.md").write_bytes(b"")
    scaffold("nothing", str(src), "md", root=project)
    with pytest.raises(BuildError, match="no documents to index"):
        Build(load_processing_config("nothing", project), embedder).run()


def test_renamed_files_are_not_embedded_again(project: Path, embedder):
    src = project / "corpus"
    (src / "notes").mkdir(parents=True)
    (src / "notes" / "apple-notes.md").write_text("Apples keep for months in a cold cellar.\n")
    (src / "titled.md").write_text("# Pears\n\nPears ripen off the tree.\n")
    write_pdf(src / "orchard.pdf", [["Plums flower early in spring."]], "")
    scaffold("renames", str(src), "auto", root=project)
    config = load_processing_config("renames", project)
    first = Build(config, embedder).run()
    source = config.source.path
    (source / "notes" / "apple-notes.md").rename(source / "fruit-storage.md")
    (source / "titled.md").rename(source / "pears.md")
    (source / "orchard.pdf").rename(source / "stone-fruit.pdf")

    renamed = Build(config, embedder).run()
    assert renamed.embedded == 0 and renamed.cached == first.chunks == renamed.chunks
    assert renamed.snapshot.added == renamed.snapshot.removed == first.chunks
    with connect(config.database_path, read_only=True, extensions=()) as con:
        rows = dict(con.execute("SELECT path, title FROM chunks").fetchall())
    # the title made from the new file name is what results show (and keyword search indexes)
    assert rows == {
        "fruit-storage.md": "Fruit storage",
        "pears.md": "Pears",
        "stone-fruit.pdf": "Stone fruit",
    }


def chunk_ids(database: Path) -> set[str]:
    with connect(database, read_only=True, extensions=()) as con:
        return {row[0] for row in con.execute("SELECT chunk_id FROM chunks").fetchall()}


def test_unchanged_files_are_neither_parsed_nor_chunked_again(built, embedder, monkeypatch):
    config, first = built
    assert first.files_unchanged == first.documents_unchanged == 0
    before = chunk_ids(config.database_path)
    page = config.source.path / "guide.md"
    page.write_text(page.read_text() + "\nOne more sentence.\n")
    again = Build(config, embedder).run()
    assert again.files_unchanged == first.files - 1  # bad files' verdicts are kept too
    assert again.documents_unchanged == first.documents - 1
    assert again.skipped == first.skipped
    assert len(before - chunk_ids(config.database_path)) == 1  # only guide.md's chunk changed

    # other chunking settings: nothing is reused, and the chunks follow the new settings
    monkeypatch.setenv("DOCMCP_CHUNKING__MAX_TOKENS", "64")
    smaller = Build(load_processing_config(config.name, config.server_root.parents[1]), embedder)
    report = smaller.run()
    assert report.documents_unchanged == 0 and report.hygiene.max_tokens <= 64
    assert report.files_unchanged == report.files  # parsing does not depend on chunking

    # an unreadable cache is ignored
    for cache in (config.work_dir / "cache").iterdir():
        cache.write_bytes(b"\x80garbage")
    monkeypatch.delenv("DOCMCP_CHUNKING__MAX_TOKENS")
    cold = Build(config, embedder).run()
    assert cold.files_unchanged == cold.documents_unchanged == 0
    assert cold.embedded == 0 and cold.chunks == again.chunks


def contents_by_document(database: Path) -> dict[str, str]:
    with connect(database, read_only=True, extensions=()) as con:
        rows = con.execute(
            "SELECT document_id, content FROM chunks ORDER BY chunk_index"
        ).fetchall()
    joined: dict[str, str] = {}
    for document_id, content in rows:
        joined[document_id] = joined.get(document_id, "") + content
    return joined


def test_local_source_is_read_in_place_edits_additions_and_deletions(
    project: Path, tmp_path: Path, embedder
):
    mine = tmp_path / "my-docs"  # the user's own folder, outside the project
    mine.mkdir()
    (mine / "kept.md").write_text("# Kept\n\nBees make honey from nectar.\n")
    (mine / "edited.md").write_text("# Edited\n\nThe first draft mentions walruses.\n")
    (mine / "deleted.md").write_text("# Deleted\n\nA page about lighthouses.\n")
    scaffold("in-place", str(mine), "md", root=project)
    config = load_processing_config("in-place", project)
    Build(config, embedder).run()
    assert set(contents_by_document(config.database_path)) == {"kept.md", "edited.md", "deleted.md"}

    (mine / "edited.md").write_text("# Edited\n\nThe second draft mentions narwhals.\n")
    (mine / "added.md").write_text("# Added\n\nA new page about glaciers.\n")
    (mine / "deleted.md").unlink()
    report = Build(load_processing_config("in-place", project), embedder).run()
    docs = contents_by_document(config.database_path)
    assert set(docs) == {"kept.md", "edited.md", "added.md"}
    assert "narwhals" in docs["edited.md"] and "walruses" not in docs["edited.md"]
    assert "glaciers" in docs["added.md"]
    assert report.files_unchanged == 1 and report.embedded == 2
    assert not (project / "source-documentation").exists()  # nothing was copied


def test_server_scaffolded_with_a_synced_copy_now_reads_the_original(project: Path, embedder):
    """Configs written before sources were read in place (``path`` a copy, ``local`` the
    original) keep building, from the original."""
    mine = project / "originals"
    mine.mkdir()
    (mine / "page.md").write_text("# Page\n\nCurrent text about otters.\n")
    stale = project / "source-documentation" / "legacy"
    stale.mkdir(parents=True)
    (stale / "page.md").write_text("# Page\n\nStale text about beavers.\n")
    scaffold("legacy", str(mine), "md", root=project)
    config_file = project / "servers" / "legacy" / "config" / "processing_config.yaml"
    text = config_file.read_text()
    old_block = (
        "  path: ${PROJECT_ROOT}/source-documentation/${MCP_NAME}\n"
        "  local: ${PROJECT_ROOT}/originals\n"
    )
    config_file.write_text(text.replace('  path: "${PROJECT_ROOT}/originals"\n', old_block))
    config = load_processing_config("legacy", project)
    assert config.source.path == mine
    Build(config, embedder).run()
    assert "otters" in contents_by_document(config.database_path)["page.md"]


def test_missing_local_source_is_a_clear_error(project: Path, tmp_path: Path, embedder):
    mine = tmp_path / "moving"
    mine.mkdir()
    (mine / "a.md").write_text("# A\n\ntext\n")
    scaffold("moved", str(mine), "md", root=project)
    (mine / "a.md").unlink()
    mine.rmdir()
    with pytest.raises(BuildError, match=r"source folder .*moving does not exist: fix source.path"):
        Build(load_processing_config("moved", project), embedder).run()


def test_an_edited_include_reparses_the_page_that_includes_it(project: Path, embedder):
    src = project / "adoc"
    src.mkdir()
    (src / "page.adoc").write_text("= Page\n\n== Options\n\ninclude::options.adoc[]\n")
    (src / "options.adoc").write_text("--fast::\n\tRuns quickly.\n")
    scaffold("includes", str(src), "asciidoc", root=project)
    config = load_processing_config("includes", project)
    first = Build(config, embedder).run()
    assert [p.path for p in first.skipped] == ["options.adoc"]  # a fragment, read via page.adoc
    assert "Runs quickly" in contents_by_document(config.database_path)["page.adoc"]

    (src / "options.adoc").write_text("--slow::\n\tRuns carefully.\n")
    again = Build(config, embedder).run()
    text = contents_by_document(config.database_path)["page.adoc"]
    assert "Runs carefully" in text and "Runs quickly" not in text
    assert again.files_unchanged == 0  # page.adoc's bytes did not change, its include did

    unchanged = Build(config, embedder).run()
    assert unchanged.files_unchanged == 2 and unchanged.embedded == 0


def test_chunks_longer_than_the_model_reads_are_refused(project: Path, embedder):
    src = project / "long-corpus"
    src.mkdir()
    (src / "page.md").write_text("# Page\n\nSome text about chunk sizes.\n")
    scaffold("too-long", str(src), "md", root=project)
    path = project / "servers" / "too-long" / "config" / "processing_config.yaml"
    path.write_text(path.read_text().replace("max_tokens: 256", "max_tokens: 512"))
    with pytest.raises(BuildError, match=r"max_tokens is 512.*at most 256 tokens"):
        Build(load_processing_config("too-long", project), embedder).run()
    assert not (project / "servers" / "too-long" / "runtime" / "too_long.db").exists()
