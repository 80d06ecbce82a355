"""Version every build as a DuckLake snapshot: the lake's ``chunks`` table mirrors the build.

Chunks that left the source are deleted from the lake, new ones inserted, unchanged ones left
alone; the snapshot carries the build's metadata as its commit message and extra info.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
from docserve.duck import connect

LAKE_ALIAS = "lake"


@dataclass
class Snapshot:
    """A DuckLake snapshot of the chunks table."""

    snapshot_id: int
    added: int
    removed: int


def attach_lake(con: duckdb.DuckDBPyConnection, lake_dir: Path, read_only: bool = False) -> None:
    """Attach the local DuckLake catalog of a server as ``lake``."""
    lake_dir.mkdir(parents=True, exist_ok=True)
    catalog = lake_dir / "catalog.ducklake"
    options = f"DATA_PATH '{lake_dir / 'data'}/'" + (", READ_ONLY" if read_only else "")
    con.execute(f"ATTACH 'ducklake:{catalog}' AS {LAKE_ALIAS} ({options})")


def snapshot_chunks(
    lake_dir: Path, parquet: Path, message: str, info: dict[str, object]
) -> Snapshot:
    """Make the lake's chunks equal the Parquet file's, in one snapshot; return it."""
    con = connect(extensions=("ducklake",))
    try:
        attach_lake(con, lake_dir)
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {LAKE_ALIAS}.chunks AS "
            f"SELECT * REPLACE (embedding::FLOAT[] AS embedding) FROM read_parquet(?) LIMIT 0",
            [str(parquet)],
        )
        con.execute("CREATE TEMP TABLE incoming AS SELECT * FROM read_parquet(?)", [str(parquet)])
        con.execute("BEGIN")
        removed = con.execute(
            f"DELETE FROM {LAKE_ALIAS}.chunks WHERE chunk_id NOT IN (SELECT chunk_id FROM incoming)"
        ).fetchone()[0]
        added = con.execute(
            f"INSERT INTO {LAKE_ALIAS}.chunks SELECT * REPLACE (embedding::FLOAT[] AS embedding) "
            f"FROM incoming WHERE chunk_id NOT IN (SELECT chunk_id FROM {LAKE_ALIAS}.chunks)"
        ).fetchone()[0]
        con.execute(
            f"CALL {LAKE_ALIAS}.set_commit_message('docbuild', ?, extra_info => ?)",
            [message, json.dumps(info, default=str)],
        )
        con.execute("COMMIT")
        snapshot_id = con.execute(f"FROM {LAKE_ALIAS}.current_snapshot()").fetchone()[0]
        return Snapshot(int(snapshot_id), int(added), int(removed))
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    finally:
        con.close()


def _read_only_lake(lake_dir: Path) -> duckdb.DuckDBPyConnection:
    if not (lake_dir / "catalog.ducklake").is_file():
        raise FileNotFoundError(f"no builds yet: {lake_dir / 'catalog.ducklake'} does not exist")
    con = connect(extensions=("ducklake",))
    attach_lake(con, lake_dir, read_only=True)
    return con


def list_snapshots(lake_dir: Path) -> list[dict[str, object]]:
    """The builds recorded in the lake, oldest first, with their metadata."""
    con = _read_only_lake(lake_dir)
    try:
        rows = con.execute(
            f"SELECT snapshot_id, snapshot_time::VARCHAR, commit_message, commit_extra_info "
            f"FROM {LAKE_ALIAS}.snapshots() WHERE author = 'docbuild' ORDER BY snapshot_id"
        ).fetchall()
    finally:
        con.close()
    return [
        {"snapshot_id": sid, "time": when, "message": message, "info": json.loads(extra or "{}")}
        for sid, when, message, extra in rows
    ]


def diff_snapshots(lake_dir: Path, old: int, new: int) -> dict[str, list[str]]:
    """Documents added, removed and changed between two snapshots."""
    con = _read_only_lake(lake_dir)
    try:
        versions = {}
        for snapshot in (old, new):
            rows = con.execute(
                f"SELECT document_id, list(content_hash ORDER BY chunk_index) FROM {LAKE_ALIAS}.chunks "
                "AT (VERSION => ?) GROUP BY document_id",
                [snapshot],
            ).fetchall()
            versions[snapshot] = dict(rows)
    except duckdb.Error as exc:
        raise ValueError(f"cannot compare snapshots {old} and {new}: {exc}") from None
    finally:
        con.close()
    before, after = versions[old], versions[new]
    return {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "changed": sorted(d for d in set(before) & set(after) if before[d] != after[d]),
    }
