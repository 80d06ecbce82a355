"""Version every build as a DuckLake snapshot: the lake's ``chunks`` table mirrors the build.

Chunks that left the source are deleted from the lake, new ones inserted, unchanged ones left
alone; the snapshot carries the build's metadata as its commit message and extra info.

The catalog is a DuckDB file under ``servers/NAME/build/lake/`` by default, or a PostgreSQL
database shared by a team (``lake.catalog: postgres:CONNINFO``), where each server keeps its
catalog tables in its own schema (``NAME_UNDERSCORED``). The data files may live in a bucket
(``lake.data_path: s3://BUCKET/PREFIX/``); the credentials never pass through here: DuckDB reads
them from the environment (``AWS_ACCESS_KEY_ID``...) or from the maintainer's DuckDB secrets.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from docserve.duck import ExtensionNotInstalledError, connect, extension_path
from docserve.folder import underscored

from docbuild.config import OBJECT_STORES, ProcessingConfig, S3Config

LAKE_ALIAS = "lake"
POSTGRES = "postgres:"
EXTENSION_PACKAGES = {"postgres_scanner": "duckdb-ext-postgres", "httpfs": "duckdb-ext-httpfs"}
ACCESS_PROBE = "docbuild-access-check-*"
ADDED_COLUMNS = ("version", "code_terms")
"""Chunk columns that lakes written by earlier versions lack: added (NULL for the rows they hold)
by the next snapshot."""
"""A glob under the data path that matches no file: listing it proves the bucket answers."""


class LakeError(ValueError):
    """The lake's catalog or data files cannot be reached or used."""


@dataclass
class Snapshot:
    """A DuckLake snapshot of the chunks table."""

    snapshot_id: int
    added: int
    removed: int
    # the documentation versions whose chunks it added or removed, and how many, per version
    versions_changed: list[str] = field(default_factory=list)
    by_version: dict[str | None, tuple[int, int]] = field(default_factory=dict)  # label: (+, -)


@dataclass(frozen=True)
class LakeLocation:
    """Where a server's DuckLake lives: its catalog and the folder or URL of its data files."""

    catalog: str  # a DuckDB file, or "postgres:CONNINFO"
    data_path: str  # ends with "/"
    metadata_schema: str | None = None  # the PostgreSQL schema of the catalog tables
    settings: tuple[tuple[str, str], ...] = ()  # DuckDB settings of the object store (lake.s3)

    @property
    def conninfo(self) -> str | None:
        """The libpq connection string of a PostgreSQL catalog (None for a DuckDB file)."""
        return self.catalog.removeprefix(POSTGRES) if self.catalog.startswith(POSTGRES) else None

    @property
    def bucket(self) -> str | None:
        """The bucket of an object-store data path (None for a folder)."""
        scheme, _, rest = self.data_path.partition("://")
        return rest.split("/", 1)[0] if rest and scheme.lower() in OBJECT_STORES else None

    def describe(self) -> str:
        """The catalog, for messages."""
        if self.conninfo is None:
            return f"DuckLake catalog {self.catalog}"
        schema = f" (schema {self.metadata_schema})" if self.metadata_schema else ""
        return f"PostgreSQL DuckLake catalog '{self.conninfo}'{schema}"

    def extensions(self) -> list[str]:
        """DuckDB extensions the catalog and the data path need besides ``ducklake``."""
        scheme = self.data_path.split("://", 1)[0].lower() if "://" in self.data_path else ""
        needed = ["postgres_scanner"] if self.conninfo is not None else []
        return needed + ([OBJECT_STORES[scheme]] if scheme in OBJECT_STORES else [])

    def attach(self, con: duckdb.DuckDBPyConnection, read_only: bool = False) -> None:
        """Attach the lake as ``lake`` (the ducklake extension must be loaded)."""
        for name in self.extensions():
            try:
                con.execute(f"LOAD '{extension_path(name)}'")
            except ExtensionNotInstalledError:
                package = EXTENSION_PACKAGES.get(name, f"duckdb-ext-{name}")
                raise LakeError(
                    f"the {self.describe()} with data in {self.data_path} needs the DuckDB extension "
                    f"{name!r}: `pip install '{package}=={duckdb.__version__}.*'`"
                ) from None
        for name, value in self.settings:
            con.execute(f"SET {name} = {_literal(value)}")
        if not read_only:
            self._check_data_path(con)
        if self.conninfo is None:
            Path(self.catalog).parent.mkdir(parents=True, exist_ok=True)
        if not read_only and "://" not in self.data_path:
            Path(self.data_path).mkdir(parents=True, exist_ok=True)
        options = [f"DATA_PATH {_literal(self.data_path)}"]
        if self.metadata_schema:
            options.append(f"METADATA_SCHEMA {_literal(self.metadata_schema)}")
        if read_only:
            options.append("READ_ONLY")
        try:
            con.execute(
                f"ATTACH {_literal('ducklake:' + self.catalog)} AS {LAKE_ALIAS} ({', '.join(options)})"
            )
        except duckdb.Error as exc:
            raise self._error(exc, read_only) from None

    def _check_data_path(self, con: duckdb.DuckDBPyConnection) -> None:
        """Raise :class:`LakeError` unless the bucket of the data path answers (one listing)."""
        if self.bucket is None:
            return
        try:
            con.execute("SELECT count(*) FROM glob(?)", [self.data_path + ACCESS_PROBE]).fetchone()
        except duckdb.IOException as exc:
            raise self.data_error(exc) from None

    def data_error(self, exc: duckdb.Error) -> LakeError:
        """``exc``, an error reaching the bucket, as a message that names it and what to check."""
        reason = " ".join(str(exc).split("\n\nLINE ")[0].split())
        endpoint = dict(self.settings).get("s3_endpoint")
        where = f"bucket {self.bucket!r}" + (f" at {endpoint}" if endpoint else "")
        return LakeError(
            f"cannot use the lake's data files in {self.data_path} ({where}): "
            f"{reason}. Check that the bucket exists, lake.s3 (endpoint, url_style, use_ssl, "
            "region) and the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a "
            "DuckDB secret)"
        )

    def _error(self, exc: duckdb.Error, read_only: bool) -> Exception:
        message = str(exc)
        unreachable = re.search(r'Unable to connect to Postgres at "[^"]*": (.*)', message, re.S)
        if unreachable:
            reason = " ".join(unreachable.group(1).split())
            return LakeError(f"cannot connect to the {self.describe()}: {reason}")
        if read_only and "does not exist" in message:
            return FileNotFoundError(f"no builds yet: the {self.describe()} holds no DuckLake")
        if "does not match existing data path" in message:
            return LakeError(
                f"the {self.describe()} keeps its data elsewhere: {message.splitlines()[0]} "
                "Every build of this server must use the same lake.data_path."
            )
        return LakeError(f"cannot open the {self.describe()}: {message}")


