"""What each finished build did, kept beside the server for people to look at later.

``build/report.json`` holds the latest build's report (counts, seconds per stage, chunk hygiene,
skipped files, versions); ``build/reports.jsonl`` gets one line per build, oldest first. Both are
written after the build has finished, so a reader never sees a half-written build's report.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LATEST = "report.json"
HISTORY = "reports.jsonl"


def save_report(report: dict[str, Any], work_dir: Path) -> Path:
    """Write ``report`` (a build report as plain data) as the latest and append it to the
    history; returns the latest report's path."""
    record = {"finished_at": datetime.now(UTC).isoformat(timespec="seconds"), **report}
    text = json.dumps(record, default=str)
    work_dir.mkdir(parents=True, exist_ok=True)
    latest = work_dir / LATEST
    staged = latest.with_name(f"{LATEST}.tmp-{os.getpid()}")
    staged.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(staged, latest)
    with (work_dir / HISTORY).open("a", encoding="utf-8") as history:
        history.write(text + "\n")
    return latest


def load_report(work_dir: Path) -> dict[str, Any] | None:
    """The latest build's report, or None when no build has saved one (or it is unreadable)."""
    try:
        data = json.loads((work_dir / LATEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
