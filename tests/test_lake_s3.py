"""The shared build history with its data files in an S3 bucket.

The catalog is the PostgreSQL server of ``test_lake_postgres`` (the same fixture; these tests skip,
saying why, when PostgreSQL is missing). The bucket is a real S3-compatible server, moto (a dev
dependency), run as ``python -m moto.server`` on 127.0.0.1 with authentication on: requests need
the access key the test creates through moto's IAM, so credentials that do not reach DuckDB fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
import test_lake_postgres
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
from docserve.duck import connect
from test_lake_postgres import Postgres, database_rows, free_port, write_docs

postgres = test_lake_postgres.postgres  # a PostgreSQL server of this module's own
AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "DUCKDB_S3_ENDPOINT",
    "DUCKDB_S3_USE_SSL",
)
"""What DuckDB's httpfs reads from the environment: cleared, then set by each test."""
POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
}


@dataclass
class S3Server:
    """A moto server on 127.0.0.1 and the access key of its one IAM user, ``builder``."""

    process: subprocess.Popen
    port: int
    key_id: str = ""
    secret: str = ""

    @property
    def endpoint(self) -> str:
        """The URL for ``lake.s3.endpoint``."""
        return f"http://127.0.0.1:{self.port}"

    def client(self, service: str = "s3"):
        """A boto3 client of the server, signed with the builder's key (or any before it exists)."""
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=self.key_id or "setup",
            aws_secret_access_key=self.secret or "setup",
        )

    def keys(self, bucket: str) -> list[str]:
        """Every object key in ``bucket``."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def stop(self) -> None:
        """Stop the server and wait for it."""
        self.process.terminate()
        self.process.wait(timeout=30)


@contextmanager
def s3_server(folder: Path, bucket: str) -> Iterator[S3Server]:
    """Start moto with ``bucket`` and a user allowed ``s3:*``; authentication is on after that."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with (folder / "moto.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "4"},  # the 4 calls below
        )
    server = S3Server(process, port)
    try:
        wait_for_port(server, folder / "moto.log")
        server.client().create_bucket(Bucket=bucket)
        iam = server.client("iam")
        iam.create_user(UserName="builder")
        iam.put_user_policy(UserName="builder", PolicyName="s3", PolicyDocument=json.dumps(POLICY))
        key = iam.create_access_key(UserName="builder")["AccessKey"]
        server.key_id, server.secret = key["AccessKeyId"], key["SecretAccessKey"]
        yield server
    finally:
        if process.poll() is None:
            server.stop()


def wait_for_port(server: S3Server, log: Path, timeout: float = 60) -> None:
    """Return once the server accepts connections; fail with its log if it exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"moto server exited: {log.read_text(errors='replace')[-1000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", server.port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"moto server did not listen on port {server.port} within {timeout} s")


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A moto server with the bucket ``team-bucket``, for the whole module."""
    with s3_server(tmp_path_factory.mktemp("moto"), "team-bucket") as server:
        yield server


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No AWS or DuckDB S3 setting from the caller's environment, and no DuckDB secret of theirs
    (DuckDB keeps persistent secrets under HOME)."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


def use_lake(env: pytest.MonkeyPatch, catalog: Postgres, data_path: str, endpoint: str) -> None:
    """Point every build at the PostgreSQL catalog and the bucket through DOCMCP_LAKE__*."""
    env.setenv("DOCMCP_LAKE__CATALOG", f"postgres:{catalog.conninfo}")
    env.setenv("DOCMCP_LAKE__DATA_PATH", data_path)
    env.setenv("DOCMCP_LAKE__S3__ENDPOINT", endpoint)


def use_keys(env: pytest.MonkeyPatch, server: S3Server, secret: str | None = None) -> None:
    """Credentials in the environment, as a CI job gets them."""
    env.setenv("AWS_ACCESS_KEY_ID", server.key_id)
    env.setenv("AWS_SECRET_ACCESS_KEY", secret or server.secret)
    env.setenv("AWS_REGION", "us-east-1")


