"""The AsciiDoc preprocessor: ``include::`` expanded relative to the including file (a missing
``.txt`` target also looked up as ``.adoc``; a missing file, a cycle or nesting deeper than
``MAX_INCLUDE_DEPTH`` reported with its line and left out), ``ifdef``/``ifndef``/``endif``
evaluated, attribute entries recorded, comment blocks and git's mail headers dropped; and the
fragments (files another file of the tree includes), skipped as pages of their own."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from docbuild.confine import inside
from docbuild.documents import SkipFile
from docbuild.readers.asciidoc.syntax import (
    ATTRIBUTE_ENTRY,
    ATTRIBUTE_REF,
    COMMENT_BLOCK,
    CONDITIONAL,
    INCLUDE,
    MAIL_FIELDS,
    MAIL_HEADER,
    MAX_INCLUDE_DEPTH,
    SUFFIXES,
)
from docbuild.readers.text import read_text


def resolve_include(base: Path, target: str) -> tuple[Path | None, list[Path]]:
    """The file an include names (or None) and every path tried (dependencies)."""
    path = base / target
    tried = [path]
    if path.suffix == ".txt":
        tried += [path.with_suffix(suffix) for suffix in SUFFIXES]
    for candidate in tried:
        if candidate.is_file():
            return candidate.resolve(), tried
    return None, tried


def mail_header(lines: list[str]) -> tuple[int, str | None]:
    """Length of a leading mail header (git's how-tos) and its ``Abstract``, if there is one."""
    end = lines.index("") if "" in lines else len(lines)
    fields: dict[str, str] = {}
    last = ""
    for line in lines[:end]:
        header = MAIL_HEADER.match(line)
        if line[:1].isspace() and last:
            fields[last] += " " + line.strip()
        elif header and header["name"].lower() in MAIL_FIELDS:
            last = header["name"].lower()
            fields[last] = header["value"].strip()
        else:
            return 0, None
    if not fields or not ({"from", "subject", "content-type"} & fields.keys()):
        return 0, None
    return end, fields.get("abstract")


@dataclass
class Preprocessor:
    """Expands includes and conditionals; collects attribute entries and problems."""

    attributes: dict[str, str]
    root: Path  # the source folder: an include that leads out of it is refused
    lines: list[str] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    dependencies: set[str] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)  # includes that lead out of the root
    conditions: list[tuple[bool, str]] = field(default_factory=list)

    def read(self, text: str, path: Path, name: str, stack: tuple[Path, ...] = ()) -> None:
        """Append the lines of ``text`` (read from ``path``, shown as ``name``)."""
        in_comment = False
        for number, raw in enumerate(text.replace("\x00", "").split("\n"), start=1):
            line = raw.rstrip()
            where = f"{name} line {number}" if stack else f"line {number}"
            if in_comment:
                in_comment = not COMMENT_BLOCK.match(line)
                continue
            condition = CONDITIONAL.match(line)
            if condition:
                self._conditional(condition, where)
                continue
            if not all(ok for ok, _ in self.conditions):
                continue
            if COMMENT_BLOCK.match(line):
                in_comment = True
                continue
            include = INCLUDE.match(line)
            if include:
                self._include(include["target"], path, where, (*stack, path))
                continue
            entry = ATTRIBUTE_ENTRY.match(line)
            if entry:
                set_attribute(self.attributes, entry)
            self.lines.append(line)
            self.origins.append(where)

    def finish(self) -> None:
        """Note conditionals left open at the end of the document."""
        for _, where in self.conditions:
            self.problems.append(f"conditional at {where} has no endif")

    def _conditional(self, match: re.Match[str], where: str) -> None:
        kind = match["kind"]
        if kind == "endif":
            if self.conditions:
                self.conditions.pop()
            else:
                self.problems.append(f"endif without ifdef at {where}; ignored")
            return
        ok = True if kind == "ifeval" else self._defined(match["names"]) == (kind == "ifdef")
        if match["text"] and kind != "ifeval":  # single-line form: ifdef::name[text]
            if ok and all(c for c, _ in self.conditions):
                self.lines.append(match["text"])
                self.origins.append(where)
            return
        self.conditions.append((ok, where))

    def _defined(self, names: str) -> bool:
        if "+" in names:
            return all(n.lower() in self.attributes for n in names.split("+"))
        return any(n.lower() in self.attributes for n in names.split(","))

    def _include(self, target: str, path: Path, where: str, stack: tuple[Path, ...]) -> None:
        target = ATTRIBUTE_REF.sub(lambda m: self.attributes.get(m["name"].lower(), m[0]), target)
        found, tried = resolve_include(path.parent, target)
        self.dependencies.update(str(p) for p in tried)
        if found is not None and not inside(self.root, found):
            self.refused.append(target)
        elif found is None:
            self.problems.append(f"include {target} not found ({where})")
        elif found in stack:
            self.problems.append(f"include cycle: {target} ({where}) is already being read")
        elif len(stack) > MAX_INCLUDE_DEPTH:
            self.problems.append(
                f"include {target} ({where}) nested deeper than {MAX_INCLUDE_DEPTH}"
            )
        else:
            try:
                text = read_text(found)
            except SkipFile as exc:
                self.problems.append(f"include {target} ({where}) unreadable: {exc}")
                return
            self.read(text, found, target, stack)


