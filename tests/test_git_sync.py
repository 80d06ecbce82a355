"""A git source with symbolic links in it, synced as a user syncs it (``docbuild sync``): links
are copied as links; those that lead outside the synced folder, or nowhere, are not copied and
the summary says so; never a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import REPO
from docbuild.services.scaffold import scaffold

NAME = "linked"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def repository(root: Path) -> Path:
    """A repository whose ``docs/`` holds a page and links: to the page (inside), to a file of
    the repository outside ``docs/``, to a file of this machine, to a folder outside, and to
    nothing; committed as links."""
    repo = root / "upstream"
    docs = repo / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "page.md").write_text("# Page\n\nThe guide.\n")
    (repo / "secret.md").write_text("# Secret\n\nNot part of the docs.\n")
    (repo / "private").mkdir()
    (repo / "private" / "notes.md").write_text("# Notes\n")
    os.symlink("guide/page.md", docs / "same-page.md")  # inside: kept
    os.symlink("guide", docs / "guide-again")  # a folder inside: kept
    os.symlink("../secret.md", docs / "secret.md")  # the repository, outside docs/
    os.symlink("/etc/hostname", docs / "hostname.md")  # the builder's machine
    os.symlink("../private", docs / "private")  # a folder outside
    os.symlink("missing.md", docs / "dangling.md")  # nowhere
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "docs", cwd=repo)
    return repo


def test_git_sync_copies_links_as_links_and_refuses_those_that_leave(project: Path):
    repo = repository(project)
    scaffold(NAME, git_url=f"file://{repo}", git_subfolder="docs", root=project)
    synced = subprocess.run(
        [str(REPO / ".venv" / "bin" / "docbuild"), "sync", NAME],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
    )
    assert synced.returncode == 0, synced.stderr
    assert "Traceback" not in synced.stderr
    assert "4 link(s) not copied" in synced.stdout, synced.stdout
    for line in (
        "secret.md: a link to ../secret.md, outside the synced folder",
        "hostname.md: a link to /etc/hostname, outside the synced folder",
        "private: a link to ../private, outside the synced folder",
        "dangling.md: a link to missing.md, which does not exist",
    ):
        assert f"    {line}" in synced.stdout, synced.stdout
    target = project / "source-documentation" / NAME
    names = sorted(p.name for p in target.iterdir())
    assert names == [".sync.json", "guide", "guide-again", "same-page.md"]
    assert (target / "same-page.md").is_symlink()  # a link, still working
    assert os.readlink(target / "same-page.md") == "guide/page.md"
    assert (target / "same-page.md").read_text().startswith("# Page")
    assert (target / "guide-again" / "page.md").is_file()
