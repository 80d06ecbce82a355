"""The build: discover → parse → chunk → embed → consolidate → snapshot → materialize (scored by
the eval stage first, when asked) → package. Each stage is a module of :mod:`docbuild.stages`;
this module orders them, times them and holds the server's build lock."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from datetime import UTC, datetime
from typing import Concatenate, ParamSpec, TypeVar

import duckdb
from docserve.build_info import BuildInfo
from docserve.config import SearchSettings, configured_search

from docbuild.build_info import build_info
from docbuild.build_record import save_report
from docbuild.build_report import BuildError, BuildReport, DocVersionReport, log
from docbuild.config import ProcessingConfig
from docbuild.embedding import Embedder, EmbeddingError, make_embedder
from docbuild.stages.chunk import chunk_documents
from docbuild.stages.consolidate import chunks_table, write_parquet
from docbuild.stages.discover import discover_version
from docbuild.stages.embed import check_fits, embed_chunks
from docbuild.stages.evaluate import evaluate_database, wanted
from docbuild.stages.materialize import materialize, served_is_current
from docbuild.stages.package import RUNTIME_SOURCE, package_server, runtime_files, ship_model
from docbuild.stages.parse import parse_versions
from docbuild.stages.snapshot import lake_location, list_snapshots, snapshot_chunks
from docbuild.util.build_lock import build_lock
from docbuild.util.step_cache import content_key, settings_key


def now() -> str:
    """The time, as ``build_info.built_at`` records it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


P = ParamSpec("P")
R = TypeVar("R")


def locked(method: Callable[Concatenate[Build, P], R]) -> Callable[Concatenate[Build, P], R]:
    """Run a :class:`Build` method holding the server's build lock (``build/.lock``): another
    build of the same server raises :class:`~docbuild.util.build_lock.BuildLocked` at once, or is
    waited for when the build was made with ``wait=True``."""

    @functools.wraps(method)
    def holding_lock(build: Build, *args: P.args, **kwargs: P.kwargs) -> R:
        config = build.config
        with build_lock(config.work_dir, config.name, build.wait, log):
            return method(build, *args, **kwargs)

    return holding_lock


