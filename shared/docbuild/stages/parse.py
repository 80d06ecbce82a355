"""The parse stage: every source file's documents and problems, read by the format's reader in
the build's process or in worker processes (:func:`docbuild.util.workers.ordered_map`), and cached."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from docbuild.build_report import BuildReport, labelled, progress
from docbuild.config import DocVersion, ProcessingConfig
from docbuild.documents import Document, FileProblem, SkipFile
from docbuild.links import drop_unsafe_urls, is_safe_url
from docbuild.readers import read_file
from docbuild.site.manifest import page_urls
from docbuild.stages.discover import SourceFile
from docbuild.util.step_cache import StepCache, content_key
from docbuild.util.workers import ordered_map

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
        docs, problems = read_file(file.path, file.relative, version.config)
    except SkipFile as exc:
        return Parsed.of([], [FileProblem(file.relative, str(exc))], exc.dependencies)
    except Exception as exc:  # a parser bug must not sink the whole build
        return Parsed([], [FileProblem(file.relative, f"could not be parsed: {exc!r}")])
    problems += drop_unsafe_urls(docs, file.relative)
    if not docs and not problems:
        problems = [FileProblem(file.relative, "no text content")]
    if version.label is not None:
        for doc in docs:
            doc.document_id, doc.version = f"{version.label}/{doc.document_id}", version.label
    return Parsed.of(docs, problems, [d for doc in docs for d in doc.dependencies])


def ready() -> None:
    """Nothing to load before parsing: readers are made per file."""


def parse_all(jobs: list[tuple[SourceFile, DocVersion]]) -> Iterator[Parsed]:
    """Each file's :class:`Parsed`, in order, on every core when there are many."""
    return ordered_map(parse, jobs, ready)


Group = tuple[DocVersion, list[SourceFile]]


def parse_versions(
    config: ProcessingConfig, groups: list[Group], report: BuildReport
) -> list[Document]:
    """Every document of every version's files; a file that fails is reported in ``report`` and
    skipped, the build goes on. Parsed files are cached by version, URL settings, path and bytes;
    a synced site's documents are cited by their live URLs."""
    cache: StepCache[Parsed] = StepCache(
        config.work_dir / "cache" / "documents.pickle",
        [config.format, vars(config.html), vars(config.jsonl)],
    )
    keyed: list[tuple[str, tuple[SourceFile, DocVersion]]] = []
    live_urls: dict[str | None, dict[str, str]] = {}
    for version, files in groups:
        view = version.config
        if view.source.site_url:
            live_urls[version.label] = page_urls(view.source.path)
        for file in files:
            try:
                data = file.path.read_bytes()
            except OSError as exc:
                problem = FileProblem(file.relative, f"cannot read file: {exc}")
                report.problems.extend(labelled([problem], version.label))
                continue
            key = content_key(version.label, view.url_base, view.url_suffix, file.relative, data)
            keyed.append((key, (file, version)))
    documents: list[Document] = []
    seen: set[str] = set()
    counted = 0  # files reused from the cache so far
    results = cache.get_all(keyed, parse_all, Parsed.unchanged)
    for (_, (file, version)), parsed in zip(
        keyed, progress(results, desc="parse", unit="file", total=len(keyed)), strict=True
    ):
        counts = report.version(version.label)
        if counts is not None:
            counts.files_unchanged += cache.reused - counted
        counted = cache.reused
        report.problems.extend(labelled(parsed.problems, version.label))
        for doc in parsed.documents:
            if doc.document_id in seen:
                problem = FileProblem(
                    file.relative, f"duplicate document id {doc.document_id!r}; skipped"
                )
                report.problems.extend(labelled([problem], version.label))
                continue
            seen.add(doc.document_id)
            url = live_urls.get(version.label, {}).get(file.relative)
            documents.append(replace(doc, url=url) if url and is_safe_url(url) else doc)
            if counts is not None:
                counts.documents += 1
    cache.save()
    report.files_unchanged = cache.reused
    report.documents = len(documents)
    return documents