def set_attribute(attributes: dict[str, str], entry: re.Match[str]) -> None:
    """Apply an attribute entry ``:name: value`` (or ``:name!:`` to unset)."""
    name = entry["name"].lower()
    if entry["unset"] or entry["unset2"]:
        attributes.pop(name, None)
        return
    value = (entry["value"] or "").strip()
    attributes[name] = ATTRIBUTE_REF.sub(lambda m: attributes.get(m["name"].lower(), m[0]), value)


# ---------------------------------------------------------------------------- include fragments

Stamps = tuple[tuple[str, int, int], ...]
_FRAGMENTS: dict[tuple[Path, tuple[str, ...]], tuple[Stamps, dict[Path, list[Path]]]] = {}


def _tree_stamps(
    root: Path, folder: str, suffixes: tuple[str, ...]
) -> Iterator[tuple[str, int, int]]:
    """(path, mtime, size) of every file under ``folder`` with one of ``suffixes``, hidden
    folders and links out of ``root`` left out."""
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                yield from _tree_stamps(root, entry.path, suffixes)
            elif entry.name.endswith(suffixes) and entry.is_file() and inside(root, Path(entry)):
                info = entry.stat()
                yield entry.path, info.st_mtime_ns, info.st_size


def _includes_of(path: Path) -> list[Path]:
    """Files of the tree that ``path`` includes (found ones only)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for line in text.split("\n"):
        match = INCLUDE.match(line.rstrip()) if line.startswith("include") else None
        target = resolve_include(path.parent, match["target"])[0] if match else None
        if target is not None and target != path:
            found.append(target)
    return found


def _scan(files: list[Path]) -> dict[Path, list[Path]]:
    """Fragments of the tree with the files that include them.

    A fragment is a file reached through includes from a file that nothing includes; files
    that only include each other (a cycle) stay pages of their own.
    """
    edges = {path.resolve(): _includes_of(path) for path in files}
    included = {target for targets in edges.values() for target in targets}
    todo = [path for path in edges if path not in included]
    reached: set[Path] = set()
    while todo:
        for target in edges.get(todo.pop(), []):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    includers: dict[Path, list[Path]] = {}
    for source, targets in edges.items():
        for target in targets:
            if target in reached:
                includers.setdefault(target, []).append(source)
    return includers


def fragment_includers(root: Path, path: Path) -> list[Path]:
    """The files of ``root`` that include ``path`` (empty when ``path`` is a page).

    Files with the AsciiDoc suffixes (and ``path``'s own, say ``.txt`` in older git trees) are
    scanned; the scan is cached per root and made again when any of those files changes.
    """
    key = (root, tuple(sorted({*SUFFIXES, path.suffix})))
    signature = tuple(_tree_stamps(root, str(root), key[1]))
    cached = _FRAGMENTS.get(key)
    if cached is None or cached[0] != signature:
        cached = (signature, _scan([Path(p) for p, _, _ in signature]))
        _FRAGMENTS[key] = cached
    return sorted(cached[1].get(path.resolve(), []))
