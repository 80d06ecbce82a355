"""Builds started from the UI: one child process per server running ``docbuild build NAME``,
its output kept line by line for the live view and written to ``build/ui-build.log``.

The build lock applies as on the command line: a second build of a server is refused with the
message the CLI gives, whether the first was started here or in a terminal.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from docserve.folder import ServerFolder

from docbuild.config import server_root
from docbuild.util.build_lock import BuildLocked, build_lock

LOG_NAME = "ui-build.log"
STAGE_LINE = re.compile(r"^\[(?P<stage>[a-z]+)\] (?P<what>.*)$")


@dataclass
class Stage:
    """A build stage as the log shows it."""

    name: str
    seconds: float | None = None  # None: running (or stopped inside it)


@dataclass
class BuildRun:
    """One build started here: its output so far and how it ended."""

    name: str
    started: float
    lines: list[str] = field(default_factory=list)
    returncode: int | None = None  # None: still running
    finished: float | None = None
    changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def running(self) -> bool:
        return self.returncode is None

    def stages(self) -> list[Stage]:
        """The stages started so far, with their times once done."""
        return stages_of(self.lines)

    def add(self, line: str) -> None:
        with self.changed:
            self.lines.append(line)
            self.changed.notify_all()

    def end(self, code: int) -> None:
        with self.changed:
            self.returncode, self.finished = code, time.time()
            self.changed.notify_all()


def stages_of(lines: list[str]) -> list[Stage]:
    """Stages from ``[stage] ...`` and ``[stage] done in N s`` log lines, in order."""
    found: dict[str, Stage] = {}
    for line in lines:
        match = STAGE_LINE.match(line)
        if not match:
            continue
        stage = found.setdefault(match["stage"], Stage(match["stage"]))
        done = re.match(r"done in ([0-9.]+) s", match["what"])
        if done:
            stage.seconds = float(done.group(1))
    return list(found.values())


class Builds:
    """The builds this UI started, one at a time per server."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.runs: dict[str, BuildRun] = {}
        self.lock = threading.Lock()

    def start(self, name: str) -> BuildRun:
        """Start building ``name``; raises :class:`BuildLocked` (the CLI's message) when a build
        of it is running."""
        work_dir = ServerFolder(server_root(name, self.project), name).build
        with self.lock:
            current = self.runs.get(name)
            if current is not None and current.running:
                raise BuildLocked(name, None)
            with build_lock(work_dir, name, False, lambda _: None):
                pass  # free now; the child takes it (and refuses if someone is quicker)
            run = BuildRun(name, time.time())
            self.runs[name] = run
        env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(self.project), "PYTHONUNBUFFERED": "1"}
        child = subprocess.Popen(
            [sys.executable, "-m", "docbuild.cli", "build", name],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            env=env,
        )
        threading.Thread(target=self._follow, args=(run, child, work_dir), daemon=True).start()
        return run

    def _follow(self, run: BuildRun, child: subprocess.Popen[str], work_dir: Path) -> None:
        """Keep the child's output, line by line, in memory and in the log file (paths inside
        the project relative to it)."""
        prefix = f"{self.project}/"
        work_dir.mkdir(parents=True, exist_ok=True)
        assert child.stdout is not None
        with (work_dir / LOG_NAME).open("w", encoding="utf-8") as log:
            for raw in child.stdout:
                for line in raw.rstrip("\n").replace(prefix, "").split("\r"):
                    if line.strip():
                        run.add(line)
                        log.write(line + "\n")
                        log.flush()
            code = child.wait()
            log.write(f"(exit code {code})\n")
        run.end(code)

    def last(self, name: str) -> BuildRun | None:
        """The latest build of ``name`` started here, or one read back from its log file."""
        if name in self.runs:
            return self.runs[name]
        log = ServerFolder(server_root(name, self.project), name).build / LOG_NAME
        try:
            lines = log.read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        ended = re.fullmatch(r"\(exit code (-?\d+)\)", lines[-1]) if lines else None
        run = BuildRun(name, log.stat().st_mtime, lines[:-1] if ended else lines)
        run.returncode = int(ended.group(1)) if ended else -1
        run.finished = log.stat().st_mtime
        return run
