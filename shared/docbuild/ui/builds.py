"""Builds started from the UI: one child process per server running ``docbuild build NAME``,
its output kept line by line for the live view and written to ``build/ui-build.log``.

The build lock applies as on the command line, and is taken before the page answers: the page
waits until its child holds the lock (its pid is in ``build/.lock``). A child that cannot take
it (a build started in a terminal holds it) is a refusal with the CLI's own message; it is not
recorded as a build and leaves the log of the last build alone.
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
from typing import TextIO

from docserve.folder import ServerFolder

from docbuild.config import server_root
from docbuild.util.build_lock import LOCK_NAME, BuildLocked

LOG_NAME = "ui-build.log"
STAGE_LINE = re.compile(r"^\[(?P<stage>[a-z]+)\] (?P<what>.*)$")
LOCK_WAIT_SECONDS = 120.0  # how long a child may take to reach the build lock
LOCK_POLL_SECONDS = 0.05


class BuildRefused(RuntimeError):
    """The build did not start (another build holds the lock, or the child stopped before it
    took it); the message is the child's own."""


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
    pid: int | None = None
    lines: list[str] = field(default_factory=list)
    returncode: int | None = None  # None: still running
    finished: float | None = None
    log: TextIO | None = None  # the log file, once the build holds the lock
    guard: threading.Lock = field(default_factory=threading.Lock)

    @property
    def running(self) -> bool:
        return self.returncode is None

    def stages(self) -> list[Stage]:
        """The stages started so far, with their times once done."""
        return stages_of(self.lines)

    def add(self, line: str) -> None:
        with self.guard:
            self.lines.append(line)
            if self.log is not None:
                self.log.write(line + "\n")
                self.log.flush()

    def end(self, code: int) -> None:
        with self.guard:
            self.returncode, self.finished = code, time.time()
            self._close_log()

    def keep_log(self, path: Path) -> None:
        """Write the output so far to ``path``, then every line that follows."""
        with self.guard:
            self.log = path.open("w", encoding="utf-8")
            self.log.writelines(line + "\n" for line in self.lines)
            self.log.flush()
            if self.returncode is not None:
                self._close_log()

    def _close_log(self) -> None:
        if self.log is not None and self.returncode is not None:
            self.log.write(f"(exit code {self.returncode})\n")
            self.log.close()
            self.log = None

    def said(self) -> str:
        """What the child said last (its ``error:`` line), for a refusal."""
        for line in reversed(self.lines):
            if line.startswith("error: "):
                return line.removeprefix("error: ")
        if self.lines:
            return self.lines[-1]
        return f"the build stopped before it started (exit code {self.returncode})"


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


def lock_holder(work_dir: Path) -> int | None:
    """The pid written in the build lock file (None: no build holds it, or not yet)."""
    try:
        text = (work_dir / LOCK_NAME).read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class Builds:
    """The builds this UI started, one at a time per server."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.runs: dict[str, BuildRun] = {}
        self.lock = threading.Lock()

    def work_dir(self, name: str) -> Path:
        return ServerFolder(server_root(name, self.project), name).build

    def start(self, name: str) -> BuildRun:
        """Start building ``name``; return once the build holds the build lock. Raises
        :class:`BuildLocked` or :class:`BuildRefused` (with the CLI's message) when another
        build of it is running."""
        work_dir = self.work_dir(name)
        with self.lock:
            current = self.runs.get(name)
            if current is not None and current.running:
                raise BuildLocked(name, current.pid)
            run, child = self._spawn(name, work_dir)
            if not self._holds_lock(run, child, work_dir):
                raise BuildRefused(run.said())
            run.keep_log(work_dir / LOG_NAME)
            self.runs[name] = run
        return run

    def _spawn(self, name: str, work_dir: Path) -> tuple[BuildRun, subprocess.Popen[str]]:
        """``docbuild build NAME`` in a child process, its output followed on a thread."""
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
        run = BuildRun(name, time.time(), child.pid)
        threading.Thread(target=self._follow, args=(run, child), daemon=True).start()
        return run, child

    @staticmethod
    def _holds_lock(run: BuildRun, child: subprocess.Popen[str], work_dir: Path) -> bool:
        """Wait until the child holds the build lock (True) or has stopped without it."""
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while run.returncode is None:
            if lock_holder(work_dir) == run.pid:
                return True
            if time.monotonic() > deadline:
                child.kill()
                run.add(f"error: the build did not take its lock within {LOCK_WAIT_SECONDS:.0f} s")
                return False
            time.sleep(LOCK_POLL_SECONDS)
        return False

    def _follow(self, run: BuildRun, child: subprocess.Popen[str]) -> None:
        """Keep the child's output, line by line (paths inside the project relative to it)."""
        prefix = f"{self.project}/"
        assert child.stdout is not None
        for raw in child.stdout:
            for line in raw.rstrip("\n").replace(prefix, "").split("\r"):
                if line.strip():
                    run.add(line)
        run.end(child.wait())

    def last(self, name: str) -> BuildRun | None:
        """The latest build of ``name`` started here, or one read back from its log file."""
        if name in self.runs:
            return self.runs[name]
        log = self.work_dir(name) / LOG_NAME
        try:
            lines = log.read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        ended = re.fullmatch(r"\(exit code (-?\d+)\)", lines[-1]) if lines else None
        run = BuildRun(name, log.stat().st_mtime, None, lines[:-1] if ended else lines)
        run.returncode = int(ended.group(1)) if ended else -1
        run.finished = log.stat().st_mtime
        return run
