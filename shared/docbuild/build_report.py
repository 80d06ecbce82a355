"""What a build reports: its error, its counts per stage and per documentation version, its
log lines and progress bars, and the summary printed at its end."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from docbuild.documents import FileProblem
from docbuild.stages.snapshot import Snapshot
from docbuild.util.hygiene import Hygiene


class BuildError(RuntimeError):
    """A stage failed; the message says which and why. The previous database is untouched."""


@dataclass
class DocVersionReport:
    """One documentation version's part of a build (a versioned server has one per version)."""

    label: str
    source_path: str
    source_revision: str | None = None
    files: int = 0
    files_unchanged: int = 0
    documents: int = 0
    documents_unchanged: int = 0
    chunks: int = 0
    # its texts the cache lacked (a text new to two versions counts in both)
    embedded: int = 0
    added: int = 0  # chunks the snapshot added to this version
    removed: int = 0

    @classmethod
    def of(cls, info: dict[str, object]) -> DocVersionReport:
        """The report of a version from its entry in ``build_info.versions``."""
        return cls(
            str(info["label"]),
            str(info.get("source_path")),
            info.get("source_revision"),  # type: ignore[arg-type]
            documents=int(info.get("documents", 0)),  # type: ignore[call-overload]
            chunks=int(info.get("chunks", 0)),  # type: ignore[call-overload]
        )

    def info(self) -> dict[str, object]:
        """Its entry in ``build_info.versions``."""
        return {
            "label": self.label,
            "documents": self.documents,
            "chunks": self.chunks,
            "source_path": self.source_path,
            "source_revision": self.source_revision,
        }


@dataclass
class BuildReport:
    """What a build did, for the summary and for tests."""

    name: str
    database: Path
    files: int = 0
    files_unchanged: int = 0  # parsed by an earlier build: their documents came from the cache
    documents: int = 0
    documents_unchanged: int = 0  # chunked by an earlier build
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    embedding_notes: list[str] = field(default_factory=list)  # endpoints' shares and failures
    problems: list[FileProblem] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    materialized: bool = True  # False: the served database already held this build
    hygiene: Hygiene | None = None
    snapshot: Snapshot | None = None
    versions: list[DocVersionReport] = field(default_factory=list)  # empty when unversioned
    default_version: str | None = None

    def version(self, label: str | None) -> DocVersionReport | None:
        """The report of documentation version ``label`` (None when unversioned)."""
        return next((v for v in self.versions if v.label == label), None)

    @property
    def skipped(self) -> list[FileProblem]:
        """Files left out of the build."""
        return [p for p in self.problems if p.skipped]


def log(message: str) -> None:
    """Progress lines go to stderr."""
    print(message, file=sys.stderr, flush=True)


def progress(iterable: object = None, **kwargs: object) -> tqdm:
    """A progress bar on stderr (shown on a terminal, quiet in logs)."""
    return tqdm(
        iterable,
        file=sys.stderr,
        mininterval=1.0,
        dynamic_ncols=True,
        leave=False,
        disable=None,
        **kwargs,
    )


def labelled(problems: list[FileProblem], label: str | None) -> list[FileProblem]:
    """``problems`` with their paths prefixed by the version's label (as is when unversioned)."""
    if label is None:
        return problems
    return [FileProblem(f"{label}/{p.path}", p.reason, p.skipped) for p in problems]


def format_summary(report: BuildReport) -> str:
    """A human summary of a build: counts, hygiene, skipped files, seconds per stage."""
    lines = [
        f"Built {report.name}: {report.database}",
        f"  files {report.files} ({report.files_unchanged} unchanged), documents "
        f"{report.documents} ({report.documents_unchanged} unchanged), chunks {report.chunks} "
        f"(embedded {report.embedded}, from cache {report.cached})",
        *(f"  {note}" for note in report.embedding_notes),
    ]
    for v in report.versions:
        line = f"  version {v.label}{' (default)' if v.label == report.default_version else ''}: "
        if report.snapshot is None:  # a rollback: counts from the snapshot's build
            lines.append(f"{line}documents {v.documents}, chunks {v.chunks}")
            continue
        lines.append(
            f"{line}files {v.files} ({v.files_unchanged} unchanged), documents {v.documents} "
            f"({v.documents_unchanged} unchanged), chunks {v.chunks} (embedded {v.embedded}); "
            f"+{v.added} / -{v.removed}"
        )
    if report.snapshot:
        s = report.snapshot
        changed = ""
        if report.versions:
            changed = f"; doc versions changed: {', '.join(s.versions_changed) or 'none'}"
        lines.append(
            f"  DuckLake snapshot {s.snapshot_id}: +{s.added} / -{s.removed} chunks{changed}"
        )
        if not report.materialized:
            lines.append("  served database unchanged: it already holds this snapshot")
    if report.hygiene:
        h = report.hygiene
        lines.append(
            f"  chunk hygiene: unbalanced code fences {h.unbalanced_fences}; "
            f"with section hierarchy {h.hierarchy_share:.1%}; "
            f"with page furniture {h.with_furniture} ({h.furniture_share:.1%}); "
            f"max tokens {h.max_tokens} (limit {h.token_limit}, over limit {h.over_limit})"
        )
    skipped = report.skipped
    notes = [p for p in report.problems if not p.skipped]
    lines.append(f"  skipped files: {len(skipped)}")
    lines.extend(f"    - {p.path}: {p.reason}" for p in skipped)
    if notes:
        lines.append(f"  parsed best-effort: {len(notes)}")
        lines.extend(f"    - {p.path}: {p.reason}" for p in notes)
    total = sum(report.seconds.values())
    stages = ", ".join(f"{k} {v:.1f}" for k, v in report.seconds.items())
    lines.append(f"  seconds: {stages} (total {total:.1f})")
    if report.chunks and total:
        lines.append(f"  throughput: {report.chunks / total:.1f} chunks/s end to end")
    return "\n".join(lines)
