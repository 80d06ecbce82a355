"""Fill ``source-documentation/NAME`` from a git repository or a documentation site
(:mod:`docbuild.site`). A local source needs no sync: the build reads the user's folder in place."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from docbuild.config import ProcessingConfig
from docbuild.site.manifest import SYNC_FILE

GIT_TIMEOUT = 600


class SyncError(RuntimeError):
    """The source could not be fetched or copied."""


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


def sync_source(config: ProcessingConfig, label: str | None = None) -> str:
    """Clone the git source, or fetch the site, into ``config.source.path``; returns a summary
    for the terminal. Raises :class:`SyncError` when it cannot.

    ``config`` is the server's (or one documentation version's, with its ``label``, from
    :meth:`ProcessingConfig.doc_versions`)."""
    source = config.source
    if source.site_url:
        from docbuild.site.crawl import SiteError, sync_site

        try:
            return sync_site(source).summary()
        except SiteError as exc:
            raise SyncError(str(exc)) from None
    if not source.git_url:
        which = f"{config.name} version {label}" if label else config.name
        raise NothingToSync(
            f"{which} reads {source.path} in place at every build; nothing to sync "
            "(only git and site sources are synced)"
        )
    record = sync_git(config)
    return f"synced {record['origin']} → {source.path} (revision {record['revision'] or 'n/a'})"


def sync_git(config: ProcessingConfig) -> dict[str, str | None]:
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


def _sync_git(
    url: str, ref: str | None, subfolder: str | None, staging: Path
) -> dict[str, str | None]:
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
    shutil.copytree(folder, staging / "content", ignore=shutil.ignore_patterns(".git"))
    return {"origin": url, "ref": ref, "subfolder": subfolder, "revision": revision}
