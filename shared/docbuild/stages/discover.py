"""Find the source files of a build: globbed, deduplicated, within size and depth limits."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from docbuild.build_report import BuildError, BuildReport, DocVersionReport, labelled, log
from docbuild.config import DocVersion, ProcessingConfig
from docbuild.confine import DANGLING, OUTSIDE, inside, shown
from docbuild.documents import FileProblem
from docbuild.formats import DEFAULT_EXCLUDES, DEFAULT_PATTERNS
from docbuild.services.sync import SyncIncomplete, source_revision, sync_source
from docbuild.site.report import sync_unfinished

ALWAYS_EXCLUDED = ["**/.*", "**/.*/**", "**/node_modules/**"]


@dataclass(frozen=True)
class SourceFile:
    """A file to process: its absolute path and its path relative to the source root."""

    path: Path
    relative: str


def _matches(relative: str, patterns: list[str]) -> bool:
    # "**/x" should also match "x" at the top level
    return any(
        fnmatch.fnmatch(relative, p) or (p.startswith("**/") and fnmatch.fnmatch(relative, p[3:]))
        for p in patterns
    )


def _walk(root: Path, excluded: list[str]) -> tuple[list[tuple[Path, str]], list[FileProblem]]:
    """Every file under ``root`` with its relative path, following folder links that stay inside
    it (each real folder once); links that lead out of it, or nowhere, are reported instead."""
    real_root = Path(os.path.realpath(root))
    found: list[tuple[Path, str]] = []
    problems: list[FileProblem] = []
    visited: set[str] = set()
    for folder, dirs, names in os.walk(root, followlinks=True):
        visited.add(os.path.realpath(folder))
        keep = []
        for name in sorted(dirs):
            path = Path(folder, name)
            relative = path.relative_to(root).as_posix()
            if _matches(relative, excluded) or _matches(f"{relative}/-", excluded):
                continue
            if path.is_symlink() and not inside(real_root, path):
                problems.append(FileProblem(f"{shown(relative)}/", f"folder link {OUTSIDE}"))
            elif os.path.realpath(path) not in visited:
                keep.append(name)
        dirs[:] = keep
        found += [
            (Path(folder, name), Path(folder, name).relative_to(root).as_posix()) for name in names
        ]
    return found, problems


def _refusal(path: Path, relative: str, root: Path) -> str | None:
    """Why the file at ``path`` must not be read, if it must not."""
    if not os.path.exists(path):
        return DANGLING if path.is_symlink() else "disappeared while the folder was read"
    if not inside(root, path):
        return f"file link {OUTSIDE}"
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not valid UTF-8; rename the file to read it"
    return None


def discover(
    root: Path,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    fmt: str = "auto",
    max_file_bytes: int = 20_000_000,
    max_depth: int = 32,
) -> tuple[list[SourceFile], list[FileProblem]]:
    """List the files under ``root`` (or ``root`` itself when it is a file), sorted by path.
    Nothing whose real path lies outside ``root`` is listed: such links are reported."""
    if not root.exists():
        raise FileNotFoundError(f"source path does not exist: {root}")
    include = include or DEFAULT_PATTERNS[fmt]
    excluded = ALWAYS_EXCLUDED + DEFAULT_EXCLUDES.get(fmt, []) + list(exclude or [])
    problems: list[FileProblem] = []
    if root.is_file():
        real = Path(os.path.realpath(root))  # one file chosen by name: read where it lies
        candidates, base = [(real, real.name)], real.parent
    else:
        candidates, problems = _walk(root, excluded)
        base = root
    files: dict[str, SourceFile] = {}  # by real path: a file linked twice is read once
    real_base = os.path.realpath(base)
    for path, relative in sorted(candidates, key=lambda c: c[1]):
        if root.is_dir() and (not _matches(relative, include) or _matches(relative, excluded)):
            continue
        if relative.count("/") >= max_depth:
            problems.append(FileProblem(shown(relative), f"deeper than max_depth={max_depth}"))
            continue
        refusal = _refusal(path, relative, base)
        if refusal:
            problems.append(FileProblem(shown(relative), refusal))
            continue
        try:
            size = path.stat().st_size
        except OSError as exc:
            problems.append(FileProblem(relative, f"cannot read file: {exc.strerror or exc}"))
            continue
        if size > max_file_bytes:
            problems.append(
                FileProblem(relative, f"larger than max_file_bytes ({size:,} > {max_file_bytes:,})")
            )
            continue
        real = os.path.realpath(path)
        if real not in files or real == os.path.join(real_base, relative):  # its own name wins
            files[real] = SourceFile(path, relative)
    return sorted(files.values(), key=lambda f: f.relative), problems


def discover_sources(config: ProcessingConfig) -> tuple[list[SourceFile], list[FileProblem]]:
    """:func:`discover` with a server's source settings."""
    return discover(
        config.source.path,
        config.include,
        config.exclude,
        config.format,
        config.max_file_bytes,
        config.max_depth,
    )


def discover_version(
    version: DocVersion, report: BuildReport, config_file: Path
) -> list[SourceFile]:
    """The files of one documentation version, syncing a git or site source not there yet; its
    problems and counts go into ``report``. A missing folder fails the build, naming the key of
    ``config_file`` to fix."""
    source = version.config.source
    of = f" of version {version.label}" if version.label else ""
    if not source.path.exists() and source.synced:
        log(f"source {source.path}{of} not synced yet: syncing it first")
        first_sync(version)
    if not source.path.exists():
        raise BuildError(
            f"source folder {source.path}{of} does not exist: fix {version.key} in {config_file}"
        )
    files, problems = discover_sources(version.config)
    unfinished = sync_unfinished(source.path, version.config.name) if source.site_url else None
    if unfinished and not files:
        raise BuildError(unfinished)
    if unfinished:
        log(f"warning: {unfinished}; building from the pages it has")
    report.problems.extend(labelled(problems, version.label))
    if version.label is not None:
        report.versions.append(
            DocVersionReport(
                version.label, str(source.path), source_revision(source.path), files=len(files)
            )
        )
    return files


def first_sync(version: DocVersion) -> None:
    """Sync a source the build finds missing. Pages that failed are a warning (the build goes on
    with the rest); a sync that stopped before the end fails the build."""
    try:
        log(sync_source(version.config, version.label))
    except SyncIncomplete as exc:
        log(exc.summary)
        if exc.stopped:
            raise BuildError(exc.problem) from None
        log(f"warning: {exc.problem}")
