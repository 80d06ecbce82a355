"""Find the source files of a build: globbed, deduplicated, within size and depth limits."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from docbuild.build_report import BuildError, BuildReport, DocVersionReport, labelled, log
from docbuild.config import DocVersion, ProcessingConfig
from docbuild.documents import FileProblem
from docbuild.formats import DEFAULT_EXCLUDES, DEFAULT_PATTERNS
from docbuild.services.sync import source_revision, sync_source

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


def discover(
    root: Path,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    fmt: str = "auto",
    max_file_bytes: int = 20_000_000,
    max_depth: int = 32,
) -> tuple[list[SourceFile], list[FileProblem]]:
    """List the files under ``root`` (or ``root`` itself when it is a file), sorted by path."""
    if not root.exists():
        raise FileNotFoundError(f"source path does not exist: {root}")
    include = include or DEFAULT_PATTERNS[fmt]
    excluded = ALWAYS_EXCLUDED + DEFAULT_EXCLUDES.get(fmt, []) + list(exclude or [])
    if root.is_file():
        candidates = [root]
        base = root.parent
    else:
        candidates = [p for p in root.rglob("*") if p.is_file() or p.is_symlink()]
        base = root
    files: dict[Path, SourceFile] = {}
    problems: list[FileProblem] = []
    for path in sorted(candidates):
        relative = path.relative_to(base).as_posix()
        if root.is_dir() and (not _matches(relative, include) or _matches(relative, excluded)):
            continue
        if relative.count("/") >= max_depth:
            problems.append(FileProblem(relative, f"deeper than max_depth={max_depth}"))
            continue
        try:
            resolved = path.resolve(strict=True)
            size = resolved.stat().st_size
        except OSError as exc:
            problems.append(FileProblem(relative, f"cannot read file: {exc.strerror or exc}"))
            continue
        if size > max_file_bytes:
            problems.append(
                FileProblem(relative, f"larger than max_file_bytes ({size:,} > {max_file_bytes:,})")
            )
            continue
        files.setdefault(resolved, SourceFile(path, relative))
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
        log(sync_source(version.config, version.label))
    if not source.path.exists():
        raise BuildError(
            f"source folder {source.path}{of} does not exist: fix {version.key} in {config_file}"
        )
    files, problems = discover_sources(version.config)
    report.problems.extend(labelled(problems, version.label))
    if version.label is not None:
        report.versions.append(
            DocVersionReport(
                version.label, str(source.path), source_revision(source.path), files=len(files)
            )
        )
    return files
