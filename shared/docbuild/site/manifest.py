"""``.sync.json`` of a synced site: one record per page kept (its URLs, validators, content hash,
when it was fetched and what the site answered) and the URLs refused for good, written
atomically so that an interrupted sync leaves a manifest the next one resumes from."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

SYNC_FILE = ".sync.json"
REFUSED_DAYS = 7
"""A URL refused for good (too large, a redirect loop) is not asked about again for this long."""
PARTIAL_SUFFIX = ".part"
"""Pages being written are named ``.NAME.part`` until complete, then renamed into place."""


def now() -> str:
    """The time, as ISO 8601 UTC to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class PageRecord:
    """One page kept in the source folder."""

    url: str  # the URL requested
    final_url: str  # after redirects
    page_url: str  # the public URL chunks cite: canonical (when on the site), else final_url
    content_type: str
    content_hash: str  # sha256 of the body as saved
    fetched_at: str  # when its body was last downloaded or confirmed unchanged (304)
    status: int  # the last answer: 200 or 304
    etag: str | None = None
    last_modified: str | None = None
    aliases: list[str] = field(default_factory=list)  # other URLs found to be this page
    depth: int = 0  # links from the start page (0: the start page, or named by a sitemap)


@dataclass
class Refusal:
    """A URL that failed in a way trying again will not fix (too large, a redirect loop)."""

    reason: str
    since: str  # when it was first refused (ISO 8601)

    @property
    def until(self) -> str:
        """The day from which it is asked about again."""
        return (
            (datetime.fromisoformat(self.since) + timedelta(days=REFUSED_DAYS)).date().isoformat()
        )

    def due(self) -> bool:
        """Whether it is time to ask about it again."""
        return datetime.now(UTC).date().isoformat() >= self.until


@dataclass
class Manifest:
    """What the last sync (or the one under way) of a site left in the folder."""

    origin: str  # the start URL
    started_at: str = field(default_factory=now)
    synced_at: str | None = None  # when the last complete sync ended; None while under way
    complete: bool = False
    pages: dict[str, PageRecord] = field(default_factory=dict)  # file (relative) -> record
    refused: dict[str, Refusal] = field(default_factory=dict)  # URL -> why, since when

    @property
    def revision(self) -> str:
        """A short hash of every page's file and content: it changes when any page does."""
        digest = hashlib.sha256()
        for name in sorted(self.pages):
            digest.update(f"{name}\0{self.pages[name].content_hash}\n".encode())
        return digest.hexdigest()[:12]

    def page_urls(self) -> dict[str, str]:
        """File (relative to the folder) → the page's public URL."""
        return {name: record.page_url for name, record in self.pages.items()}

    def save(self, folder: Path) -> None:
        """Write ``folder/.sync.json`` atomically."""
        data = {
            "kind": "site",
            "origin": self.origin,
            "revision": self.revision,
            "started_at": self.started_at,
            "synced_at": self.synced_at,
            "complete": self.complete,
            "pages": {name: asdict(record) for name, record in sorted(self.pages.items())},
            "refused": {url: asdict(refusal) for url, refusal in sorted(self.refused.items())},
        }
        write_atomically(folder / SYNC_FILE, (json.dumps(data, indent=1) + "\n").encode())

    @classmethod
    def load(cls, folder: Path) -> Manifest | None:
        """The manifest of a site folder; None when there is none (or it is not a site's)."""
        try:
            data = json.loads((folder / SYNC_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("kind") != "site":
            return None
        pages = {name: PageRecord(**record) for name, record in data.get("pages", {}).items()}
        refused = {url: Refusal(**why) for url, why in (data.get("refused") or {}).items()}
        return cls(
            origin=data["origin"],
            started_at=data.get("started_at") or now(),
            synced_at=data.get("synced_at"),
            complete=bool(data.get("complete")),
            pages=pages,
            refused=refused,
        )


def write_atomically(path: Path, body: bytes) -> None:
    """Write ``body`` to ``path`` through a temporary file renamed into place: a reader (or an
    interrupted sync) sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=PARTIAL_SUFFIX, dir=path.parent
    )
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(body)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def remove_partials(folder: Path) -> int:
    """Delete what an interrupted sync was writing; returns how many files."""
    removed = 0
    for partial in folder.rglob(f".*{PARTIAL_SUFFIX}"):
        partial.unlink(missing_ok=True)
        removed += 1
    return removed


def page_urls(folder: Path) -> dict[str, str]:
    """File → public URL for a synced site folder; empty for any other folder."""
    manifest = Manifest.load(folder)
    return manifest.page_urls() if manifest else {}
