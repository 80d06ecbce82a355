"""What the UI knows about each server folder, read without disturbing it.

Every database is opened read-only and only for as long as a page needs it; a build replaces
the database file atomically, so a reader sees the last finished build. Search and reading go
through the runtime's own :class:`~docserve.runtime.Runtime`, which picks up a new build as a
running server does.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from docserve.build_info import BuildInfo
from docserve.config import load_settings
from docserve.doctor import Check, Install, reason, server_checks
from docserve.duck import connect
from docserve.folder import ServerFolder
from docserve.runtime import IndexUnavailable, Runtime, file_identity
from docserve.search import SearchEngine

from docbuild.build_record import load_report
from docbuild.config import ConfigError, ProcessingConfig, load_processing_config, server_root
from docbuild.services.evaluate import load_runs

HISTOGRAM_BINS = 16
CONFIG_INVALID = "config invalid"
NOT_BUILT = "not built"
UNREADABLE = "database unreadable"
STATES = {  # the state a failed check of the doctor puts a server in
    "processing config": CONFIG_INVALID,
    "config": CONFIG_INVALID,
    "model": "model files missing or changed",
    "encoder": "encoder file missing or changed",
    "database vs model": "built with another model",
}


class UnknownServer(LookupError):
    """No server folder of that name."""


@dataclass(frozen=True)
class Fault:
    """What is wrong with a server's files: its state, and the doctor's failed checks (what is
    wrong, and the fix), the one that decides the state first."""

    state: str
    checks: list[Check]

    @property
    def status(self) -> int:
        """404 before the first build; 503 when the server's files cannot be used."""
        return 404 if self.state == NOT_BUILT else 503


@dataclass(frozen=True)
class Headline:
    """One eval run's headline figure: section Hit@5 of hybrid search (nDCG@10 for BEIR sets)."""

    time: str
    snapshot_id: object
    label: str
    value: float


def headline(run: dict[str, Any]) -> Headline | None:
    """The figure a run is charted by: hybrid (else the first mode) section Hit@5, or nDCG@10
    when the set has no sections."""
    scores = run.get("scores") or []
    chosen = next((s for s in scores if s.get("mode") == "hybrid"), scores[0] if scores else None)
    if not isinstance(chosen, dict):
        return None
    section = chosen.get("section_hit") or {}
    if "5" in section or 5 in section:
        value, label = section.get("5", section.get(5)), "section Hit@5"
    else:
        value, label = chosen.get("ndcg_10"), "nDCG@10"
    if not isinstance(value, int | float):
        return None
    return Headline(
        str(run.get("time", "")), run.get("snapshot_id"), f"{chosen['mode']} {label}", value
    )