def create_persistent_secret(server: S3Server, bucket: str) -> None:
    """What a maintainer does once: a DuckDB secret in ~/.duckdb/stored_secrets, for one bucket."""
    con = connect(extensions=("httpfs",))
    try:
        con.execute(
            f"CREATE PERSISTENT SECRET team_lake (TYPE s3, KEY_ID '{server.key_id}', "
            f"SECRET '{server.secret}', REGION 'us-east-1', SCOPE 's3://{bucket}/')"
        )
    finally:
        con.close()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_s3_settings_are_checked(project: Path, clean_env: pytest.MonkeyPatch):
    scaffold(
        "s3-docs", str(write_docs(project / "src", {"a.md": "# A\n\nText.\n"})), "md", root=project
    )
    clean_env.setenv("DOCMCP_LAKE__DATA_PATH", "s3://team-bucket/lake/")
    assert lake_location(load_processing_config("s3-docs", project)).settings == ()

    clean_env.setenv("DOCMCP_LAKE__S3__ENDPOINT", "http://127.0.0.1:9000/")
    lake = lake_location(load_processing_config("s3-docs", project))
    assert lake.data_path == "s3://team-bucket/lake/s3-docs/" and lake.bucket == "team-bucket"
    assert dict(lake.settings) == {
        "s3_endpoint": "127.0.0.1:9000",
        "s3_url_style": "path",
        "s3_use_ssl": "false",
    }
    clean_env.setenv("DOCMCP_LAKE__S3__ENDPOINT", "minio.example.org")
    clean_env.setenv("DOCMCP_LAKE__S3__URL_STYLE", "vhost")
    clean_env.setenv("DOCMCP_LAKE__S3__REGION", "eu-west-3")
    assert dict(lake_location(load_processing_config("s3-docs", project)).settings) == {
        "s3_endpoint": "minio.example.org",
        "s3_url_style": "vhost",
        "s3_region": "eu-west-3",
    }
    clean_env.delenv("DOCMCP_LAKE__S3__URL_STYLE")

    for key, value, error in [
        ("SECRET", "hunter2", "lake.s3 must not hold credentials"),
        ("KEY_ID", "AKIA0000", "lake.s3 must not hold credentials"),
        ("URL_STYLE", "sideways", "url_style must be 'path' or 'vhost'"),
        ("ENDPOINT", "ftp://store:21", "must be host\\[:port\\] or http\\(s\\)://host"),
        ("ENDPOINT", "http://store:9000/bucket", "must not have a path"),
        ("USE_SSL", "maybe", "use_ssl must be true or false"),
        ("USE_SSL", "true", "use_ssl contradicts the http:// endpoint"),
        ("ENDPOINTS", "store:9000", "unknown key\\(s\\) in 's3': endpoints"),
    ]:
        with clean_env.context() as env:
            env.setenv("DOCMCP_LAKE__S3__ENDPOINT", "http://store:9000")
            env.setenv(f"DOCMCP_LAKE__S3__{key}", value)
            with pytest.raises(ConfigError, match=error):
                load_processing_config("s3-docs", project)

    # a local data path needs no object-store setting, whatever lake.s3 says
    clean_env.setenv("DOCMCP_LAKE__DATA_PATH", str(project / "lake-data"))
    assert lake_location(load_processing_config("s3-docs", project)).settings == ()


def test_team_shares_history_in_a_bucket(
    tmp_path: Path,
    embedder,
    postgres: Postgres,
    s3: S3Server,
    clean_env: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
):
    use_lake(clean_env, postgres, "s3://team-bucket/docs-lake/", s3.endpoint)
    alice, bob = tmp_path / "alice", tmp_path / "bob"  # two clones: a CI job and a team member
    pages = {"a.md": "# A\n\nFirst page about apples.\n", "b.md": "# B\n\nSecond, bananas.\n"}
    (alice / "servers").mkdir(parents=True)
    scaffold("team-docs", str(write_docs(alice / "src", pages)), "md", root=alice)
    config = load_processing_config("team-docs", alice)
    lake = lake_location(config)

    # the CI job: credentials in the environment
    use_keys(clean_env, s3)
    first = Build(config, embedder).run().snapshot.snapshot_id
    (config.source.path / "a.md").write_text("# A\n\nFirst page about apples, now with pears.\n")
    second = Build(config, embedder).run().snapshot.snapshot_id
    assert [b["snapshot_id"] for b in list_snapshots(lake)] == [first, second]
    assert diff_snapshots(lake, first, second) == {
        "added": [],
        "removed": [],
        "changed": ["a.md"],
        "chunks_added": 1,
        "chunks_removed": 1,
    }

    # the data files are in the bucket, under the server's folder, and nowhere on disk
    keys = s3.keys("team-bucket")
    assert keys and all(k.startswith("docs-lake/team-docs/") for k in keys)
    assert any(k.endswith(".parquet") for k in keys)
    assert not list(alice.rglob("ducklake-*.parquet")) and not (config.work_dir / "lake").exists()
    recorded = postgres.psql(
        "SELECT value FROM team_docs.ducklake_metadata WHERE key = 'data_path'"
    )
    assert recorded == "s3://team-bucket/docs-lake/team-docs/"
    # and the credentials are in no file the build wrote nor in its output
    written = [f for f in alice.rglob("*") if f.is_file()]
    assert not any(s3.secret.encode() in f.read_bytes() for f in written)
    assert s3.secret not in "".join(capfd.readouterr())

    # the team member: no credentials in the environment, none yet in DuckDB either
    (bob / "servers").mkdir(parents=True)
    shutil.copytree(config.source.path, bob / "src")
    write_docs(bob / "src", {"c.md": "# C\n\nThird page about cherries.\n"})
    scaffold("team-docs", str(bob / "src"), "md", root=bob)
    bob_config = load_processing_config("team-docs", bob)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        clean_env.delenv(name)
    clean_env.setenv("HOME", str(bob))
    with pytest.raises(BuildError, match=r"stage 'snapshot' failed: .*bucket 'team-bucket'"):
        Build(bob_config, embedder).run()
    # a persistent DuckDB secret gives the key to every DuckDB of this user, the CLI's too
    create_persistent_secret(s3, "team-bucket")
    versions = subprocess.run(
        [str(REPO / ".venv" / "bin" / "docbuild"), "builds", "team-docs", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(bob)},
        timeout=120,
    )
    assert versions.returncode == 0, versions.stderr
    assert [v["snapshot_id"] for v in json.loads(versions.stdout)] == [first, second]
    third = Build(bob_config, embedder).run().snapshot.snapshot_id
    assert third == second + 1
    assert diff_snapshots(lake, second, third) == {
        "added": ["c.md"],
        "removed": [],
        "changed": [],
        "chunks_added": 1,
        "chunks_removed": 0,
    }
    documents = "SELECT DISTINCT document_id FROM chunks ORDER BY 1"
    assert database_rows(bob_config.database_path, documents) == [("a.md",), ("b.md",), ("c.md",)]
    # a rollback reads Alice's first build back from the bucket
    Build(bob_config).rollback(first)
    content = "SELECT content FROM chunks WHERE document_id = 'a.md'"
    assert "pears" not in " ".join(r[0] for r in database_rows(bob_config.database_path, content))
    assert database_rows(bob_config.database_path, documents) == [("a.md",), ("b.md",)]
    assert not list(bob.rglob("ducklake-*.parquet"))

    elsewhere = LakeLocation(lake.catalog, "s3://other-bucket/lake/", lake.metadata_schema)
    with pytest.raises(LakeError, match=r"must use the same lake\.data_path"):
        list_snapshots(elsewhere)


