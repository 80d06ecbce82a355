"""Fill ``source-documentation/NAME`` from a git repository or a documentation site
(:mod:`docbuild.site`). A local source needs no sync: the build reads the user's folder in place.
One sync of a server runs at a time (a lock in its build folder)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from docbuild.config import ProcessingConfig
from docbuild.site.manifest import SYNC_FILE
from docbuild.site.report import SHOWN
from docbuild.util.build_lock import BuildLocked, build_lock

GIT_TIMEOUT = 600


class SyncError(RuntimeError):
    """The source could not be fetched or copied."""


class SyncIncomplete(SyncError):
    """The sync ran but did not get everything: it stopped early (``stopped``), or pages failed.
    What it fetched is kept; ``summary`` says what it did."""

    def __init__(self, problem: str, summary: str, stopped: bool) -> None:
        self.problem = problem
        self.summary = summary
        self.stopped = stopped
        super().__init__(f"{problem}\n{summary}")


class NothingToSync(Exception):
    """The source is a local folder, read where it is: there is nothing to fetch."""


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT, env=env
        )
    except FileNotFoundError:
        raise SyncError("git is not installed; install it or use a local source path") from None
    except subprocess.TimeoutExpired:
        raise SyncError(f"git {args[0]} timed out after {GIT_TIMEOUT} s (network down?)") from None
    if out.returncode != 0:
        detail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise SyncError(f"git {args[0]} failed: {detail}")
    return out.stdout.strip()


def git_revision(path: Path) -> str | None:
    """The commit of the git checkout holding ``path``, if any."""
    try:
        return _git("-C", str(path), "rev-parse", "HEAD") or None
    except SyncError:
        return None


def source_revision(path: Path) -> str | None:
    """The revision recorded by the last sync, or the git commit of a checkout."""
    folder = path if path.is_dir() else path.parent
    record = folder / SYNC_FILE
    if record.is_file():
        try:
            return json.loads(record.read_text()).get("revision")
        except (ValueError, OSError):
            return None
    return git_revision(folder) if folder.exists() else None


def _replace_dir(staged: Path, target: Path) -> None:
    """Swap ``staged`` in at ``target`` (the old copy is removed only after the move)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    staged.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def sync_source(
    config: ProcessingConfig,
    label: str | None = None,
    verbose: bool = False,
    retry_refused: bool = False,
) -> str:
    """Clone the git source, or fetch the site, into ``config.source.path``; returns a summary
    for the terminal (every URL or link not kept when ``verbose``). Raises :class:`SyncError`
    when it cannot, or when another sync of the server is running, and :class:`SyncIncomplete`
    when a site's sync stopped early or some of its pages failed.

    ``config`` is the server's (or one documentation version's, with its ``label``, from
    :meth:`ProcessingConfig.doc_versions`); ``retry_refused`` asks a site again about the URLs
    an earlier sync refused for good."""
    source = config.source
    if not source.site_url and not source.git_url:
        which = f"{config.name} version {label}" if label else config.name
        raise NothingToSync(
            f"{which} reads {source.path} in place at every build; nothing to sync "
            "(only git and site sources are synced)"
        )
    with sync_lock(config):
        if source.site_url:
            return _sync_site(config, verbose, retry_refused)
        record = sync_git(config)
    summary = f"synced {record['origin']} → {source.path} (revision {record['revision'] or 'n/a'})"
    return summary + links_refused(record.get("refused_links") or [], verbose)


def _sync_site(config: ProcessingConfig, verbose: bool, retry_refused: bool) -> str:
    """Fetch a site source; see :func:`sync_source`."""
    from docbuild.site.crawl import SiteError, sync_site

    try:
        report = sync_site(config.source, config.max_file_bytes, retry_refused)
    except SiteError as exc:
        raise SyncError(str(exc)) from None
    summary = report.summary(verbose)
    problem = report.problem()
    if problem:
        again = "(later) to resume" if report.stopped else "to retry them"
        run = f"tools/sync_documentation.sh {config.name}"
        raise SyncIncomplete(f"{problem}: run {run} again {again}", summary, bool(report.stopped))
    return summary


