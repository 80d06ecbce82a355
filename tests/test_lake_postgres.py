"""The build history in a PostgreSQL DuckLake catalog that a team shares.

The PostgreSQL tests start a real server of their own (``initdb`` and ``pg_ctl``, as the
``postgres`` user when run as root) on 127.0.0.1 and a free port. They skip, saying why, only when
the PostgreSQL binaries are missing or the server does not start.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from docbuild.build_report import BuildError
from docbuild.cli import main
from docbuild.config import ConfigError, load_processing_config
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold
from docbuild.stages.snapshot import (
    LakeError,
    LakeLocation,
    diff_snapshots,
    lake_location,
    list_snapshots,
)
from docserve.duck import connect, extension_path


@dataclass
class Postgres:
    """A running PostgreSQL server with an empty database ``docs``."""

    bin_dir: Path
    port: int

    @property
    def conninfo(self) -> str:
        """libpq connection string of the ``docs`` database."""
        return f"dbname=docs host=127.0.0.1 port={self.port} user=postgres"

    def psql(self, sql: str, database: str = "docs") -> str:
        """Run ``sql`` with psql; returns its unaligned output."""
        client = [str(self.bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(self.port)]
        return subprocess.run(
            [*client, "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", sql],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()


def postgres_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/VERSION/bin`` holding initdb, else initdb's folder on PATH."""
    found = [d for d in Path("/usr/lib/postgresql").glob("*/bin") if (d / "initdb").is_file()]
    if found:
        return max(found, key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (right now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    """A throw-away PostgreSQL server, stopped at the end of the module."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): "
            "run tools/install_postgres.sh"
        )
    as_user: list[str] = []
    home = Path(tempfile.mkdtemp(prefix="docmcp-pg-"))
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        runuser = shutil.which("runuser")
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            user = None
        if runuser is None or user is None:
            shutil.rmtree(home)
            pytest.skip("running as root without runuser or a 'postgres' user to run PostgreSQL")
        os.chmod(home, 0o755)
        os.chown(home, user.pw_uid, user.pw_gid)
        as_user = [runuser, "-u", "postgres", "--"]
    server = Postgres(bin_dir, free_port())
    data = home / "data"
    options = f"-c listen_addresses=127.0.0.1 -p {server.port} -k {home} -c fsync=off"
    pg_ctl = [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data)]
    initdb = [*as_user, str(bin_dir / "initdb"), "-D", str(data)]
    try:
        for command in (
            [*initdb, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
            [*pg_ctl, "-l", str(home / "log"), "-w", "-t", "60", "-o", options, "start"],
        ):
            subprocess.run(command, capture_output=True, text=True, check=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        log = (home / "log").read_text(errors="replace")[-500:] if (home / "log").exists() else ""
        subprocess.run([*pg_ctl, "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(home, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start: {exc} {detail.strip()} {log.strip()}")
    try:
        server.psql("CREATE DATABASE docs", database="postgres")
        yield server
    finally:
        subprocess.run([*pg_ctl, "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(home, ignore_errors=True)


def write_docs(folder: Path, pages: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (folder / name).write_text(text)
    return folder


def database_rows(database: Path, sql: str) -> list[tuple]:
    con = connect(database, read_only=True, extensions=())
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_lake_settings_are_checked(project: Path, monkeypatch: pytest.MonkeyPatch):
    scaffold(
        "lake-docs",
        str(write_docs(project / "src", {"a.md": "# A\n\nText.\n"})),
        "md",
        root=project,
    )
    config = load_processing_config("lake-docs", project)
    assert lake_location(config) == LakeLocation(
        str(config.work_dir / "lake" / "catalog.ducklake"), f"{config.work_dir / 'lake' / 'data'}/"
    )
    for key, value, error in [
        ("CATALOG", "sqlite:lake.db", "unknown lake.catalog 'sqlite:lake.db'"),
        ("CATALOG", "postgres:", "unknown lake.catalog"),
        ("CATALOG", "postgres:dbname=docs password=secret", "must not hold a password"),
        ("CATALOG", "postgres:postgresql://me:secret@db/docs", "must not hold a password"),
        ("DATA_PATH", "relative/lake", "must be an absolute folder or a URL"),
        ("DATA_PATH", "ftp://host/lake", "unsupported URL scheme"),
    ]:
        with monkeypatch.context() as env:
            env.setenv(f"DOCMCP_LAKE__{key}", value)
            with pytest.raises(ConfigError, match=error):
                load_processing_config("lake-docs", project)
            env.setenv("DOCMCP_PROJECT_ROOT", str(project))
            assert main(["builds", "lake-docs"]) == 2

    monkeypatch.setenv("DOCMCP_LAKE__CATALOG", "postgres:dbname=docs host=db.example.org")
    monkeypatch.setenv("DOCMCP_LAKE__DATA_PATH", "s3://team-bucket/lake/")
    shared = lake_location(load_processing_config("lake-docs", project))
    assert shared == LakeLocation(
        "postgres:dbname=docs host=db.example.org", "s3://team-bucket/lake/lake-docs/", "lake_docs"
    )
    # the extensions it needs are dependencies, installed from PyPI (see tests/test_lake_s3.py)
    assert shared.extensions() == ["postgres_scanner", "httpfs"]
    assert all(extension_path(name).is_file() for name in shared.extensions())


def test_unreachable_catalog_fails_clearly_and_keeps_the_database(
    project: Path, embedder, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    src = write_docs(project / "src", {"a.md": "# A\n\nApples.\n", "b.md": "# B\n\nBananas.\n"})
    scaffold("down-docs", str(src), "md", root=project)
    config = load_processing_config("down-docs", project)
    Build(config, embedder).run()
    before = hashlib.sha256(config.database_path.read_bytes()).hexdigest()

    port = free_port()  # nothing listens there
    monkeypatch.setenv("DOCMCP_LAKE__CATALOG", f"postgres:dbname=docs host=127.0.0.1 port={port}")
    with pytest.raises(BuildError) as failure:
        Build(load_processing_config("down-docs", project), embedder).run()
    message = str(failure.value)
    assert message.startswith("stage 'snapshot' failed: cannot connect to the PostgreSQL DuckLake")
    assert f"'dbname=docs host=127.0.0.1 port={port}'" in message and "127.0.0.1" in message
    assert hashlib.sha256(config.database_path.read_bytes()).hexdigest() == before
    assert [p.name for p in config.database_path.parent.glob("*.tmp-*")] == []

    monkeypatch.setenv("DOCMCP_PROJECT_ROOT", str(project))
    assert main(["builds", "down-docs"]) == 1
    err = capsys.readouterr().err
    assert (
        "error: cannot connect to the PostgreSQL DuckLake catalog" in err and f"port={port}" in err
    )


def test_team_shares_history_in_postgres(
    tmp_path: Path, embedder, postgres: Postgres, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("DOCMCP_LAKE__CATALOG", f"postgres:{postgres.conninfo}")
    monkeypatch.setenv("DOCMCP_LAKE__DATA_PATH", str(tmp_path / "team-lake"))
    alice, bob = tmp_path / "alice", tmp_path / "bob"  # two clones: a team member and a CI job
    pages = {"a.md": "# A\n\nFirst page about apples.\n", "b.md": "# B\n\nSecond, bananas.\n"}
    (alice / "servers").mkdir(parents=True)
    scaffold("team-docs", str(write_docs(alice / "src", pages)), "md", root=alice)
    config = load_processing_config("team-docs", alice)
    lake = lake_location(config)
    assert lake.metadata_schema == "team_docs"
    with pytest.raises(FileNotFoundError, match="no builds yet"):
        list_snapshots(lake)

    first = Build(config, embedder).run().snapshot.snapshot_id
    (config.source.path / "a.md").write_text("# A\n\nFirst page about apples, now with pears.\n")
    second = Build(config, embedder).run().snapshot.snapshot_id
    builds = list_snapshots(lake)
    assert [b["snapshot_id"] for b in builds] == [first, second]
    assert all(b["info"]["document_count"] == 2 and b["info"]["config_hash"] for b in builds)
    assert diff_snapshots(lake, first, second) == {
        "added": [],
        "removed": [],
        "changed": ["a.md"],
        "chunks_added": 1,
        "chunks_removed": 1,
    }

    # the catalog lives in PostgreSQL (schema team_docs), the data files in the shared folder
    assert not (config.work_dir / "lake" / "catalog.ducklake").exists()
    recorded = postgres.psql("SELECT max(snapshot_id) FROM team_docs.ducklake_snapshot")
    assert int(recorded) == second
    assert list((tmp_path / "team-lake" / "team-docs").rglob("*.parquet"))

    Build(config).rollback(first)
    content = "SELECT content FROM chunks WHERE document_id = 'a.md'"
    assert "pears" not in " ".join(row[0] for row in database_rows(config.database_path, content))
    info = dict(database_rows(config.database_path, "SELECT key, value FROM build_info"))
    assert json.loads(info["rolled_back_to"]) == first

    # another clone, with its own work dir, sees the same history and builds on top of it
    (bob / "servers").mkdir(parents=True)
    shutil.copytree(config.source.path, bob / "src")
    write_docs(bob / "src", {"c.md": "# C\n\nThird page about cherries.\n"})
    scaffold("team-docs", str(bob / "src"), "md", root=bob)
    versions = subprocess.run(
        [str(REPO / ".venv" / "bin" / "docbuild"), "builds", "team-docs", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(bob)},
        timeout=120,
    )
    assert versions.returncode == 0, versions.stderr
    assert [v["snapshot_id"] for v in json.loads(versions.stdout)] == [first, second]
    bob_config = load_processing_config("team-docs", bob)
    third = Build(bob_config, embedder).run().snapshot.snapshot_id
    assert third == second + 1
    assert [b["snapshot_id"] for b in list_snapshots(lake)] == [first, second, third]
    assert diff_snapshots(lake, second, third) == {
        "added": ["c.md"],
        "removed": [],
        "changed": [],
        "chunks_added": 1,
        "chunks_removed": 0,
    }
    documents = "SELECT DISTINCT document_id FROM chunks ORDER BY 1"
    assert database_rows(bob_config.database_path, documents) == [("a.md",), ("b.md",), ("c.md",)]

    elsewhere = LakeLocation(lake.catalog, f"{tmp_path / 'elsewhere'}/", lake.metadata_schema)
    with pytest.raises(LakeError, match=r"must use the same lake\.data_path"):
        list_snapshots(elsewhere)
