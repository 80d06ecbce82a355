"""How fast a documentation site is synced, and what a resync with nothing changed costs.

Serves the Python 3.11 HTML docs of the test corpora (``CORPORA``, see docs/testing.md) on 127.0.0.1 (``tests/site_server``,
answering each page after ``--latency`` seconds, as a real site would) and runs
``docbuild sync`` as a user does, in a throw-away project:

1. a first sync, unthrottled (``requests_per_second: 1000``, 4 in flight): pages per second;
2. a resync with nothing changed: seconds, requests and page bodies downloaded (should be 0);
3. the same two at the default politeness (4 requests a second), unless ``--skip-polite``.

    .venv/bin/python bench/bench_sync.py [--latency 0.05] [--skip-polite]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from site_server import Site, serving  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpora" / "python-docs-3.11" / "html"
NAME = "pydocs"


def sync(project: Path) -> float:
    """Seconds one ``docbuild sync`` takes; exits on failure."""
    began = time.monotonic()
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "docbuild"), "sync", NAME],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
    )
    seconds = time.monotonic() - began
    if done.returncode != 0:
        sys.exit(f"sync failed: {done.stderr}")
    print("   ", done.stdout.strip().splitlines()[1].strip())
    return seconds


def run(site: Site, origin: str, rate: float, label: str) -> None:
    """A first sync and a resync at ``rate`` requests a second; prints their figures."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "servers").mkdir()
        subprocess.run(
            [
                str(REPO / ".venv" / "bin" / "docbuild"),
                "scaffold",
                NAME,
                "--url",
                f"{origin}/3.11/index.html",
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "DOCMCP_PROJECT_ROOT": str(project)},
        )
        config = project / "servers" / NAME / "config" / "processing_config.yaml"
        text = config.read_text().replace(
            "requests_per_second: 4 ", f"requests_per_second: {rate:g} "
        )
        config.write_text(text)
        site.hits.clear()
        first = sync(project)
        pages = len(list((project / "source-documentation" / NAME).rglob("*.html")))
        requests = len(site.hits)
        print(
            f"{label}: first sync {first:.1f} s for {pages} pages ({requests} requests): "
            f"{pages / first:.1f} pages/s"
        )
        site.hits.clear()
        again = sync(project)
        bodies = [h for h in site.page_hits(200) if h.path.endswith((".html", "/"))]
        print(
            f"{label}: resync with nothing changed {again:.1f} s ({len(site.hits)} requests, "
            f"{len(bodies)} page bodies downloaded)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per page answer")
    parser.add_argument("--skip-polite", action="store_true", help="skip the 4 requests/s run")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"{CORPUS} not found: the corpora are provided beside the repository")
    site = Site(mount="/3.11/", folder=CORPUS, delay=args.latency)
    print(
        f"site: {CORPUS.name} ({len(list(CORPUS.rglob('*.html')))} HTML files), "
        f"{args.latency * 1000:.0f} ms per page answer"
    )
    with serving(site) as origin:
        run(site, origin, 1000, "unthrottled (4 in flight)")
        if not args.skip_polite:
            run(site, origin, 4, "default politeness (4 requests/s)")


if __name__ == "__main__":
    main()