@contextmanager
def sync_lock(config: ProcessingConfig) -> Iterator[None]:
    """Hold the sync lock of ``config``'s server (``build/sync/.lock``) while the block runs;
    raises :class:`SyncError` naming the running sync when another one holds it."""
    try:
        with build_lock(config.work_dir / "sync", config.name):
            yield
    except BuildLocked as exc:
        holder = f"pid {exc.pid}" if exc.pid is not None else "pid unknown"
        raise SyncError(
            f"another sync of {config.name} is running ({holder}): wait for it to finish, or "
            "stop it (what it fetched is kept) and sync again"
        ) from None


def sync_git(config: ProcessingConfig) -> dict[str, Any]:
    """Clone the git source into ``config.source.path``; returns what was recorded."""
    source = config.source
    assert source.git_url
    target = source.path
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        record = _sync_git(source.git_url, source.git_ref, source.git_subfolder, staging)
        record["synced_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        (staging / "content" / SYNC_FILE).write_text(json.dumps(record, indent=2) + "\n")
        _replace_dir(staging / "content", target)
        return record
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _sync_git(url: str, ref: str | None, subfolder: str | None, staging: Path) -> dict[str, Any]:
    checkout = staging / "checkout"
    args = ["clone", "--depth", "1", "--filter=blob:none", "--no-tags"]
    if subfolder:
        args.append("--sparse")
    if ref:
        args += ["--branch", ref]
    try:
        _git(*args, url, str(checkout))
    except SyncError as exc:
        raise SyncError(
            f"could not fetch {url}: {exc}. Offline? Use a local folder (--source PATH) instead."
        ) from None
    if subfolder:
        _git("sparse-checkout", "set", subfolder, cwd=checkout)
    folder = checkout / subfolder if subfolder else checkout
    if not folder.is_dir():
        raise SyncError(f"{url} has no folder {subfolder!r} at {ref or 'its default branch'}")
    revision = _git("rev-parse", "HEAD", cwd=checkout)
    shutil.copytree(
        folder, staging / "content", symlinks=True, ignore=shutil.ignore_patterns(".git")
    )
    refused = [{"path": path, "reason": why} for path, why in refuse_links(staging / "content")]
    record: dict[str, Any] = {
        "origin": url,
        "ref": ref,
        "subfolder": subfolder,
        "revision": revision,
    }
    if refused:
        record["refused_links"] = refused
    return record


def refuse_links(root: Path) -> list[tuple[str, str]]:
    """Remove the symbolic links under ``root`` that lead outside it or nowhere (a link in
    someone else's repository must not read the builder's files); returns each one's path and
    why. Links that stay inside ``root`` are kept as links."""
    real_root = os.path.realpath(root)
    refused: list[tuple[str, str]] = []
    for folder, dirs, files in os.walk(root):  # links to folders are listed, not entered
        for name in sorted([*dirs, *files]):
            path = Path(folder, name)
            if not path.is_symlink():
                continue
            target = os.path.realpath(path)
            if os.path.commonpath([real_root, target]) != real_root:
                why = f"a link to {os.readlink(path)}, outside the synced folder"
            elif not os.path.exists(target):
                why = f"a link to {os.readlink(path)}, which does not exist"
            else:
                continue
            refused.append((path.relative_to(root).as_posix(), why))
    for relative, _ in refused:
        (root / relative).unlink()
    return refused


def links_refused(refused: list[dict[str, str]], verbose: bool) -> str:
    """Summary lines for the links a git sync did not copy."""
    if not refused:
        return ""
    shown = refused if verbose else refused[:SHOWN]
    lines = [f"\n  {len(refused)} link(s) not copied (leading outside the folder, or nowhere):"]
    lines += [f"\n    {link['path']}: {link['reason']}" for link in shown]
    if len(refused) > len(shown):
        lines.append(f"\n    ... and {len(refused) - len(shown)} more (--verbose lists them)")
    return "".join(lines)
