"""What one sync of a site did: the counts for the terminal, and every URL that was not kept with
the reason, saved as ``.sync-report.json`` beside the manifest (the build ignores dot files)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from docbuild.site.manifest import Manifest, now, write_atomically

REPORT_FILE = ".sync-report.json"
SHOWN = 10  # failures listed in the summary; --verbose lists them all


@dataclass
class SyncReport:
    """What one sync of a site did."""

    origin: str
    folder: Path
    started_at: str = field(default_factory=now)
    found: int = 0  # pages discovered on the site (within scope)
    downloaded: int = 0  # page bodies downloaded
    new: int = 0
    updated: int = 0
    unchanged: int = 0  # answered 304, or downloaded with the same content
    resumed: int = 0  # kept from the interrupted sync this one resumed
    removed: int = 0  # kept before, now gone from the site (404, 410) or from the scope
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (url, why): not a page
    # of its own (another type, a duplicate, redirected elsewhere, beyond a crawl limit)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (url, "HTTP 404"): gone
    forbidden: list[str] = field(default_factory=list)  # disallowed by robots.txt: never asked
    failed: list[tuple[str, str]] = field(default_factory=list)  # (url, why); pages kept
    refused: list[tuple[str, str]] = field(default_factory=list)  # (url, why): failed for
    # good (too large, a redirect loop); not asked about again for a while
    warnings: list[str] = field(default_factory=list)  # crawl limits reached
    stopped: str | None = None  # why the sync stopped before the end
    requests: int = 0
    seconds: float = 0.0
    revision: str = ""

    @property
    def changed(self) -> bool:
        """Whether the folder holds anything new."""
        return bool(self.new or self.updated or self.removed)

    @property
    def path(self) -> Path:
        """Where the report is saved."""
        return self.folder / REPORT_FILE

    def problem(self) -> str | None:
        """Why this sync is not a success (it stopped early, or pages failed); None if it is."""
        if self.stopped:
            return f"the sync stopped before the end ({self.stopped}); what it fetched is kept"
        if self.failed:
            return (
                f"{len(self.failed)} page(s) could not be fetched (kept as they were; listed in "
                f"{self.path})"
            )
        return None

    def summary(self, verbose: bool = False) -> str:
        """Lines for the terminal: the counts, the warnings, the first failures (every URL not
        kept when ``verbose``) and where the report is."""
        lines = [
            f"synced {self.origin} → {self.folder} in {self.seconds:.1f} s "
            f"(revision {self.revision or 'n/a'}): {self.found} pages found, "
            f"{self.downloaded} downloaded, {self.requests} requests"
            + (f", {self.resumed} kept from the interrupted sync" if self.resumed else ""),
            f"  {self.new} new, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed, {len(self.skipped)} skipped, {len(self.missing)} not found, "
            f"{len(self.forbidden)} forbidden by robots.txt, {len(self.failed)} failed (kept as "
            f"they were), {len(self.refused)} refused for good",
        ]
        lines += [f"  warning: {warning}" for warning in self.warnings]
        if verbose:
            lines += self.listing()
        else:
            lines += [f"  failed: {url}: {why}" for url, why in self.failed[:SHOWN]]
            if len(self.failed) > SHOWN:
                lines.append(f"  ... and {len(self.failed) - SHOWN} more")
        lines.append(f"  every URL not kept, and why: {self.path} (--verbose prints them)")
        return "\n".join(lines)

    def listing(self) -> list[str]:
        """Every URL not kept, under a heading per kind."""
        lines: list[str] = []
        kinds = [
            ("failed (kept as they were)", self.failed),
            ("refused for good", self.refused),
            ("not found", self.missing),
            ("skipped", self.skipped),
            ("forbidden by robots.txt", [(url, "") for url in self.forbidden]),
        ]
        for title, entries in kinds:
            if entries:
                lines.append(f"  {title} ({len(entries)}):")
                lines += [f"    {url}: {why}" if why else f"    {url}" for url, why in entries]
        return lines

    def save(self) -> None:
        """Write the report beside the manifest (atomically)."""
        data = {
            "origin": self.origin,
            "started_at": self.started_at,
            "ended_at": now(),
            "complete": self.stopped is None,
            "stopped": self.stopped,
            "warnings": self.warnings,
            "counts": {
                "found": self.found,
                "downloaded": self.downloaded,
                "new": self.new,
                "updated": self.updated,
                "unchanged": self.unchanged,
                "resumed": self.resumed,
                "removed": self.removed,
                "requests": self.requests,
            },
            "failed": [{"url": url, "reason": why} for url, why in self.failed],
            "refused": [{"url": url, "reason": why} for url, why in self.refused],
            "missing": [{"url": url, "reason": why} for url, why in self.missing],
            "skipped": [{"url": url, "reason": why} for url, why in self.skipped],
            "forbidden": self.forbidden,
        }
        write_atomically(self.path, (json.dumps(data, indent=1) + "\n").encode())


def sync_unfinished(folder: Path, name: str) -> str | None:
    """Why the site synced into ``folder`` (server ``name``) may lack pages: its last sync was
    stopped before the end (Ctrl-C, SIGTERM, the site going down), or pages of it failed; None
    when the folder is not a site's or its last sync got everything."""
    manifest = Manifest.load(folder)
    if manifest is None:
        return None
    run = f"run tools/sync_documentation.sh {name}"
    if not manifest.complete:
        return (
            f"the sync of {manifest.origin} into {folder} did not finish (started "
            f"{manifest.started_at}, {len(manifest.pages)} pages so far): {run} to finish it, "
            "then build again"
        )
    try:
        failed = json.loads((folder / REPORT_FILE).read_text()).get("failed") or []
    except (OSError, ValueError, AttributeError):
        failed = []
    if not failed:
        return None
    return (
        f"the last sync of {manifest.origin} could not fetch {len(failed)} page(s), listed in "
        f"{folder / REPORT_FILE}: {run} to retry them"
    )
