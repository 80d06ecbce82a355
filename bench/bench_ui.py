"""Benchmark the maintainers' web page: server time of every route, on a real build and at scale.

Run: .venv/bin/python bench/bench_ui.py [--server servers/NAME] [--scale 100000] [--runs 5]
     [--views 12]

Without --server it builds the Mojo manual server into a temporary project first (about a
minute). It copies the server folder into a temporary project (its build history, report and
eval runs come along), adds a second server whose database is a synthetic copy grown to --scale
chunks (``bench_server.grow``; it has no build history, so its history page only says so), and
asks every route of each through the app in process (Starlette's test client: server time, no
network). Prints the time to open each server (its database and model, once per UI process),
then per route the first request and the median of --runs more (goal: 300 ms each at 100k
chunks). Then, over real HTTP (uvicorn in this process), the search page's time with no build
view open and with --views build views open (each an event stream following a build that is
running: a small server's build, paused once it holds its lock), and the UI's thread count.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # endpoints.served

from bench_server import build_mojo, grow, queries
from endpoints import served


def copy_server(server: Path, project: Path, name: str) -> Path:
    """``server`` copied into ``project/servers/name`` (its database keeps the server's file name
    scheme: ``runtime/NAME_UNDERSCORED.db``)."""
    target = project / "servers" / name
    shutil.copytree(server, target, symlinks=True, ignore=shutil.ignore_patterns("cache", "dist"))
    old = next((target / "runtime").glob("*.db"))
    old.rename(target / "runtime" / f"{name.replace('-', '_')}.db")
    return target


def distinct_paths(database: Path) -> None:
    """Give each document of a grown copy a path of its own (the copies repeat their originals'
    paths), and its counts to ``build_info``, as a real server of that size would have."""
    from docserve.duck import connect

    con = connect(database, extensions=())
    con.execute("UPDATE chunks SET path = path || '~' || substr(md5(document_id), 1, 6)")
    for key, sql in (
        ("chunk_count", "SELECT count(*) FROM chunks"),
        ("document_count", "SELECT count(DISTINCT document_id) FROM chunks"),
    ):
        value = con.execute(sql).fetchone()[0]
        con.execute("UPDATE build_info SET value = ? WHERE key = ?", [str(value), key])
    con.close()


def routes(client, name: str) -> dict[str, str]:
    """Each route of one server, with realistic arguments (opening the server first: printed)."""
    from docbuild.ui.app import document_url

    ui = client.app.state.ui
    start = time.perf_counter()
    engine = ui.project.server(name).engine()
    print(f"  open the server (database, model)    {(time.perf_counter() - start) * 1000:7.1f} ms")
    document = max(engine.store.catalog.documents, key=lambda d: d.chunks)
    snapshots = [s["snapshot_id"] for s in _snapshots(ui, name)]
    history = f"/servers/{name}/history"
    if len(snapshots) > 1:
        history += f"?old={snapshots[0]}&new={snapshots[-1]}"
    return {
        "index": "/",
        "report": f"/servers/{name}",
        "history (and a comparison)": history,
        "search (three modes + tool text)": f"/servers/{name}/search?q=QUERY",
        f"document ({document.chunks} chunks)": document_url(name, document.path),
        "quality": f"/servers/{name}/quality",
        "build": f"/servers/{name}/build",
    }


def _snapshots(ui, name: str) -> list[dict]:
    from docbuild.stages.snapshot import lake_location, list_snapshots

    try:
        return list_snapshots(lake_location(ui.project.server(name).config))
    except Exception:
        return []


def measure(client, name: str, runs: int) -> None:
    asked = iter(queries(10 * runs + 10, seed=11))
    chunks = client.app.state.ui.project.server(name).info().chunk_count
    print(f"server {name}: {chunks:,} chunks")
    for label, url in routes(client, name).items():
        times = []
        for _ in range(runs + 1):
            target = url.replace("QUERY", next(asked).replace(" ", "+").replace("#", ""))
            start = time.perf_counter()
            response = client.get(target)
            times.append((time.perf_counter() - start) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{target}: HTTP {response.status_code}")
        print(
            f"  {label:<36} first {times[0]:7.1f} ms, then median "
            f"{statistics.median(times[1:]):7.1f} ms (n={runs})"
        )


@contextlib.contextmanager
def paused_build(http, project: Path) -> Iterator[None]:
    """A build of a one-page server started from the page, paused once it holds its lock (so it
    runs for as long as the block does), then let go and followed to its end."""
    from docbuild.services.scaffold import scaffold
    from docbuild.ui.builds import lock_holder

    source = project / "one-page"
    source.mkdir(exist_ok=True)
    (source / "page.md").write_text("# One page\n\nA page to build while views watch.\n")
    scaffold("watched", str(source), "md", root=project)
    form = http.get("/servers/watched/build").text
    token = re.search(r'name="token" value="([^"]+)"', form).group(1)
    http.post("/servers/watched/build", data={"token": token})
    while (pid := lock_holder(project / "servers" / "watched" / "build")) is None:
        time.sleep(0.05)
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
        with http.stream("GET", "/servers/watched/build/events") as events:
            for chunk in events.iter_text():
                if "event: end" in chunk:
                    break


def measure_views(project: Path, name: str, views: int, runs: int) -> None:
    """The search page over HTTP with no build view open, then with ``views`` open."""
    import httpx
    from docbuild.ui.app import create_app

    asked = iter(queries(4 * runs + 4, seed=13))
    print(f"server {name}: the search page over HTTP while a build runs")
    with (
        served(create_app(project)) as url,
        httpx.Client(base_url=url, timeout=60, follow_redirects=True) as http,
        paused_build(http, project),
    ):
        http.get(f"/servers/{name}/search", params={"q": next(asked)})  # open the server
        for open_views in (0, views):
            with contextlib.ExitStack() as stack:
                for _ in range(open_views):
                    stack.enter_context(http.stream("GET", "/servers/watched/build/events"))
                time.sleep(1.5)
                times = []
                for _ in range(runs):
                    start = time.perf_counter()
                    http.get(f"/servers/{name}/search", params={"q": next(asked)})
                    times.append((time.perf_counter() - start) * 1000)
                print(
                    f"  {open_views:2d} build views open: search median "
                    f"{statistics.median(times):7.1f} ms, max {max(times):7.1f} ms (n={runs}); "
                    f"{threading.active_count()} threads"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", type=Path, help="a built server folder (default: build Mojo)")
    parser.add_argument(
        "--scale", type=int, default=100_000, help="chunks of the grown copy (0: none)"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--views", type=int, default=12, help="build views open (0: skip)")
    args = parser.parse_args()
    from docbuild.ui.app import create_app
    from starlette.testclient import TestClient

    tmp = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    try:
        server = args.server.resolve() if args.server else build_mojo(tmp / "built")
        project = tmp / "project"
        (project / "servers").mkdir(parents=True)
        real = copy_server(server, project, "real")
        if args.scale:
            grown = copy_server(server, project, "grown")
            database = next((grown / "runtime").glob("*.db"))
            grow(next((real / "runtime").glob("*.db")), database, args.scale, False)
            distinct_paths(database)
            shutil.rmtree(grown / "build" / "lake", ignore_errors=True)
        client = TestClient(create_app(project), base_url="http://127.0.0.1:8780")
        measure(client, "real", args.runs)
        if args.scale:
            measure(client, "grown", args.runs)
        if args.views:
            measure_views(project, "real", args.views, 4 * args.runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
