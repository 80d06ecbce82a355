"""Every build is a DuckLake snapshot: list them, diff two, and roll back without embedding."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import REPO
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docbuild.stages.snapshot import diff_snapshots, lake_location, list_snapshots
from docserve.duck import connect


def tool(name: str, *args: str, root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root), **env}
    return subprocess.run(
        [str(REPO / "tools" / name), *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=600,
    )


def documents(database: Path) -> set[str]:
    con = connect(database, read_only=True, extensions=())
    try:
        return {row[0] for row in con.execute("SELECT DISTINCT document_id FROM chunks").fetchall()}
    finally:
        con.close()


def test_builds_diff_and_rollback(project: Path, embedder):
    src = project / "src"
    src.mkdir()
    (src / "a.md").write_text("# A\n\nFirst page about apples.\n")
    (src / "b.md").write_text("# B\n\nSecond page about bananas.\n")
    scaffold("ver-docs", str(src), "md", root=project)
    config = load_processing_config("ver-docs", project)
    first = Build(config, embedder).run().snapshot.snapshot_id
    source = config.source.path
    (source / "a.md").write_text("# A\n\nFirst page about apples, now with pears.\n")
    (source / "c.md").write_text("# C\n\nThird page about cherries.\n")
    second = Build(config, embedder).run().snapshot.snapshot_id
    (source / "b.md").unlink()
    third = Build(config, embedder).run().snapshot.snapshot_id
    assert documents(config.database_path) == {"a.md", "c.md"}  # the deleted file left the database

    lake = lake_location(config)
    builds = list_snapshots(lake)
    assert [b["snapshot_id"] for b in builds] == [first, second, third]
    assert [b["info"]["document_count"] for b in builds] == [2, 3, 2]
    assert all(b["info"]["config_hash"] and b["time"] for b in builds)
    assert diff_snapshots(lake, first, second) == {
        "added": ["c.md"],
        "removed": [],
        "changed": ["a.md"],
        "chunks_added": 2,  # c.md's chunk and a.md's new one
        "chunks_removed": 1,  # a.md's old one
    }
    assert diff_snapshots(lake, second, third) == {
        "added": [],
        "removed": ["b.md"],
        "changed": [],
        "chunks_added": 0,
        "chunks_removed": 1,
    }

    listed = tool("build_mcp.sh", "--help", root=project)
    assert "--from-snapshot" in listed.stdout
    builds = subprocess.run(
        [str(REPO / ".venv" / "bin" / "docbuild"), "builds", "ver-docs", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
        timeout=120,
    )
    assert [v["snapshot_id"] for v in json.loads(builds.stdout)] == [first, second, third]
    diff = subprocess.run(
        [str(REPO / ".venv" / "bin" / "docbuild"), "diff", "ver-docs", str(second), str(third)],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
        timeout=120,
    )
    assert "removed (1):\n  b.md" in diff.stdout

    # rollback embeds nothing: it works even with an embedder that cannot be reached
    rolled = tool(
        "build_mcp.sh",
        "ver-docs",
        "--from-snapshot",
        str(first),
        root=project,
        DOCMCP_EMBEDDING__PROVIDER="openai",
        DOCMCP_EMBEDDING__OPENAI__BASE_URL="http://127.0.0.1:9/v1",
    )
    assert rolled.returncode == 0, rolled.stderr
    assert documents(config.database_path) == {"a.md", "b.md"}
    con = connect(config.database_path, read_only=True, extensions=())
    info = {
        k: json.loads(v) for k, v in con.execute("SELECT key, value FROM build_info").fetchall()
    }
    con.close()
    assert info["snapshot_id"] == first and info["rolled_back_to"] == first
    missing = tool("build_mcp.sh", "ver-docs", "--from-snapshot", "999", root=project)
    assert missing.returncode == 1 and "no build snapshot 999" in missing.stderr
