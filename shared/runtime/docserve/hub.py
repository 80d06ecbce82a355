"""A hub: several built servers ("libraries") searched and read from one process.

Each library keeps its own :class:`Runtime` (its database, its reloads, its errors); they share
one :class:`EmbedderPool`, so libraries embedded with the same model share one encoder and each
query is embedded once per encoder. A search over several libraries fuses every library's
candidates in one list (see :meth:`Hub.search_all`); one library alone answers exactly as its own
server would.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .answers import AnswerError
from .config import SearchSettings
from .query_embedder import EmbedderPool
from .runtime import IndexUnavailable, Runtime
from .search import (
    NEAREST_BATCHES,
    NEAREST_SECTIONS,
    Candidates,
    SearchEngine,
    SearchInputError,
    SearchResponse,
    SearchResult,
    SectionRef,
    fuse,
    min_max,
    other_sections,
    within_budget,
)

Key = tuple[int, int]  # (library index, row)


@dataclass
class LibraryInfo:
    """What ``list_libraries`` says about one library."""

    name: str
    title: str
    covers: str  # one line on what it covers
    available: bool
    problem: str | None = None  # why it cannot answer now (missing, locked, unreadable...)
    documents: int = 0
    chunks: int = 0
    versions: list[str] = field(default_factory=list)
    default_version: str | None = None
    built_at: str | None = None
    model: str | None = None


@dataclass
class Library:
    """One built server in the hub: its name, folder and runtime."""

    name: str
    root: Path
    runtime: Runtime
    description: str | None = None  # the config's one line on what it covers

    def engine(self) -> SearchEngine:
        """The engine serving now; raises :class:`LibraryUnavailable` saying why not."""
        try:
            return self.runtime.require()
        except IndexUnavailable as exc:
            raise LibraryUnavailable(f"{self.name}: {exc}") from None

    def info(self) -> LibraryInfo:
        """This library as ``list_libraries`` shows it."""
        try:
            engine = self.engine()
        except LibraryUnavailable as exc:
            return LibraryInfo(self.name, self.name, self.description or "", False, str(exc))
        store, catalog = engine.store, engine.store.catalog
        counts = store.counts()
        return LibraryInfo(
            name=self.name,
            title=self.name,
            covers=self.description or covers_line(engine),
            available=True,
            problem=engine.model_mismatch or self.runtime.reload_error,
            documents=counts["documents"],
            chunks=counts["chunks"],
            versions=list(catalog.versions),
            default_version=catalog.default_version,
            built_at=store.info.built_at,
            model=store.info.model_id,
        )


class LibraryUnavailable(RuntimeError):
    """A library cannot answer now (no database, a database that cannot be read)."""


def covers_line(engine: SearchEngine, shown: int = 8) -> str:
    """One line on what a library covers: its top-level folders, or its first page titles."""
    catalog = engine.store.catalog
    version = catalog.default_version
    folders = [  # a leading underscore marks a generator's partials, not a topic
        f.rstrip("/")
        for f in catalog.folders(version, 100)
        if f.endswith("/") and not f.startswith("_")
    ]
    if len(folders) >= 3:
        more = "…" if len(folders) > shown else ""
        return f"sections: {', '.join(folders[:shown])}{more}"
    documents = sorted(catalog.documents_of(version), key=lambda d: (d.path.count("/"), d.path))
    titles = [d.title for d in documents if d.title][:shown]
    more = "…" if len(documents) > shown else ""
    return f"pages such as: {'; '.join(titles)}{more}" if titles else "(no titled pages)"


class Hub:
    """The libraries of a hub by name, and search across them."""

    def __init__(self, libraries: list[Library], settings: SearchSettings | None = None) -> None:
        if not libraries:
            raise ValueError("a hub needs at least one library")
        names = [library.name for library in libraries]
        if len(set(names)) != len(names):
            raise ValueError(f"two libraries share a name: {', '.join(sorted(names))}")
        self.libraries = {library.name: library for library in libraries}
        self.settings = settings or SearchSettings()

    @property
    def several_versions(self) -> bool:
        """Whether any library that can answer holds several documentation versions (answers
        then name each passage's version)."""
        engines = (lib.runtime.engine for lib in self.libraries.values() if lib.runtime.wait())
        return any(
            engine is not None and engine.store.catalog.several_versions for engine in engines
        )

    @property
    def names(self) -> list[str]:
        """The libraries' names, in the hub's order."""
        return list(self.libraries)

    def library(self, name: str) -> Library:
        """One library by name; an unknown name is an error listing the known ones."""
        if name not in self.libraries:
            raise AnswerError(
                f"no library named {name!r}; this hub serves: {', '.join(self.names)} "
                "(list_libraries describes them)"
            )
        return self.libraries[name]

    def pick(self, library: str | list[str] | None) -> list[Library]:
        """The libraries a request names: one, a list, or None for all."""
        if library is None or library == [] or library == "all":
            return list(self.libraries.values())
        names = [library] if isinstance(library, str) else list(library)
        return [self.library(name) for name in dict.fromkeys(names)]

    def one(self, library: str | None) -> Library:
        """The library a reading tool works on: the one named, or the only one."""
        if library is None:
            if len(self.libraries) == 1:
                return next(iter(self.libraries.values()))
            raise AnswerError(
                f"say which library: one of {', '.join(self.names)} (list_libraries describes "
                "them; search without library looks in all)"
            )
        return self.library(library)

    def search(
        self, query: str, library: str | list[str] | None = None, **options: Any
    ) -> SearchResponse:
        """Search one library as its own server would, or several with :meth:`search_all`;
        every result names its library."""
        picked = self.pick(library)
        if len(picked) == 1:
            only = picked[0]
            response = only.engine().search(query, **options)
            for item in [*response.results, *response.nearest_sections]:
                item.library = only.name
            return response
        return self.search_all(picked, query, **options)

    def search_all(
        self,
        libraries: Iterable[Library],
        query: str,
        top_k: int | None = None,
        neighbors: int = 0,
        max_tokens: int | None = None,
        **options: Any,
    ) -> SearchResponse:
        """Search several libraries as one: every library's vector and keyword candidates go
        into one list per retriever (cosine scores are comparable between databases embedded
        with the same model; BM25 scores are min-max normalized per library first, since their
        scale depends on each corpus), then one fusion ranks them all. A library that cannot
        answer, or whose filters select nothing, is named in the notes; the others answer."""
        started = time.perf_counter()
        found: list[tuple[int, Library, SearchEngine, Candidates]] = []
        notes: list[str] = []
        errors: list[str] = []
        for index, library in enumerate(libraries):
            try:
                engine = library.engine()
                candidates = engine.candidates(
                    query, top_k, neighbors=neighbors, max_tokens=max_tokens, **options
                )
            except LibraryUnavailable as exc:
                notes.append(f"library {exc} (searched the others)")
                continue
            except SearchInputError as exc:
                errors.append(f"{library.name}: {exc}")
                continue
            notes += [f"{library.name}: {note}" for note in candidates.notes]
            found.append((index, library, engine, candidates))
        if not found:
            raise SearchInputError(
                "; ".join(errors) or "no library can answer now: " + "; ".join(notes)
            )
        if errors:
            notes.append("left out: " + "; ".join(errors))
        lists = merged_lists([(index, c) for index, _, _, c in found])
        fused = fuse(lists, strongest_keyword(found), self.settings)
        first = found[0][3]
        top_k = first.top_k
        engines = {index: (library, engine) for index, library, engine, _ in found}
        results = self._results(engines, fused[:top_k])
        weak = "vector" in lists and found[0][2].is_weak(
            [(0, score) for _, score in lists["vector"]]
        )
        nearest = (
            self._nearest(engines, results, [key for key, _, _ in fused[top_k:]]) if weak else []
        )
        if neighbors:
            results = self._expand(
                engines, results, [key for key, _, _ in fused[:top_k]], neighbors
            )
        if max_tokens is not None:
            results = within_budget(found[0][2].token_counter, results, max_tokens, notes)
        merged = Candidates(
            first.query, first.mode, top_k, {}, None, notes, None, first.filters, weak
        )
        response = merged.response(results, nearest, True, started)
        response.retrievers = sorted(lists)
        response.degraded = any(c.degraded_retrievers for _, _, _, c in found) or any(
            note.startswith("library ") for note in notes
        )
        return response

    @staticmethod
    def _results(
        engines: dict[int, tuple[Library, SearchEngine]],
        fused: list[tuple[Key, float, dict[str, int]]],
    ) -> list[SearchResult]:
        """The fused (library, row) keys as results, in order, each naming its library."""
        by_library: dict[int, list[tuple[int, float, dict[str, int]]]] = {}
        for (index, row), score, ranks in fused:
            by_library.setdefault(index, []).append((row, score, ranks))
        made: dict[Key, SearchResult] = {}
        for index, rows in by_library.items():
            library, engine = engines[index]
            for (row, _, _), result in zip(rows, engine.results_at(rows), strict=True):
                result.library = library.name
                made[(index, row)] = result
        return [made[key] for key, _, _ in fused]

    @staticmethod
    def _expand(
        engines: dict[int, tuple[Library, SearchEngine]],
        results: list[SearchResult],
        keys: list[Key],
        neighbors: int,
    ) -> list[SearchResult]:
        """Each library's hits with their neighbours merged in, in the fused order."""
        kept: set[int] = set()
        for index, (_, engine) in engines.items():
            mine = [
                (result, row) for result, (i, row) in zip(results, keys, strict=True) if i == index
            ]
            if mine:
                expanded = engine.expand([r for r, _ in mine], [row for _, row in mine], neighbors)
                kept.update(id(result) for result in expanded)
        return [result for result in results if id(result) in kept]

    @staticmethod
    def _nearest(
        engines: dict[int, tuple[Library, SearchEngine]],
        shown: list[SearchResult],
        after: list[Key],
    ) -> list[SectionRef]:
        """The first sections of the fused keys ``after`` that no shown result is from."""
        refs: list[SectionRef] = []
        nearest: list[SectionRef] = []
        start = 0
        for end in NEAREST_BATCHES:
            batch = after[start:end]
            by_library: dict[int, list[int]] = {}
            for index, row in batch:
                by_library.setdefault(index, []).append(row)
            found = {
                index: engines[index][1].store.sections_at(rows)
                for index, rows in by_library.items()
            }
            for index, row in batch:
                library, engine = engines[index]
                catalog = engine.store.catalog
                doc = catalog.documents[int(catalog.doc_of_row[row])]
                hierarchy, page = found[index][row]
                refs.append(
                    SectionRef(doc.path, doc.title, hierarchy, page, doc.version, library.name)
                )
            nearest = other_sections(shown, refs)
            if len(nearest) == NEAREST_SECTIONS or end >= len(after):
                return nearest
            start = end
        return nearest


def merged_lists(found: list[tuple[int, Candidates]]) -> dict[str, list[tuple[Key, float]]]:
    """Every library's candidates in one list per retriever, best first: vector scores as they
    are (cosines), keyword scores min-max normalized within each library."""
    merged: dict[str, list[tuple[Key, float]]] = {}
    for index, candidates in found:
        for name, rows in candidates.lists.items():
            scored = min_max(rows) if name == "keyword" else rows
            merged.setdefault(name, []).extend(((index, row), score) for row, score in scored)
    depth = max((len(rows) for _, c in found for rows in c.lists.values()), default=0)
    return {
        name: sorted(rows, key=lambda item: (-item[1], item[0]))[:depth]
        for name, rows in merged.items()
    }


def strongest_keyword(
    found: list[tuple[int, Library, SearchEngine, Candidates]],
) -> dict[str, float] | None:
    """The fusion weights across libraries: the keyword weight of the library where the
    question is most worded like the docs (a prose question everywhere leans on vectors)."""
    weights = [c.weights for _, _, _, c in found if c.weights]
    return max(weights, key=lambda w: w["keyword"]) if weights else None


def open_library(name: str, root: Path, embedders: EmbedderPool) -> Library:
    """The built server ``name`` in folder ``root`` (a server folder or an installed server
    package) as a hub library, its database opened now."""
    from .config import load_settings
    from .doctor import Install

    install = Install.read(name, root)
    settings = load_settings(name, root)
    hint = f"tools/build_mcp.sh {name}" if install.form == "folder" else install.restore_data
    runtime = Runtime(settings, hint, install.model_dir, embedders)
    return Library(name, root, runtime, settings.description)
