"""``docbuild watch``: rebuilds after edits settle, survives a failed build, and a server that keeps
running (one MCP session throughout) answers from each new build."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import REPO
from docbuild.services.ask import server_script
from docbuild.services.scaffold import scaffold
from fastmcp import Client

NAME = "watched"
DEBOUNCE = 0.8


async def wait_for(check: Callable[[], Any], timeout: float = 120) -> None:
    """Poll ``check`` (a function, or a coroutine function) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while not (await check() if inspect.iscoroutinefunction(check) else check()):
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.2)


async def top_path(client: Client, query: str) -> str | None:
    result = await client.call_tool("search", {"query": query, "top_k": 1})
    results = result.structured_content["results"]
    return results[0]["path"] if results else None


def test_watch_rebuilds_and_the_running_server_follows(project: Path):
    src = project / "corpus"
    src.mkdir()
    (src / "stars.md").write_text("# Stars\n\nStars fuse hydrogen into helium in their cores.\n")
    (src / "moons.md").write_text("# Moons\n\nMoons orbit planets and raise tides.\n")
    scaffold(NAME, str(src), "md", root=project)
    source = src  # the user's own folder is what is watched and built
    log = project / "watch.log"
    with log.open("w") as stderr:
        watcher = subprocess.Popen(
            [
                str(REPO / ".venv" / "bin" / "docbuild"),
                "watch",
                NAME,
                "--interval",
                "0.2",
                "--debounce",
                str(DEBOUNCE),
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
        )
    try:
        asyncio.run(session(log, source))
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(60)
    text = log.read_text()
    assert watcher.returncode == 0 and text.rstrip().endswith("stopped watching"), text


async def session(log: Path, source: Path) -> None:
    def logged(line: str) -> bool:
        return line in log.read_text()

    await wait_for(lambda: logged("watching "))
    assert logged("build 1 done")
    async with Client(server_script(NAME, log.parent)) as client:
        assert await top_path(client, "helium fusion") == "stars.md"

        # a burst of saves and a new page: one build once they settle
        for n in range(3):
            (source / "stars.md").write_text(f"# Stars\n\nStars shine, draft {n}.\n")
            await asyncio.sleep(DEBOUNCE / 4)
        (source / "comets.md").write_text("# Comets\n\nComets grow tails of ice near the sun.\n")
        await wait_for(lambda: logged("build 2 done"))
        assert "changed: 1 added, 1 modified: comets.md, stars.md" in log.read_text()

        async def comets_found() -> bool:  # the server loads the new build in the background
            return await top_path(client, "icy tails near the sun") == "comets.md"

        await wait_for(comets_found, timeout=30)

        # a build that fails (no documents left) keeps the previous database serving
        for page in source.glob("*.md"):
            page.rename(page.with_suffix(".txt"))
        await wait_for(lambda: logged("build 3 failed"))
        assert logged("the previous database is still served")
        assert await top_path(client, "icy tails near the sun") == "comets.md"

        for page in source.glob("*.txt"):
            page.rename(page.with_suffix(".md"))
        await wait_for(lambda: logged("build 4 done"))
        await asyncio.sleep(2 * DEBOUNCE)
    assert not logged("build 5")  # no build without a change