def lake_location(config: ProcessingConfig) -> LakeLocation:
    """The lake of a server, from its ``lake`` settings.

    A shared ``data_path`` gets a folder per server (``DATA_PATH/NAME/``), as a PostgreSQL
    catalog gets a schema per server, so that all servers of a team can share both.
    """
    lake_dir = config.work_dir / "lake"
    data_path = config.lake.data_path
    data = f"{str(data_path).rstrip('/')}/{config.name}/" if data_path else f"{lake_dir / 'data'}/"
    catalog = str(config.lake.catalog or "local")
    settings = object_store_settings(config.lake.s3) if "://" in data else ()
    if catalog == "local":
        return LakeLocation(str(lake_dir / "catalog.ducklake"), data, settings=settings)
    return LakeLocation(catalog, data, underscored(config.name), settings)


def object_store_settings(s3: S3Config) -> tuple[tuple[str, str], ...]:
    """The DuckDB settings ``lake.s3`` asks for. What it leaves out DuckDB takes from the
    environment (``AWS_REGION``, ``DUCKDB_S3_ENDPOINT``...); a DuckDB secret's own values win."""
    scheme, _, host = (s3.endpoint or "").rpartition("://")
    use_ssl = s3.use_ssl if s3.use_ssl is not None else (scheme == "https" if scheme else None)
    url_style = s3.url_style or ("path" if s3.endpoint else None)
    values = {
        "s3_endpoint": host.rstrip("/") or None,
        "s3_url_style": url_style,
        "s3_use_ssl": None if use_ssl is None else str(use_ssl).lower(),
        "s3_region": s3.region,
    }
    return tuple((name, str(value)) for name, value in values.items() if value is not None)


