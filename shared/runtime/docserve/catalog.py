"""What the database holds (documents, their versions and sections), and which rows a filter keeps.

Filters are resolved to a boolean mask over the chunk rows before ranking: a path glob or folder
prefix, words that must appear in the title or headings, and one documentation version (or all).
Per-document work (globs) runs over the documents, not the chunks; section words use an inverted
index over the distinct breadcrumbs, built the first time a section filter is asked for.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

ALL_VERSIONS = "all"
PATH_MASKS_KEPT = 16
DOCUMENT_COLUMNS = ("document_id", "path", "title", "url", "version", "first", "chunks", "sections")
_WORD = re.compile(r"\w+")
_GLOB_CHARS = re.compile(r"[*?\[]")


class FilterError(ValueError):
    """A filter or version that selects nothing or does not exist; the message says what does."""


@dataclass(frozen=True)
class DocumentEntry:
    """One document of one version: where its chunks are."""

    index: int
    first: int  # its first row (a document's rows are contiguous)
    document_id: str
    path: str
    title: str
    version: str | None
    url: str | None
    chunks: int
    sections: int


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (letters, digits and underscores)."""
    return _WORD.findall(text.lower())


def glob_pattern(glob: str) -> re.Pattern[str]:
    """A regex for a path glob: ``**`` spans folders, ``*`` and ``?`` stay within one."""
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def path_matcher(spec: str) -> Any:
    """A predicate on document paths: a glob when ``spec`` has ``* ? [``, else a folder prefix or
    one file (with or without its extension)."""
    spec = spec.strip()
    while spec.startswith(("./", "/")):
        spec = spec.removeprefix(".").removeprefix("/")
    if _GLOB_CHARS.search(spec):
        pattern = glob_pattern(spec)
        return lambda path: pattern.match(path) is not None
    folder = spec.rstrip("/")
    if not folder:
        return lambda path: True

    def matches(path: str) -> bool:
        return path == folder or path.startswith(folder + "/") or path.rsplit(".", 1)[0] == folder

    return matches


Breadcrumbs = Callable[[], list[tuple[tuple[str, ...], np.ndarray]]]


