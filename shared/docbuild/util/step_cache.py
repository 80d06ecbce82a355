"""Results of the deterministic build steps (parsing a file, chunking a document), kept between
builds so that a rebuild parses and chunks only what changed.

Each cache is keyed by its input (a file's bytes, a parsed document) under a settings key that
covers everything else the step depends on: its settings, the tokenizer and the code that runs
it. A change to any of those means a cold run, never a stale result. The file is a local build
artefact, written atomically; one that cannot be read is ignored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

import docbuild

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741
CODE = sorted(Path(docbuild.__file__).parent.rglob("*.py"))
"""The build package's code: a new version of any module starts every cache afresh."""


class StepCache(Generic[T]):
    """Results by input key, for one settings key; only this build's results are kept."""

    def __init__(self, path: Path, settings: object) -> None:
        self.path = path
        self.settings_key = settings_key(settings)
        self.previous = self._load()
        self.current: dict[str, T] = {}
        self.reused = 0

    def _load(self) -> dict[str, T]:
        """The last build's results, if made under these settings. The file holds the settings
        key, then the results: a stale file (a million chunks: gigabytes) is never unpickled."""
        try:
            with self.path.open("rb") as file:
                if pickle.load(file) != self.settings_key:
                    return {}
                results = pickle.load(file)
        except Exception:  # missing, truncated, from another Python: start afresh
            return {}
        return results if isinstance(results, dict) else {}

    def get(
        self, key: str, compute: Callable[[], T], still_valid: Callable[[T], bool] | None = None
    ) -> T:
        """The result for ``key``: from the last build if it had one (and ``still_valid`` accepts
        it), else ``compute()``."""
        if self.has(key, still_valid):
            result = self.previous[key]
            self.reused += 1
        else:
            result = compute()
        self.current[key] = result
        return result

    def get_all(
        self,
        keyed: list[tuple[str, I]],
        compute: Callable[[list[I]], Iterator[T]],
        still_valid: Callable[[T], bool] | None = None,
    ) -> Iterator[T]:
        """The result for each ``(key, input)``, in order, as :meth:`get` gives it; the results
        to compute come from one ``compute(inputs)`` call (which may spread them over processes)."""
        fresh = compute([item for key, item in keyed if not self.has(key, still_valid)])
        for key, _ in keyed:
            yield self.get(key, lambda: next(fresh), still_valid)

    def has(self, key: str, still_valid: Callable[[T], bool] | None = None) -> bool:
        """Whether the last build left a result for ``key`` (that ``still_valid`` accepts)."""
        return key in self.previous and (still_valid is None or still_valid(self.previous[key]))

    def save(self) -> None:
        """Keep this build's results for the next build."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staged = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        with staged.open("wb") as file:
            pickle.dump(self.settings_key, file)
            pickle.dump(self.current, file)
        os.replace(staged, self.path)


def content_key(*parts: Any) -> str:
    """A hash of ``parts`` (bytes as they are; dataclasses and the rest as JSON)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else json.dumps(part, sort_keys=True, default=_plain)
        digest.update(data if isinstance(data, bytes) else data.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _plain(value: Any) -> Any:
    """A dataclass as its fields (read in place, not copied as ``dataclasses.asdict`` would), and
    anything else JSON lacks as its string."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return vars(value)
    return str(value)


def settings_key(settings: object) -> str:
    """A hash of ``settings`` and of the build package's code."""
    return content_key(settings, *(path.read_bytes() for path in CODE))