class Build:
    """One build of one server; ``wait`` waits for a running build of it instead of stopping."""

    def __init__(
        self, config: ProcessingConfig, embedder: Embedder | None = None, wait: bool = False
    ) -> None:
        self.config = config
        self._embedder = embedder
        self.wait = wait
        self.report = BuildReport(config.name, config.database_path)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a stage and turn its failure into a :class:`BuildError` naming it."""
        log(f"[{name}] ...")
        start = time.perf_counter()
        try:
            yield
        except BuildError:
            raise
        except (EmbeddingError, OSError, ValueError, duckdb.Error) as exc:
            raise BuildError(f"stage '{name}' failed: {exc}") from exc
        finally:
            self.report.seconds[name] = time.perf_counter() - start
        log(f"[{name}] done in {self.report.seconds[name]:.1f} s")

    @locked
    def run(self) -> BuildReport:
        """Run every stage; raises :class:`BuildError` on the first failure."""
        config, report = self.config, self.report
        info, dimension = self._snapshot_sources()
        # the sources' documents, chunks and vectors are gone by now: materializing a million
        # chunks needs the memory they held (several GB) for DuckDB's sort
        snapshot = report.snapshot
        with self.stage("materialize"):
            ship_model(config, info)  # before the database that needs it
            key = self.materialize_key(info)
            if not (snapshot.added or snapshot.removed) and served_is_current(
                config.database_path, snapshot.snapshot_id, key
            ):
                log(f"[materialize] nothing changed: {config.database_path} is current")
                report.materialized = False
            else:
                scored = functools.partial(
                    evaluate_database, config, snapshot_id=snapshot.snapshot_id
                )
                materialize(
                    lake_location(config),
                    snapshot.snapshot_id,
                    config.database_path,
                    dimension,
                    replace(
                        info,
                        versions_changed=snapshot.versions_changed,
                        built_at=now(),
                        materialize_key=key,
                    ),
                    scored if wanted(config) else None,
                    self.search_settings(),
                    config.index,
                    log,
                )
        with self.stage("package"):
            package_server(config, info)
        save_report(asdict(report), config.work_dir)
        return report

    def _snapshot_sources(self) -> tuple[BuildInfo, int]:
        """Run the stages up to the DuckLake snapshot; return the build's info and the vectors'
        dimension."""
        config, report = self.config, self.report
        report.default_version = config.default_label
        config_file = config.folder.processing_config
        with self.stage("discover"):
            groups = [(v, discover_version(v, report, config_file)) for v in config.doc_versions()]
            report.files = sum(len(files) for _, files in groups)
        with self.stage("parse"):
            documents = parse_versions(config, groups, report)
        for version, files in groups:
            counted = report.version(version.label)
            if not (counted.documents if counted else documents):
                of = f" of version {version.label}" if version.label else ""
                raise BuildError(
                    f"no documents to index{of}: {len(files)} file(s) found under "
                    f"{version.config.source.path} ({len(report.skipped)} skipped). Check "
                    f"{version.key}, include and format in {config_file}"
                )
        with self.stage("chunk"):
            chunks = chunk_documents(config, documents, report)
        with self.stage("embed"):
            embedder = self.embedder()
            check_fits(config.chunking.max_tokens, embedder)
            embedder.check()
            try:
                embedded = embed_chunks(
                    chunks, embedder, config.work_dir / "embeddings.duckdb", report
                )
            finally:
                embedder.stop()
        with self.stage("consolidate"):
            parquet = write_parquet(
                chunks_table(chunks, embedded.vectors), config.work_dir / "chunks.parquet"
            )
        info = build_info(config, embedder, report, embedded.probe)
        with self.stage("snapshot"):
            message = f"build of {config.name}: {len(documents)} documents, {len(chunks)} chunks"
            if report.versions:
                message += f" in {len(report.versions)} versions"
            labels = [v.label for v in report.versions]
            report.snapshot = snapshot_chunks(
                lake_location(config), parquet, message, info.as_dict(), labels
            )
            for version in report.versions:
                version.added, version.removed = report.snapshot.by_version.get(
                    version.label, (0, 0)
                )
        return info, embedded.vectors.shape[1]

    @locked
    def rollback(self, snapshot_id: int) -> BuildReport:
        """Materialize an earlier snapshot as the runtime database; nothing is embedded."""
        config, report = self.config, self.report
        lake = lake_location(config)
        builds = {s["snapshot_id"]: s for s in list_snapshots(lake)}
        if snapshot_id not in builds:
            known = ", ".join(map(str, builds)) or "none"
            raise BuildError(
                f"no build snapshot {snapshot_id} (builds: {known}); see `docbuild builds {config.name}`"
            )
        info = BuildInfo.of(builds[snapshot_id]["info"])
        with self.stage("materialize"):
            ship_model(config, info)
            counts = materialize(
                lake,
                snapshot_id,
                config.database_path,
                info.dimension,
                replace(info, built_at=now(), rolled_back_to=snapshot_id),
                search=self.search_settings(),
                index=config.index,
                log=log,
            )
        with self.stage("package"):
            package_server(config, info)
        report.chunks, report.documents = counts["chunks"], counts["documents"]
        report.default_version = info.default_version
        report.versions = [DocVersionReport.of(v) for v in info.versions]
        save_report(asdict(report), config.work_dir)
        return report

    def embedder(self) -> Embedder:
        """The configured embedder (made on first use)."""
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embedding, log_dir=self.config.work_dir)
        return self._embedder

    def search_settings(self) -> SearchSettings:
        """The server's search settings (BM25 parameters and probes are stored with the index)."""
        return configured_search(self.config.folder.server_config)

    def materialize_key(self, info: BuildInfo) -> str:
        """What the served database must have been materialized with to be this build's: its
        info, search and index settings, and the runtime code."""
        code = content_key(*((RUNTIME_SOURCE / f).read_bytes() for f in runtime_files()))
        settings = [info.as_dict(), asdict(self.search_settings()), vars(self.config.index), code]
        return settings_key(settings)