class Catalog:
    """Documents, versions and sections of a database, from per-document metadata read at start."""

    def __init__(
        self,
        documents: dict[str, np.ndarray],
        rows: int,
        versions: list[str],
        default_version: str | None,
        breadcrumbs: Breadcrumbs,
    ) -> None:
        """``documents``: columns document_id, path, title, url, version, first, chunks and
        sections, in row order; ``breadcrumbs`` lists each (title, heading…) and its rows."""
        self.versions = versions
        self.default_version = default_version
        self.documents = [
            DocumentEntry(
                index=i,
                first=int(first),
                document_id=str(document_id),
                path=str(path),
                title=str(title or ""),
                version=(version or None) if versions else None,
                url=str(url),
                chunks=int(chunks),
                sections=int(sections),
            )
            for i, (document_id, path, title, url, version, first, chunks, sections) in enumerate(
                zip(
                    *(documents[name] for name in DOCUMENT_COLUMNS),
                    strict=True,
                )
            )
        ]
        self._by_id = {doc.document_id: doc for doc in self.documents}
        counts = np.asarray(documents["chunks"], dtype=np.int64)
        if counts.sum() != rows:
            raise ValueError(f"the documents hold {counts.sum()} rows, the table {rows}")
        self.doc_of_row = np.repeat(np.arange(len(self.documents), dtype=np.int32), counts)
        code = {label: i for i, label in enumerate(versions)}
        doc_versions = np.array([code.get(d.version or "", -1) for d in self.documents], np.int16)
        self.row_versions = doc_versions[self.doc_of_row] if rows else np.zeros(0, np.int16)
        self._breadcrumbs = breadcrumbs
        self._section_index: dict[str, np.ndarray] | None = None
        self._path_masks: dict[tuple[str, str | None], np.ndarray] = {}
        self._lock = threading.Lock()

    def by_id(self, document_id: str) -> DocumentEntry:
        """The document ``document_id`` (KeyError when there is none)."""
        return self._by_id[document_id]

    @property
    def several_versions(self) -> bool:
        """True when answers should name their version."""
        return len(self.versions) > 1

    # -- versions ---------------------------------------------------------------------------

    def resolve_version(self, version: str | None) -> str | None:
        """The version a request reads (None: every row); raises :class:`FilterError`."""
        if version is not None and not str(version).strip():
            version = None
        if not self.versions:
            if version in (None, ALL_VERSIONS):
                return None
            raise FilterError(
                f"unknown version {version!r}: this server holds one unlabelled version of the "
                "documentation; leave version out"
            )
        if version is None:
            return self.default_version
        if version == ALL_VERSIONS:
            return None
        if version not in self.versions:
            raise FilterError(
                f"unknown version {version!r}: this server has {self.describe_versions()}; "
                f"pass one of them, or {ALL_VERSIONS!r} for every version"
            )
        return version

    def describe_versions(self) -> str:
        """``'25.1', '25.7' (default)`` for messages."""
        return ", ".join(
            f"{v!r}{' (default)' if v == self.default_version else ''}" for v in self.versions
        )

    def version_mask(self, version: str | None) -> np.ndarray | None:
        """Rows of ``version`` (None: no restriction)."""
        if version is None or len(self.versions) == 1:
            return None
        return self.row_versions == self.versions.index(version)

    # -- documents --------------------------------------------------------------------------

    def documents_of(self, version: str | None, path: str | None = None) -> list[DocumentEntry]:
        """Documents of ``version`` (None: all) whose path matches ``path`` (None: any)."""
        match = path_matcher(path) if path else None
        return [
            doc
            for doc in self.documents
            if (version is None or doc.version == version) and (match is None or match(doc.path))
        ]

    def document(
        self, path: str, version: str | None, document_id: str | None = None
    ) -> DocumentEntry:
        """The one document at ``path`` (exact, or without its extension) in ``version``; a file
        that holds several (the records of a JSONL export) is read one record at a time, named
        by ``document_id``."""
        candidates = self.documents_of(version)
        exact = [d for d in candidates if d.path == path]
        found = exact or [d for d in candidates if d.path.rsplit(".", 1)[0] == path.rstrip("/")]
        if document_id is not None:
            found = [d for d in found if d.document_id == document_id]
        if len(found) == 1:
            return found[0]
        where = f" in version {version!r}" if version else ""
        if len({d.version for d in found}) > 1:
            versions = ", ".join(repr(d.version) for d in found)
            raise FilterError(
                f"{path!r} exists in several versions ({versions}): pass version to choose one"
            )
        if found:
            raise FilterError(
                f"{path!r}{where} holds {len(found)} documents (the records of one file): read "
                "one with get_chunk(chunk_id), the id a search result gives"
            )
        similar = [d.path for d in candidates if path.rstrip("/").split("/")[-1] in d.path][:8]
        hint = f"; similar: {', '.join(similar)}" if similar else ""
        raise FilterError(
            f"no document {path!r}{where}{hint}. Call outline() to list the documents"
        )

    def folders(self, version: str | None, limit: int = 12) -> list[str]:
        """Top-level folders (and root files) of ``version``, for messages."""
        tops: dict[str, None] = {}
        for doc in self.documents_of(version):
            head, _, rest = doc.path.partition("/")
            tops.setdefault(f"{head}/" if rest else head)
        names = sorted(tops)
        return names[:limit] + ([f"… {len(names) - limit} more"] if len(names) > limit else [])

    # -- filters ----------------------------------------------------------------------------

    def path_mask(self, path: str, version: str | None) -> np.ndarray:
        """Rows of documents whose path matches ``path``; raises when none does (the last few
        masks are kept: an agent often repeats a filter, and matching every path takes time on
        a large database)."""
        key = (path, version)
        with self._lock:
            cached = self._path_masks.pop(key, None)
            if cached is None:
                cached = self._match_paths(path, version)
                cached.flags.writeable = False  # shared by the requests that ask for it
            self._path_masks[key] = cached
            while len(self._path_masks) > PATH_MASKS_KEPT:
                self._path_masks.pop(next(iter(self._path_masks)))
        return cached

    def _match_paths(self, path: str, version: str | None) -> np.ndarray:
        chosen = self.documents_of(version, path)
        if not chosen:
            where = f" in version {version!r}" if version else ""
            raise FilterError(
                f"no document path matches {path!r}{where}. Top-level entries: "
                f"{', '.join(self.folders(version))}. Use a folder prefix such as 'guide/' or a "
                "glob such as '**/install*'"
            )
        keep = np.zeros(len(self.documents), dtype=bool)
        keep[[doc.index for doc in chosen]] = True
        return keep[self.doc_of_row]

    def section_mask(self, section: str) -> np.ndarray:
        """Rows whose title or headings contain every word of ``section`` (any case)."""
        wanted = words(section)
        if not wanted:
            raise FilterError("section has no words: pass words from the headings, e.g. 'install'")
        index = self._sections()
        mask = np.ones(len(self.doc_of_row), dtype=bool)
        for word in wanted:
            rows = index.get(word)
            if rows is None:
                raise FilterError(
                    f"no title or heading contains {word!r}; call outline(path) to see a page's "
                    "headings"
                )
            keep = np.zeros(len(mask), dtype=bool)
            keep[rows] = True
            mask &= keep
        if not mask.any():
            raise FilterError(
                f"no single title or heading path contains all of {' '.join(wanted)!r}; "
                "use fewer words"
            )
        return mask

    def _sections(self) -> dict[str, np.ndarray]:
        """Word -> rows whose title or breadcrumb has it (built once, on first use)."""
        with self._lock:
            if self._section_index is None:
                index: dict[str, list[np.ndarray]] = {}
                for key, rows in self._breadcrumbs():
                    for word in set(words(" ".join(key))):
                        index.setdefault(word, []).append(rows)
                self._section_index = {
                    w: np.concatenate(r).astype(np.int64) for w, r in index.items()
                }
            return self._section_index

    def mask(
        self, version: str | None, path: str | None = None, section: str | None = None
    ) -> np.ndarray | None:
        """Rows a request may rank (None: all rows); raises :class:`FilterError`."""
        mask = self.version_mask(version)
        if path:
            path_rows = self.path_mask(path, version)
            mask = path_rows if mask is None else mask & path_rows
        if section:
            section_rows = self.section_mask(section)
            combined = section_rows if mask is None else mask & section_rows
            if not combined.any():
                scope = " and ".join(
                    part
                    for part in (
                        f"path {path!r}" if path else "",
                        f"version {version!r}" if version else "",
                    )
                    if part
                )
                raise FilterError(
                    f"no title or heading within {scope} contains all of {section!r}; call "
                    "outline to see the headings"
                )
            mask = combined
        return mask
