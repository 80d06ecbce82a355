"""The preprocess step for one source file (its documents and problems), run in the build's
process or in worker processes (:func:`docbuild.workers.ordered_map`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from docbuild.config import DocVersion
from docbuild.documents import Document, FileProblem, SkipFile
from docbuild.processors import processor_for
from docbuild.stages.discover import SourceFile
from docbuild.workers import ordered_map

Stamp = tuple[int, int] | None  # (mtime in ns, size); None for a file that does not exist


def stamp(path: str) -> Stamp:
    """What tells whether a file changed since it was read."""
    try:
        info = Path(path).stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


@dataclass
class Parsed:
    """One file's documents and problems, with the other files they were read from."""

    documents: list[Document]
    problems: list[FileProblem]
    dependencies: dict[str, Stamp] = field(default_factory=dict)

    @classmethod
    def of(cls, documents: list[Document], problems: list[FileProblem], paths: list[str]) -> Parsed:
        """Record the state of ``paths`` as they are now."""
        return cls(documents, problems, {p: stamp(p) for p in sorted(set(paths))})

    def unchanged(self) -> bool:
        """True while none of the files it was read from has changed (or appeared)."""
        return all(stamp(path) == seen for path, seen in self.dependencies.items())


def parse(job: tuple[SourceFile, DocVersion]) -> Parsed:
    """One file's documents and problems; a file that cannot be used gives no documents.
    A versioned server's document ids start with the version's label."""
    file, version = job
    try:
        processor = processor_for(file.path, version.config)
        docs, problems = processor.process(file.path, file.relative)
    except SkipFile as exc:
        return Parsed.of([], [FileProblem(file.relative, str(exc))], exc.dependencies)
    except Exception as exc:  # a parser bug must not sink the whole build
        return Parsed([], [FileProblem(file.relative, f"could not be parsed: {exc!r}")])
    if not docs and not problems:
        problems = [FileProblem(file.relative, "no text content")]
    if version.label is not None:
        for doc in docs:
            doc.document_id, doc.version = f"{version.label}/{doc.document_id}", version.label
    return Parsed.of(docs, problems, [d for doc in docs for d in doc.dependencies])


def ready() -> None:
    """Nothing to load before parsing: processors are made per file."""


def parse_all(jobs: list[tuple[SourceFile, DocVersion]]) -> Iterator[Parsed]:
    """Each file's :class:`Parsed`, in order, on every core when there are many."""
    return ordered_map(parse, jobs, ready)
