"""Soak a hub over streamable HTTP: many clients for a long time, one library rebuilt mid-run.

Run: .venv/bin/python bench/bench_soak.py [--clients 8] [--minutes 60] [--source NAME=FOLDER ...]

It copies each source folder into a throw-away project (default: the Mojo manual and this
repository's docs/, or two small made-up libraries when the test corpora are absent), scaffolds and
builds a server over each with the real model, and serves them all from one hub over HTTP. Then
--clients clients call search (distinct queries), get_document and outline without pause for
--minutes; halfway through, one page is added to the first library's folder and it is rebuilt
while the hub serves. Each client opens a new MCP session every --session-calls calls.

Printed: per minute the calls, errors, p50 and p99 latency and the hub's resident memory; at the
end the totals, whether the rebuilt library's new page was found, and RSS at the end against
minute 5 (goal: 0 errors, within +5%). --json writes the same as a file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import queries

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"
DEFAULT_SOURCES = {"mojo": CORPORA / "mojo-manual-2025-11" / "docs", "docs": REPO / "docs"}
NEW_PAGE = (
    "# Soak marker\n\n## Zebra crossing semaphore\n\n"
    "The quixotic zebra semaphore page was added while the hub was serving.\n"
)
MADE_UP = {  # two small libraries when the corpora are absent
    "kitchen": {
        f"dish{n}.md": f"# Dish {n}\n\n## Method\n\nSimmer the {w} with garlic for {n} minutes.\n"
        for n, w in enumerate(["lentils", "beans", "onions", "leeks", "carrots"])
    },
    "garden": {
        f"bed{n}.md": f"# Bed {n}\n\n## Care\n\nWater the {w} twice a week and mulch in May.\n"
        for n, w in enumerate(["tomatoes", "peas", "kale", "chard", "garlic"])
    },
}


@dataclass
class Minute:
    """What happened in one minute of the soak."""

    minute: int
    calls: int = 0
    errors: int = 0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    rss_mb: float = 0.0


@dataclass
class Soak:
    """The whole run."""

    clients: int
    minutes: float
    libraries: list[str]
    per_minute: list[Minute] = field(default_factory=list)
    error_samples: list[str] = field(default_factory=list)
    rebuilt: str = ""
    rebuild_seconds: float = 0.0
    new_page_found_after_s: float | None = None

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.per_minute)

    @property
    def errors(self) -> int:
        return sum(m.errors for m in self.per_minute)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(x.split()[1] for x in status.splitlines() if x.startswith("VmRSS"))) / 1024


def build_project(root: Path, sources: dict[str, Path]) -> None:
    """Copy each source into ``root`` and build a server over it, as a user would."""
    from docbuild.config import load_processing_config
    from docbuild.pipeline import Build
    from docbuild.services.scaffold import scaffold

    (root / "servers").mkdir(parents=True)
    for name, folder in sources.items():
        copy = root / "sources" / name
        shutil.copytree(folder, copy)
        scaffold(name, str(copy), "auto", root=root)
        started = time.perf_counter()
        Build(load_processing_config(name, root)).run()
        print(f"built {name} in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def rebuild(root: Path, name: str) -> float:
    """Add a page to library ``name``'s folder and rebuild it (a child process, as the tools do)."""
    (root / "sources" / name / "soak-marker.md").write_text(NEW_PAGE)
    started = time.perf_counter()
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    subprocess.run(
        [str(Path(sys.executable).parent / "docbuild"), "build", name],
        check=True,
        env=env,
        capture_output=True,
    )
    return time.perf_counter() - started


async def client_loop(
    url: str, stop: float, log: list[tuple[float, float, str | None]], seed: int, per_session: int
) -> None:
    """Call the hub without pause until ``stop`` (a ``time.monotonic`` deadline)."""
    from fastmcp import Client

    rng = random.Random(seed)
    words = queries(5000, seed=seed)
    pages: list[tuple[str, str]] = []
    n = 0
    while time.monotonic() < stop:
        try:
            async with Client(url, timeout=60) as client:
                for _ in range(per_session):
                    if time.monotonic() >= stop:
                        return
                    n += 1
                    roll = rng.random()
                    if roll < 0.8 or not pages:
                        tool, args = "search", {"query": words[n % len(words)]}
                    elif roll < 0.95:
                        library, path = rng.choice(pages)
                        tool, args = "get_document", {"library": library, "path": path}
                    else:
                        tool, args = "outline", {"library": rng.choice(pages)[0]}
                    started = time.monotonic()
                    error = None
                    try:
                        result = await client.call_tool(tool, args, raise_on_error=False)
                        if result.is_error:
                            error = f"{tool}: {result.content[0].text[:200]}"
                        elif tool == "search":
                            pages.extend(
                                (r["library"], r["path"])
                                for r in result.structured_content["results"][:1]
                            )
                            del pages[:-50]
                    except Exception as exc:  # a transport failure counts as an error
                        error = f"{tool}: {type(exc).__name__}: {exc}"
                    log.append((started, time.monotonic() - started, error))
        except Exception as exc:
            log.append((time.monotonic(), 0.0, f"session: {type(exc).__name__}: {exc}"))
            await asyncio.sleep(0.5)


