"""Rebuild a server whenever its sources or its build configuration change.

Polls the files the build would read (same include and exclude patterns) and the server's
``processing_config.yaml``; once they have stopped changing for ``debounce`` seconds, runs an
incremental build. A site source is synced again at every look (every hour by default), so
changed pages reach the files, and so the next build. A running server picks up each new
database on its next call. When another build of the same server is running (one started by
hand), the watcher's build waits for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from docbuild.build_report import BuildError, format_summary, log
from docbuild.config import ConfigError, EmbeddingConfig, ProcessingConfig, load_processing_config
from docbuild.embedding import Embedder, EmbeddingError, make_embedder
from docbuild.pipeline import Build
from docbuild.services.sync import SyncError, sync_source
from docbuild.stages.discover import discover_sources

State = dict[str, tuple[int, int]]  # path -> (mtime in ns, size)
FOLDER_INTERVAL = 1.0  # seconds between looks at local folders, by default
SITE_INTERVAL = 3600.0  # between syncs of a site, by default
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``10m``, ``1h`` or ``1d``; raises ValueError otherwise."""
    text = text.strip().lower()
    unit = UNITS.get(text[-1:])
    number = text[:-1] if unit else text
    try:
        seconds = float(number) * (unit or 1.0)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration: use seconds or 30s, 10m, 1h, 1d") from None
    if seconds <= 0:
        raise ValueError(f"{text!r}: a duration must be positive")
    return seconds


@dataclass
class Changes:
    """How two states of the watched files differ."""

    added: list[str]
    removed: list[str]
    modified: list[str]

    def __str__(self) -> str:
        """For example ``1 modified, 2 added: a.md, b.md, c.md``."""
        counts = ", ".join(f"{len(paths)} {kind}" for kind, paths in vars(self).items() if paths)
        names = [*self.added, *self.removed, *self.modified]
        more = " ..." if len(names) > 5 else ""
        return f"{counts}: {', '.join(names[:5])}{more}"


def snapshot(config: ProcessingConfig) -> State:
    """The files a build of ``config`` would read (of every documentation version, a version's
    prefixed with its label), and its config file, with mtime and size."""
    paths: dict[str, Path] = {}
    for version in config.doc_versions():
        if not version.config.source.path.exists():  # the build says which and why
            continue
        files, _ = discover_sources(version.config)
        prefix = f"{version.label}/" if version.label else ""
        paths.update({prefix + f.relative: f.path for f in files})
    paths["(config) processing_config.yaml"] = config.folder.processing_config
    state: State = {}
    for name, path in paths.items():
        try:
            stat = Path(path).stat()
        except OSError:  # deleted between listing and stat: it counts as gone
            continue
        state[name] = (stat.st_mtime_ns, stat.st_size)
    return state


def compare(before: State, after: State) -> Changes:
    """What changed from ``before`` to ``after``."""
    return Changes(
        added=sorted(set(after) - set(before)),
        removed=sorted(set(before) - set(after)),
        modified=sorted(p for p in set(before) & set(after) if before[p] != after[p]),
    )


class Watcher:
    """Builds server ``name`` now, then again after each settled change, until stopped."""

    def __init__(self, name: str, interval: float | None = None, debounce: float = 2.0) -> None:
        self.name = name
        sites = any(v.config.source.site_url for v in load_processing_config(name).doc_versions())
        self.interval = interval or (SITE_INTERVAL if sites else FOLDER_INTERVAL)
        self.debounce = debounce
        self.embedder: Embedder | None = None
        self.embedder_config: EmbeddingConfig | None = None
        self.builds = 0

    def run(self) -> None:
        """Watch until interrupted."""
        self.resync()  # a site is fetched now, and again at every look
        config = load_processing_config(self.name)
        folders = [v.config.source.path for v in config.doc_versions()]
        synced = all(folder.exists() for folder in folders)
        state = snapshot(config) if synced else {}
        self.build()
        if not synced:  # the first build synced the sources
            state = snapshot(config)
        log(
            f"watching {', '.join(map(str, folders))} (every {self.interval:g} s, "
            f"building once changes settle for {self.debounce:g} s); Ctrl-C stops"
        )
        while True:
            time.sleep(self.interval)
            self.resync()
            current = self.settled(state)
            if current is None:
                continue
            log(f"changed: {compare(state, current)}")
            state = current  # what changes during the build triggers the next one
            self.build()

    def resync(self) -> None:
        """Sync every site source again; a failure is reported and its pages stay as they were."""
        try:
            versions = load_processing_config(self.name).doc_versions()
        except ConfigError as exc:
            log(f"cannot read the configuration: {exc}")
            return
        for version in versions:
            if version.config.source.site_url:
                which = f"version {version.label}: " if version.label else ""
                try:
                    log(which + sync_source(version.config, version.label))
                except SyncError as exc:
                    log(f"{which}sync failed: {exc}; its pages stay as they were")

    def settled(self, state: State) -> State | None:
        """The new state once changes stop for ``debounce`` seconds; None if nothing changed."""
        config = load_processing_config(self.name)
        current = snapshot(config)
        if current == state:
            return None
        while True:
            time.sleep(self.debounce)
            later = snapshot(config)
            if later == current:
                return current
            current = later

    def build(self) -> None:
        """One incremental build (once any other build of the server has finished); a failure is
        reported and watching goes on."""
        self.builds += 1
        try:
            config = load_processing_config(self.name)
            if self.embedder is None or self.embedder_config != config.embedding:
                self.embedder = make_embedder(config.embedding, log_dir=config.work_dir)
                self.embedder_config = config.embedding  # the model stays loaded between builds
            report = Build(config, self.embedder, wait=True).run()  # after a running build
        except (BuildError, ConfigError, EmbeddingError, SyncError, OSError, ValueError) as exc:
            log(f"build {self.builds} failed: {exc}")
            log("the previous database is still served; watching for the next change")
            return
        log(format_summary(report))
        log(f"build {self.builds} done: a running server answers from it on its next call")