def _literal(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def snapshot_chunks(
    lake: LakeLocation,
    parquet: Path,
    message: str,
    info: dict[str, object],
    labels: Sequence[str] = (),
) -> Snapshot:
    """Make the lake's chunks equal the Parquet file's, in one snapshot; return it.

    The commit's extra info is ``info`` plus ``versions_changed``: the documentation versions
    whose chunks this snapshot adds or removes, in the order of ``labels`` (then any other label,
    such as a version that left the configuration).
    """
    con = connect(extensions=("ducklake",))
    try:
        lake.attach(con)
        con.execute(
            f"CREATE TABLE IF NOT EXISTS {LAKE_ALIAS}.chunks AS "
            f"SELECT * REPLACE (embedding::FLOAT[] AS embedding) FROM read_parquet(?) LIMIT 0",
            [str(parquet)],
        )
        con.execute("CREATE TEMP TABLE incoming AS SELECT * FROM read_parquet(?)", [str(parquet)])
        con.execute("BEGIN")
        columns = [d[0] for d in con.execute(f"FROM {LAKE_ALIAS}.chunks LIMIT 0").description]
        for column in ADDED_COLUMNS:
            if column not in columns:
                con.execute(f"ALTER TABLE {LAKE_ALIAS}.chunks ADD COLUMN {column} VARCHAR")
        incoming = [d[0] for d in con.execute("FROM incoming LIMIT 0").description]
        if "code_terms" not in columns and "code_terms" in incoming:
            # fill the new column for the chunks the lake keeps (without it, materialize does)
            con.execute(
                f"UPDATE {LAKE_ALIAS}.chunks SET code_terms = i.code_terms FROM incoming i "
                f"WHERE {LAKE_ALIAS}.chunks.chunk_id = i.chunk_id"
            )
        replaced = 0
        if _encoder_changed(con, info):  # every vector is new: the lake keeps no row
            replaced = con.execute(f"DELETE FROM {LAKE_ALIAS}.chunks").fetchone()[0]
        by_version = _changes_by_version(con)
        changed = [label for label in labels if label in by_version]
        changed += sorted(str(v) for v in by_version if v is not None and v not in labels)
        removed = con.execute(
            f"DELETE FROM {LAKE_ALIAS}.chunks WHERE chunk_id NOT IN (SELECT chunk_id FROM incoming)"
        ).fetchone()[0]
        added = con.execute(
            f"INSERT INTO {LAKE_ALIAS}.chunks BY NAME SELECT * REPLACE (embedding::FLOAT[] AS embedding) "
            f"FROM incoming WHERE chunk_id NOT IN (SELECT chunk_id FROM {LAKE_ALIAS}.chunks)"
        ).fetchone()[0]
        con.execute(
            f"CALL {LAKE_ALIAS}.set_commit_message('docbuild', ?, extra_info => ?)",
            [message, json.dumps({**info, "versions_changed": changed}, default=str)],
        )
        con.execute("COMMIT")
        snapshot_id = con.execute(f"FROM {LAKE_ALIAS}.current_snapshot()").fetchone()[0]
        removed += replaced
        return Snapshot(int(snapshot_id), int(added), int(removed), changed, by_version)
    except BaseException as exc:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        if isinstance(exc, duckdb.IOException) and lake.bucket is not None:
            raise lake.data_error(exc) from None
        raise
    finally:
        con.close()


def _encoder_changed(con: duckdb.DuckDBPyConnection, info: dict[str, object]) -> bool:
    """Whether the lake's last build embedded with another encoder than ``info`` names (its
    ``model_cache_key``: the model, its weights and its precision)."""
    row = con.execute(
        f"SELECT commit_extra_info FROM {LAKE_ALIAS}.snapshots() WHERE author = 'docbuild' "
        "ORDER BY snapshot_id DESC LIMIT 1"
    ).fetchone()
    if row is None or not row[0]:
        return False
    previous = json.loads(row[0]).get("model_cache_key")
    return previous is not None and previous != info.get("model_cache_key")


def _changes_by_version(con: duckdb.DuckDBPyConnection) -> dict[str | None, tuple[int, int]]:
    """Chunks the build adds and removes, per documentation version (None: unversioned)."""
    rows = con.execute(
        f"SELECT version, count(*) FILTER (WHERE side = '+'), count(*) FILTER (WHERE side = '-') "
        f"FROM (SELECT version, '+' AS side FROM incoming WHERE chunk_id NOT IN "
        f"(SELECT chunk_id FROM {LAKE_ALIAS}.chunks) UNION ALL SELECT version, '-' FROM "
        f"{LAKE_ALIAS}.chunks WHERE chunk_id NOT IN (SELECT chunk_id FROM incoming)) "
        "GROUP BY version"
    ).fetchall()
    return {version: (int(plus), int(minus)) for version, plus, minus in rows}


def _read_only_lake(lake: LakeLocation) -> duckdb.DuckDBPyConnection:
    if lake.conninfo is None and not Path(lake.catalog).is_file():
        raise FileNotFoundError(f"no builds yet: {lake.catalog} does not exist")
    con = connect(extensions=("ducklake",))
    try:
        lake.attach(con, read_only=True)
    except BaseException:
        con.close()
        raise
    return con


def list_snapshots(lake: LakeLocation) -> list[dict[str, object]]:
    """The builds recorded in the lake, oldest first, with their metadata."""
    con = _read_only_lake(lake)
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


def diff_snapshots(lake: LakeLocation, old: int, new: int) -> dict[str, Any]:
    """Documents added, removed and changed between two snapshots (lists of document ids), and
    how many chunk texts came and went (``chunks_added``, ``chunks_removed``)."""
    con = _read_only_lake(lake)
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
    chunks_then = Counter(h for hashes in before.values() for h in hashes)
    chunks_now = Counter(h for hashes in after.values() for h in hashes)
    return {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "changed": sorted(d for d in set(before) & set(after) if before[d] != after[d]),
        "chunks_added": (chunks_now - chunks_then).total(),
        "chunks_removed": (chunks_then - chunks_now).total(),
    }