def folder_size(path: Path) -> int:
    """Bytes of the files under ``path`` (0 when it does not exist)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(folder) / name).stat().st_size
            except OSError:
                continue
    return total


class Server:
    """One server folder: its configuration, build report, eval runs and database."""

    def __init__(self, name: str, project: Path) -> None:
        self.name = name
        self.root = server_root(name, project)
        self.folder = ServerFolder(self.root, name)
        self._runtime: Runtime | None = None
        self._info: tuple[object, BuildInfo] | None = None
        self.lock = threading.Lock()

    @property
    def config(self) -> ProcessingConfig:
        """The processing configuration (raises ConfigError when it is broken)."""
        return load_processing_config(self.name, self.root.parent.parent)

    def check_config(self) -> None:
        """Raise ConfigError when the processing configuration cannot be read."""
        load_processing_config(self.name, self.root.parent.parent)

    @property
    def database(self) -> Path:
        return self.config.database_path

    def info(self) -> BuildInfo | None:
        """The served database's build info (None when there is no database yet); raises
        ConfigError or DuckDB's error when the configuration or the database cannot be read."""
        identity = file_identity(self.database)
        if identity is None:
            return None
        if self._info and self._info[0] == identity:
            return self._info[1]
        with self.read() as con:
            info = BuildInfo.read(con)
        self._info = (identity, info)
        return info

    def require_info(self) -> BuildInfo:
        """The build info; raises :class:`IndexUnavailable` before the first build."""
        info = self.info()
        if info is None:
            raise IndexUnavailable(f"database {self.database} not found")
        return info

    def diagnose(self) -> Fault | None:
        """What is wrong with this server's files, in ``--doctor``'s words (None: nothing)."""
        install = Install.read(self.name, self.root)
        try:
            self.check_config()
        except ConfigError as exc:
            check = Check("processing config", False, reason(exc), install.repair_config)
            return Fault(CONFIG_INVALID, [check])
        failed = [check for check in server_checks(install) if not check.ok]
        if not failed:
            return None
        failed.sort(key=lambda c: (STATES.get(c.name) != CONFIG_INVALID, c.name != "database"))
        first = failed[0]
        if first.name == "database":
            state = UNREADABLE if self.database.exists() else NOT_BUILT
        else:
            state = STATES.get(first.name, first.name)
        return Fault(state, failed)

    def read(self) -> duckdb.DuckDBPyConnection:
        """A short-lived read-only connection to the served database."""
        return connect(self.database, read_only=True, extensions=())

    def report(self) -> dict[str, Any] | None:
        """The latest build's saved report (None before the first build that saved one)."""
        return load_report(self.folder.build)

    def eval_runs(self) -> list[dict[str, Any]]:
        """Every eval run recorded for this server, oldest first."""
        return load_runs(self.folder.eval)

    def last_headline(self) -> Headline | None:
        """The latest eval run's headline figure."""
        for run in reversed(self.eval_runs()):
            if (found := headline(run)) is not None:
                return found
        return None

    def chunk_lengths(self) -> list[tuple[int, int, int]]:
        """Chunks by token count: ``(low, high, count)`` per bin, bins of equal width."""
        with self.read() as con:
            low, high = con.execute(
                "SELECT min(token_count), max(token_count) FROM chunks"
            ).fetchone()
            if low is None:
                return []
            width = max(1, -(-(high - low + 1) // HISTOGRAM_BINS))
            counts = dict(
                con.execute(
                    "SELECT (token_count - ?) // ?, count(*) FROM chunks GROUP BY 1",
                    [low, width],
                ).fetchall()
            )
        bins = (high - low) // width + 1
        return [
            (low + b * width, low + (b + 1) * width - 1, int(counts.get(b, 0))) for b in range(bins)
        ]

    def formats(self) -> list[tuple[str, int]]:
        """Documents per file extension, most first."""
        with self.read() as con:
            rows = con.execute(
                "SELECT lower(coalesce(nullif(regexp_extract(path, '\\.([A-Za-z0-9]+)$', 1), ''), "
                "'(none)')) AS ext, count(DISTINCT document_id) FROM chunks GROUP BY ext "
                "ORDER BY 2 DESC, 1"
            ).fetchall()
        return [(str(ext), int(n)) for ext, n in rows]

    def sizes(self) -> dict[str, int]:
        """Bytes of the database, of the whole ``runtime/`` folder, and of the build history."""
        return {
            "database": folder_size(self.database),
            "runtime folder": folder_size(self.folder.runtime),
            "build folder (history, caches)": folder_size(self.folder.build),
        }

    def runtime(self) -> Runtime:
        """The runtime serving this server's database in the UI process (made on first use)."""
        with self.lock:
            if self._runtime is None:
                settings = load_settings(self.name, self.root)
                self._runtime = Runtime(
                    settings, f"tools/build_mcp.sh {self.name}", self.folder.model
                )
            return self._runtime

    def engine(self) -> SearchEngine:
        """The engine over the last finished build: a newer database file starts loading in the
        background (as a running MCP server picks it up) while this one answers; raises
        :class:`IndexUnavailable` when there is no database to read."""
        return self.runtime().require()

    def source_file(self, path: str, version: str | None) -> Path | None:
        """The source file of document ``path`` (of ``version``), only when it lies inside the
        source folder once every link is resolved; None otherwise."""
        try:
            sources = {v.label: v.config.source.path for v in self.config.doc_versions()}
        except ConfigError:
            return None
        folder = sources.get(version) if version in sources else None
        if folder is None or not Path(folder).is_dir():
            return None
        base = Path(folder).resolve()
        candidate = (base / path).resolve()
        if not candidate.is_relative_to(base) or not candidate.is_file():
            return None
        return candidate


class Project:
    """The server folders under ``servers/`` of one project."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._servers: dict[str, Server] = {}
        self.lock = threading.Lock()

    def names(self) -> list[str]:
        """Every folder under ``servers/`` that holds a processing configuration."""
        folder = self.root / "servers"
        if not folder.is_dir():
            return []
        return sorted(
            p.name for p in folder.iterdir() if ServerFolder(p, p.name).processing_config.is_file()
        )

    def server(self, name: str) -> Server:
        """The server called ``name`` (raises :class:`UnknownServer`)."""
        if name not in self.names():
            raise UnknownServer(name)
        with self.lock:
            return self._servers.setdefault(name, Server(name, self.root))