async def find_new_page(url: str, library: str, since: float, stop: float) -> float | None:
    """Seconds after ``since`` until the rebuilt library answers with its new page."""
    from fastmcp import Client

    async with Client(url, timeout=60) as client:
        while time.monotonic() < stop:
            found = await client.call_tool(
                "search", {"query": "quixotic zebra semaphore", "library": library}
            )
            if any(r["path"] == "soak-marker.md" for r in found.structured_content["results"]):
                return time.monotonic() - since
            await asyncio.sleep(1)
    return None


def summarise(log: list[tuple[float, float, str | None]], start: float, soak: Soak) -> None:
    """Fill ``soak.per_minute`` (latency and errors) from the call log."""
    by_minute: dict[int, list[tuple[float, str | None]]] = {}
    for at, seconds, error in log:
        by_minute.setdefault(int((at - start) // 60), []).append((seconds, error))
    for minute in soak.per_minute:
        calls = by_minute.get(minute.minute - 1, [])
        times = sorted(s * 1000 for s, e in calls if e is None and s > 0)
        minute.calls = len(calls)
        minute.errors = sum(1 for _, e in calls if e)
        if times:
            minute.p50_ms = round(statistics.median(times), 1)
            minute.p99_ms = round(times[min(len(times) - 1, int(len(times) * 0.99))], 1)
    soak.error_samples = sorted({e for _, _, e in log if e})[:10]


async def soak_hub(root: Path, names: list[str], args: argparse.Namespace, soak: Soak) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    command = [str(Path(sys.executable).parent / "docbuild"), "hub", *names, "--http"]
    log_file = (root / "hub.log").open("w")
    hub = subprocess.Popen(
        [*command, "--port", str(port)], stdout=log_file, stderr=subprocess.STDOUT, env=env
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if hub.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the hub did not start: {(root / 'hub.log').read_text()}")
            await asyncio.sleep(0.2)
        start = time.monotonic()
        stop = start + args.minutes * 60
        log: list[tuple[float, float, str | None]] = []
        clients = [
            asyncio.create_task(client_loop(url, stop, log, seed, args.session_calls))
            for seed in range(args.clients)
        ]
        rebuilt_at = start + args.minutes * 30
        minute = 0
        while time.monotonic() < stop:
            await asyncio.sleep(min(1.0, max(0.0, stop - time.monotonic())))
            now = time.monotonic()
            if now - start >= (minute + 1) * 60 or now >= stop:
                minute += 1
                soak.per_minute.append(Minute(minute, rss_mb=round(rss_mb(hub.pid), 1)))
                print(
                    f"minute {minute}: RSS {soak.per_minute[-1].rss_mb} MB, {len(log)} calls",
                    file=sys.stderr,
                )
            if not soak.rebuilt and now >= rebuilt_at:
                soak.rebuilt = names[0]
                soak.rebuild_seconds = await asyncio.to_thread(rebuild, root, names[0])
                finder = asyncio.create_task(find_new_page(url, names[0], time.monotonic(), stop))
        await asyncio.gather(*clients)
        if soak.rebuilt:
            soak.new_page_found_after_s = await finder
        summarise(log, start, soak)
    finally:
        hub.terminate()
        hub.wait(30)
        log_file.close()


def report(soak: Soak) -> str:
    lines = [
        f"hub of {', '.join(soak.libraries)} over HTTP: {soak.clients} clients, "
        f"{soak.minutes:g} min",
        "minute  calls  errors  p50 ms  p99 ms  RSS MB",
    ]
    lines += [
        f"{m.minute:>6} {m.calls:>6} {m.errors:>7} {m.p50_ms:>7} {m.p99_ms:>7} {m.rss_mb:>7}"
        for m in soak.per_minute
    ]
    rss = [m.rss_mb for m in soak.per_minute]
    base = rss[min(4, len(rss) - 1)]  # minute 5 (or the last, in a short run)
    lines.append(
        f"total: {soak.calls} calls, {soak.errors} errors; RSS {rss[0]} MB at minute 1, {base} MB "
        f"at minute {min(5, len(rss))}, {rss[-1]} MB at the end ({(rss[-1] / base - 1) * 100:+.1f}%)"
    )
    found = soak.new_page_found_after_s
    lines.append(
        f"rebuilt {soak.rebuilt} mid-run in {soak.rebuild_seconds:.1f} s; its new page "
        + (f"answered {found:.1f} s after" if found is not None else "was NOT found")
    )
    lines += [f"error: {e}" for e in soak.error_samples]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--session-calls", type=int, default=200)
    parser.add_argument("--source", action="append", default=[], metavar="NAME=FOLDER")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.source:
            sources = {k: Path(v) for k, v in (s.split("=", 1) for s in args.source)}
        elif all(p.is_dir() for p in DEFAULT_SOURCES.values()):
            sources = DEFAULT_SOURCES
        else:
            sources = {}
            for name, pages in MADE_UP.items():
                folder = root / "made-up" / name
                folder.mkdir(parents=True)
                for file, text in pages.items():
                    (folder / file).write_text(text)
                sources[name] = folder
        build_project(root, sources)
        soak = Soak(args.clients, args.minutes, list(sources))
        asyncio.run(soak_hub(root, list(sources), args, soak))
    print(report(soak))
    if args.json:
        args.json.write_text(
            json.dumps({**asdict(soak), "calls": soak.calls, "errors": soak.errors}, indent=1)
        )


if __name__ == "__main__":
    main()