def test_unusable_bucket_fails_the_snapshot_and_keeps_the_database(
    project: Path, embedder, postgres: Postgres, clean_env: pytest.MonkeyPatch, capsys
):
    src = write_docs(project / "src", {"a.md": "# A\n\nApples.\n", "b.md": "# B\n\nBananas.\n"})
    scaffold("down-docs", str(src), "md", root=project)
    with s3_server(project / "moto", "doomed-bucket") as server:
        use_lake(clean_env, postgres, "s3://doomed-bucket/lake/", server.endpoint)
        use_keys(clean_env, server)
        config = load_processing_config("down-docs", project)
        Build(config, embedder).run()
        before = sha256(config.database_path)
        snapshots = "SELECT count(*) FROM down_docs.ducklake_snapshot"
        recorded = postgres.psql(snapshots)
        (src / "b.md").write_text("# B\n\nBananas and blueberries.\n")  # a change to snapshot

        def fails(*expected: str) -> None:
            with pytest.raises(BuildError) as failure:
                Build(load_processing_config("down-docs", project), embedder).run()
            message = str(failure.value)
            assert message.startswith(
                "stage 'snapshot' failed: cannot use the lake's data files in s3://doomed-bucket/"
                f"lake/down-docs/ (bucket 'doomed-bucket' at 127.0.0.1:{server.port}):"
            ), message
            assert all(text in message for text in expected), message
            assert server.secret not in message
            assert postgres.psql(snapshots) == recorded  # the catalog was not touched
            assert sha256(config.database_path) == before
            assert [p.name for p in config.database_path.parent.glob("*.tmp-*")] == []

        use_keys(clean_env, server, secret="not-the-secret")  # a wrong key
        fails("HTTP 403")
        use_keys(clean_env, server)
        s3 = server.client()
        s3.delete_objects(
            Bucket="doomed-bucket",
            Delete={"Objects": [{"Key": k} for k in server.keys("doomed-bucket")]},
        )
        s3.delete_bucket(Bucket="doomed-bucket")  # the bucket is gone
        fails("HTTP 404")
        server.stop()  # nothing answers any more
        fails("Could not establish connection")

    # the served database still answers, and the CLI says what failed with exit code 1
    assert database_rows(
        config.database_path, "SELECT count(DISTINCT document_id) FROM chunks"
    ) == [(2,)]
    clean_env.setenv("DOCMCP_PROJECT_ROOT", str(project))
    assert main(["build", "down-docs"]) == 1
    err = capsys.readouterr().err
    assert "stage 'snapshot' failed" in err and "(bucket 'doomed-bucket' at 127.0.0.1:" in err
    assert sha256(config.database_path) == before
